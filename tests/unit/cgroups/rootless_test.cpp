// Rootless cgroups, pure: where a rootless container's cgroup goes
// (choose_rootless on a described host), which limits a request makes and
// which delegated controllers they need.
#include <catch2/catch.hpp>
#include <map>

#include "cgroups/devices.h"
#include "cgroups/rootless.h"

using husk::Error;
namespace cg = husk::cgroups;

namespace {

// A host as systemd's Delegate=yes leaves it: `delegated` and everything
// below it writable, the rest not; `dirs` exist.
cg::RootlessHost host(const std::string& own, const std::string& delegated, std::vector<std::string> dirs,
                      cg::Mode mode = cg::Mode::unified) {
  cg::RootlessHost h;
  h.mode = mode;
  h.own = own;
  h.uid = 1001;
  h.access = [delegated, dirs](const std::string& p) {
    bool there = p == "/" || std::find(dirs.begin(), dirs.end(), p) != dirs.end();
    if (!there) return cg::Access::missing;
    bool mine = !delegated.empty() && (p == delegated || p.rfind(delegated + "/", 0) == 0);
    return mine ? cg::Access::writable : cg::Access::not_writable;
  };
  return h;
}

const std::vector<std::string> kUserTree = {"/user.slice", "/user.slice/user-1001.slice",
                                            "/user.slice/user-1001.slice/user@1001.service",
                                            "/user.slice/user-1001.slice/user@1001.service/app.slice",
                                            "/user.slice/user-1001.slice/user@1001.service/app.slice/term.scope",
                                            "/user.slice/user-1001.slice/session-3.scope"};
const std::string kService = "/user.slice/user-1001.slice/user@1001.service";
const std::string kScope = kService + "/app.slice/term.scope";

}  // namespace

TEST_CASE("rootless: no cgroupsPath goes next to the caller's own cgroup, in its parent") {
  auto h = host(kScope, kService, kUserTree);
  auto c = cg::choose_rootless(h, std::nullopt, "c1");
  CHECK(c.path == kService + "/app.slice/c1");
  CHECK(c.none_reason.empty());
  // The test VM's shape: the shell in <delegated>/shell.
  auto vm = host("/deleg/shell", "/deleg", {"/deleg", "/deleg/shell"});
  CHECK(cg::choose_rootless(vm, std::nullopt, "c1").path == "/deleg/c1");
  CHECK(cg::choose_rootless(vm, std::string(""), "c1").path == "/deleg/c1");
}

TEST_CASE("rootless: a relative cgroupsPath goes under the parent of the caller's cgroup, normalised") {
  auto h = host("/deleg/shell", "/deleg", {"/deleg", "/deleg/shell"});
  CHECK(cg::choose_rootless(h, std::string("pods/a"), "c1").path == "/deleg/pods/a");
  CHECK(cg::choose_rootless(h, std::string("pods//a/./b"), "c1").path == "/deleg/pods/a/b");
  CHECK_THROWS_WITH(cg::choose_rootless(h, std::string("../escape"), "c1"), Catch::Contains("linux.cgroupsPath"));
}

TEST_CASE("rootless: an absolute cgroupsPath is used when the caller can write where it is made") {
  auto h = host("/deleg/shell", "/deleg", {"/deleg", "/deleg/shell", "/deleg/x"});
  CHECK(cg::choose_rootless(h, std::string("/deleg/x/y/c1"), "c1").path == "/deleg/x/y/c1");
  // The delegated cgroup itself, taken over: the caller may write it.
  CHECK(cg::choose_rootless(h, std::string("/deleg/x"), "c1").path == "/deleg/x");
  CHECK_THROWS_WITH(cg::choose_rootless(h, std::string("/husk/c1"), "c1"),
                    Catch::Contains("linux.cgroupsPath: cgroup / is not writable by uid 1001 (not delegated to it)"));
}

TEST_CASE("rootless: a login session's parent is not delegated: no cgroup, or an error for a given path") {
  auto h = host(kService.substr(0, kService.rfind('/')) + "/session-3.scope", kService, kUserTree);
  auto c = cg::choose_rootless(h, std::nullopt, "c1");
  CHECK(c.path.empty());
  CHECK(c.none_reason == "cgroup /user.slice/user-1001.slice is not writable by uid 1001 (not delegated to it)");
  CHECK_THROWS_WITH(cg::choose_rootless(h, std::string("c1"), "c1"),
                    Catch::Contains("linux.cgroupsPath: cgroup /user.slice/user-1001.slice is not writable"));
}

TEST_CASE("rootless: moving the init needs the common ancestor's cgroup.procs") {
  // The session scope's processes cannot move into the delegated service:
  // their common ancestor is user-1001.slice, which is root's.
  auto h = host("/user.slice/user-1001.slice/session-3.scope", kService, kUserTree);
  CHECK_THROWS_WITH(cg::choose_rootless(h, kService + "/c1", "c1"),
                    Catch::Contains("needs write access to cgroup.procs of their common ancestor "
                                    "/user.slice/user-1001.slice, which uid 1001 lacks"));
}

