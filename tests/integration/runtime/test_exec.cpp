// exec: a second process in a running container, as containerd and podman
// start one (`exec --process F --detach --pid-file P ID`).
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <thread>

#include "harness.h"

using namespace hit;
namespace fs = std::filesystem;

static std::string ns_link(int pid, const std::string& ns) {
  return fs::read_symlink("/proc/" + std::to_string(pid) + "/ns/" + ns).string();
}

TEST_CASE("exec runs in the container and returns its exit status", "[exec]") {
  Container c("exec");
  c.cfg["hostname"] = "exec-host";
  c.start_process({"sleep", "60"});
  auto r = c.rt({"exec", c.id, "sh", "-c", "hostname; cat /proc/1/comm; exit 5"});
  INFO(r.err);
  CHECK(r.code == 5);
  CHECK(r.out == "exec-host\nsleep\n");
  auto in = c.rt({"exec", c.id, "cat"}, SpawnOpts{.stdin_data = "exec-stdin\n"});
  INFO(in.err);
  CHECK(in.code == 0);
  CHECK(in.out == "exec-stdin\n");
  CHECK(c.status() == "running");
}

TEST_CASE("exec --process --detach --pid-file", "[exec]") {
  Container c("exec-detach");
  int init = c.start_process({"sleep", "60"});
  json proc = c.cfg["process"];
  proc["args"] = {"sleep", "61"};
  proc["env"] = {"PATH=/bin", "EXEC_VAR=1"};
  proc["cwd"] = "/tmp";
  proc["user"] = {{"uid", 1000}, {"gid", 1000}};
  std::string pf = c.bundle + "/exec.pid", pj = c.bundle + "/process.json";
  write_file(pj, proc.dump());
  auto r = c.rt({"exec", "--process", pj, "--detach", "--pid-file", pf, c.id});
  INFO(r.err);
  REQUIRE(r.ok());
  auto text = read_file(pf);
  CHECK(text.find('\n') == std::string::npos);
  int pid = std::stoi(text);
  REQUIRE(pid > 0);
  CHECK(pid != init);
  for (auto ns : {"pid", "mnt", "uts", "ipc", "net"}) {
    INFO(ns);
    CHECK(ns_link(pid, ns) == ns_link(init, ns));
  }
  CHECK(status_field(pid, "Uid").rfind("1000\t", 0) == 0);
  CHECK(contains(read_file("/proc/" + std::to_string(pid) + "/environ"), std::string("EXEC_VAR=1\0", 11)));
  CHECK(fs::read_symlink("/proc/" + std::to_string(pid) + "/cwd").filename() == "tmp");
  // The exec'd process is in the container's cgroup, so kill --all and
  // delete --force reach it.
  CHECK(contains(read_file("/proc/" + std::to_string(pid) + "/cgroup"), "/husk-test/" + c.id));
  auto pids = cgroup_pids(c.id);
  CHECK(std::find(pids.begin(), pids.end(), pid) != pids.end());
  REQUIRE(c.del(true).ok());
  CHECK(leftovers(c).empty());
}

TEST_CASE("exec into a stopped or missing container fails", "[exec]") {
  Container c("exec-stopped");
  c.args({"true"});
  REQUIRE(c.create().ok());
  REQUIRE(c.start().ok());
  REQUIRE(c.wait_status("stopped"));
  auto r = c.rt({"exec", c.id, "true"});
  CHECK(r.code != 0);
  CHECK_FALSE(r.err.empty());
  auto m = c.rt({"exec", c.id + "-missing", "true"});
  CHECK(m.code != 0);
  CHECK(contains(m.err, "does not exist"));
}

TEST_CASE("CVE-2024-21626 via exec --cwd", "[exec][cve][security]") {
  Container c("exec-cve");
  c.start_process({"sleep", "60"});
  TempDir marker("husk-it-cve-");
  write_file(marker.path + "/marker", "host\n");
  for (int n = 3; n <= 10; ++n) {
    INFO("fd " << n);
    auto r = c.rt({"exec", "--cwd", "/proc/self/fd/" + std::to_string(n), c.id, "sh", "-c",
                   "cat ../../../../../../../../.." + marker.path + "/marker && echo ESCAPED; true"});
    INFO(r.out << r.err);
    CHECK_FALSE(contains(r.out, "ESCAPED"));
  }
}
