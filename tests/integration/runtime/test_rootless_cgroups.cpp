// Rootless husk (--rootless=true, as root) on a host where no cgroup can be
// delegated (v1/hybrid): the container runs without a cgroup, said once;
// limits and the commands that need a cgroup fail naming why. The delegated
// cgroup v2 case runs in the VM (tests/rootless/test-rootless-v2).
#include <catch2/catch.hpp>

#include "harness.h"
#include "skip.h"

using namespace hit;

namespace {

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// On v2 root as --rootless=true gets a cgroup next to its own, or none in the root cgroup.
const char* const kV2Host = "a cgroup v2 host (tests/rootless/test-rootless-v2 runs the v2 cases as a user)";

}  // namespace

TEST_CASE("rootless without a delegated cgroup: no cgroup, said once; ps lists its pid namespace, the rest fail saying why",
          "[rootless][cgroups]") {
  if (cgroup2_unified()) HUSK_SKIP(kV2Host);
  Container c("rlnone");
  c.cfg["linux"].erase("cgroupsPath");  // as rootless podman sends it
  c.cfg["linux"]["resources"] = json::object();
  c.args({"sleep", "100"});
  // Said once, into --log: without it (rootless podman passes none to most
  // runtimes) husk's stderr is the container's, and stays quiet.
  TempDir logdir("husk-it-rlnone-");
  const std::string log = logdir.path + "/log.json";
  auto r = c.run({"-d", "--rootless=true", "--log", log});
  INFO("run: " << r.err);
  REQUIRE(r.ok());
  const std::string logged = read_file(log);
  INFO("log: " << logged);
  CHECK(count(logged, "has no cgroup") == 1);
  CHECK(contains(logged, "container " + c.id + " has no cgroup: the host has cgroup v1"));
  CHECK_FALSE(contains(r.err, "has no cgroup"));
  // From outside: the init stayed in the caller's cgroups.
  CHECK(read_file("/proc/" + std::to_string(c.pid()) + "/cgroup") == read_file("/proc/self/cgroup"));
  CHECK(cgroup_pids(c.id).empty());

  // ps lists the init's pid namespace instead.
  auto ps = c.rt({"ps", "--format", "json", c.id});
  INFO("ps: " << ps.err);
  CHECK(ps.ok());
  CHECK(ps.out == "[" + std::to_string(c.pid()) + "]\n");
  const std::string why = "container " + c.id + " has no cgroup: the host has cgroup v1";
  for (const auto& [cmd, prefix] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"pause", c.id}, "pause: "},
           {{"events", "--stats", c.id}, "events --stats: "},
           {{"events", "--interval", "100ms", c.id}, "events: "},
           {{"kill", "--all", c.id, "TERM"}, "kill --all: "},
           {{"update", "--pids-limit", "10", c.id}, "linux.resources.pids.limit: cannot be applied: "}}) {
    auto res = c.rt(cmd);
    INFO(cmd[0] << ": " << res.err);
    CHECK(res.code != 0);
    CHECK(contains(res.err, prefix + why));
  }
  CHECK(c.status() == "running");  // kill --all did not signal the init either
  CHECK(c.rt({"kill", c.id, "KILL"}).ok());
  CHECK(c.wait_status("stopped"));
  CHECK(c.del().ok());
  CHECK(leftovers(c).empty());
}

TEST_CASE("rootless without a delegated cgroup: a limit or a cgroupsPath fails create naming the field",
          "[rootless][cgroups]") {
  if (cgroup2_unified()) HUSK_SKIP(kV2Host);
  Container c("rllimit");
  c.cfg["linux"].erase("cgroupsPath");
  c.cfg["linux"]["resources"] = {{"pids", {{"limit", 10}}}};
  auto r = c.create({"--rootless=true"});
  CHECK(r.code != 0);
  CHECK(contains(r.err, "linux.resources.pids.limit: cannot be applied: container " + c.id + " has no cgroup"));
  CHECK(leftovers(c).empty());

  // An engine's "no limit" (zero values) is no limit.
  c.cfg["linux"]["resources"] = {{"memory", {{"limit", 0}}}, {"cpu", {{"shares", 0}}}};
  c.args({"true"});
  r = c.run({"--rootless=true"});
  INFO("run: " << r.err);
  CHECK(r.ok());

  c.cfg["linux"]["resources"] = json::object();
  c.cfg["linux"]["cgroupsPath"] = "/husk-test/" + c.id;
  r = c.create({"--rootless=true"});
  CHECK(r.code != 0);
  CHECK(contains(r.err, "linux.cgroupsPath: the host has cgroup v1"));
  CHECK(leftovers(c).empty());
}