TEST_CASE("rootless: the caller's own cgroup, an ancestor of it or a cgroup below it is refused") {
  auto h = host("/deleg/shell", "/deleg", {"/deleg", "/deleg/shell"});
  // A container id equal to the caller's cgroup name would land on it.
  CHECK(cg::choose_rootless(h, std::nullopt, "shell").none_reason ==
        "cgroup /deleg/shell holds husk's own process (its cgroup is /deleg/shell)");
  CHECK_THROWS_WITH(cg::choose_rootless(h, std::string("/deleg"), "c1"), Catch::Contains("holds husk's own process"));
  CHECK_THROWS_WITH(cg::choose_rootless(h, std::string("/deleg/shell/c1"), "c1"),
                    Catch::Contains("is below husk's own cgroup /deleg/shell, which holds processes"));
  // In the root cgroup there is no parent to use.
  CHECK(cg::choose_rootless(host("/", "", {}), std::nullopt, "c1").none_reason ==
        "husk runs in the root cgroup: there is no parent to put the container in");
}

TEST_CASE("rootless: a cgroup v1 or hybrid host gives no cgroup; a given cgroupsPath is an error") {
  for (auto mode : {cg::Mode::hybrid, cg::Mode::legacy}) {
    auto h = host("/deleg/shell", "/deleg", {"/deleg", "/deleg/shell"}, mode);
    auto c = cg::choose_rootless(h, std::nullopt, "c1");
    CHECK(c.path.empty());
    CHECK_THAT(c.none_reason, Catch::Contains("the host has cgroup v1 (") &&
                                  Catch::Contains("rootless husk uses only a cgroup v2 subtree delegated to the user"));
    CHECK_THROWS_WITH(cg::choose_rootless(h, std::string("/deleg/c1"), "c1"),
                      Catch::StartsWith("linux.cgroupsPath: the host has cgroup v1"));
  }
  CHECK(cg::choose_rootless(host("", "", {}), std::nullopt, "c1").none_reason ==
        "husk's own cgroup v2 path is unknown (no \"0::\" line in /proc/self/cgroup)");
}

TEST_CASE("limit_fields: every requested limit, none for unset values, devices or memory.kernel") {
  husk::spec::Resources r;
  CHECK(cg::limit_fields(r).empty());
  // What engines send when they want nothing: zero values, devices, an empty object.
  r.memory = husk::spec::Memory{};
  r.memory->limit = 0;
  r.memory->kernel = 1 << 20;
  r.cpu = husk::spec::Cpu{};
  r.cpu->shares = 0;
  r.block_io = husk::spec::BlockIo{};
  r.network = husk::spec::Network{};
  r.devices = cg::effective_device_rules({}, {});
  CHECK(cg::limit_fields(r).empty());
  r.pids_limit = 0;  // a real limit (no new tasks)
  r.memory->swappiness = 10;
  r.cpu->cpus = "0";
  r.unified["io.max"] = "8:0 rbps=1";
  CHECK(cg::limit_fields(r) == std::vector<std::string>{"linux.resources.memory.swappiness",
                                                         "linux.resources.cpu.cpus", "linux.resources.pids.limit",
                                                         "linux.resources.unified[\"io.max\"]"});
}

TEST_CASE("v2_controllers: the controller each requested limit writes to, after its field") {
  husk::spec::Resources r;
  r.memory = husk::spec::Memory{};
  r.memory->limit = 64 << 20;
  r.pids_limit = 20;
  r.cpu = husk::spec::Cpu{};
  r.cpu->shares = 0;  // unset: nothing
  r.cpu->mems = "0";
  r.unified["memory.high"] = "max";
  using P = std::pair<std::string, std::string>;
  CHECK(cg::v2_controllers(r) == std::vector<P>{{"linux.resources.cpu", "cpuset"},
                                                {"linux.resources.memory", "memory"},
                                                {"linux.resources.pids.limit", "pids"},
                                                {"linux.resources.unified[\"memory.high\"]", "memory"}});
}

TEST_CASE("check_delegated: a limit whose controller is not delegated names the field") {
  husk::spec::Resources r;
  r.memory = husk::spec::Memory{};
  r.memory->limit = 64 << 20;
  r.pids_limit = 20;
  CHECK_NOTHROW(cg::check_delegated(r, {"memory", "pids"}, "/deleg/c1"));
  CHECK_THROWS_WITH(cg::check_delegated(r, {"memory"}, "/deleg/c1"),
                    Catch::StartsWith("linux.resources.pids.limit: needs the pids controller, which cgroup /deleg/c1 "
                                      "does not have (its cgroup.controllers: memory)"));
  CHECK_THROWS_WITH(cg::check_delegated(r, {}, "/deleg/c1"),
                    Catch::StartsWith("linux.resources.memory: needs the memory controller") &&
                        Catch::Contains("(its cgroup.controllers: none)"));
  CHECK_NOTHROW(cg::check_delegated({}, {}, "/deleg/c1"));
}
