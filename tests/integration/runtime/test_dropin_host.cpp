// runc behaviours that engines and real hosts rely on (issue 8): privileged
// device lists, the device allow-list, kill --all, delete of a created
// container, a state root shared with runc, cgroup placement and limits,
// tmpfs modes, flag errors. Checked from outside the container.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <regex>
#include <sstream>
#include <thread>

#include "harness.h"
#include "skip.h"

using namespace hit;

namespace {

json char_dev(const std::string& path, int major, int minor, int mode) {
  return {{"path", path}, {"type", "c"}, {"major", major}, {"minor", minor}, {"fileMode", mode},
          {"uid", 0},     {"gid", 0}};
}

void add_caps(Container& c, const std::vector<std::string>& caps) {
  for (const char* set : {"bounding", "effective", "permitted"})
    for (const auto& cap : caps) c.cfg["process"]["capabilities"][set].push_back(cap);
}

}  // namespace

TEST_CASE("a privileged device list that includes /dev/ptmx", "[dropin]") {
  // containerd's --privileged lists every host device, /dev/ptmx too.
  Container c("dev-ptmx");
  c.cfg["linux"]["devices"] = json::array({char_dev("/dev/null", 1, 3, 0666), char_dev("/dev/ptmx", 5, 2, 0666),
                                           char_dev("/dev/tty", 5, 0, 0666), char_dev("/dev/fuse", 10, 229, 0666)});
  // ... and allows every device, as containerd does for --privileged.
  c.cfg["linux"]["resources"]["devices"] = json::array({{{"allow", true}, {"access", "rwm"}}});
  auto r = c.run_ok({"sh", "-c", "readlink /dev/ptmx; stat -c '%F %t:%T' /dev/fuse"});
  CHECK(lines(r.out) == std::vector<std::string>{"pts/ptmx", "character special file a:e5"});
}

TEST_CASE("linux.devices fileMode with the file type bits of st_mode", "[dropin]") {
  // podman writes the whole st_mode: 020666 is S_IFCHR | 0666.
  Container c("dev-stmode");
  c.cfg["linux"]["devices"] = json::array({char_dev("/dev/fuse", 10, 229, 020666)});
  auto r = c.run_ok({"stat", "-c", "%F %t:%T %a", "/dev/fuse"});
  CHECK(trim(r.out) == "character special file a:e5 666");
}

TEST_CASE("the default device allow-list does not include the host console 5:1", "[dropin]") {
  Container c("dev-console");
  add_caps(c, {"CAP_MKNOD"});
  auto r = c.run_ok({"sh", "-c", "mknod /dev/hc c 5 1 && (exec 3<>/dev/hc && echo opened); echo done"});
  CHECK(contains(r.out, "done"));
  CHECK_FALSE(contains(r.out, "opened"));
}

TEST_CASE("the device cgroup of a running container has no rule for 5:1", "[dropin]") {
  if (cgroup2_unified()) HUSK_SKIP("devices.list is v1 only; the v2 program is covered by the mknod test");
  Container c("dev-console-list");
  c.start_process({"sleep", "100"});
  std::string list = read_file(cgroup_file(c.id, "devices", "devices.list"));
  INFO(list);
  CHECK_FALSE(contains("\n" + list, "\nc 5:1 "));
  CHECK(contains("\n" + list, "\nc 5:0 rwm"));
}

TEST_CASE("kill --all after the init exited signals what is left in the cgroup", "[dropin]") {
  // Without a pid namespace (hostPID, shared-pid pods) children outlive the init.
  Container c("kill-all-left");
  auto& ns = c.cfg["linux"]["namespaces"];
  for (size_t i = 0; i < ns.size(); ++i)
    if (ns[i]["type"] == "pid") ns.erase(i);
  c.args({"sh", "-c", "sleep 1000 >/dev/null 2>&1 </dev/null & echo $! > /dev/null; exec sleep 0.3"});
  REQUIRE(c.create().ok());
  REQUIRE(c.start().ok());
  REQUIRE(c.wait_status("stopped"));
  auto left = cgroup_pids(c.id);
  REQUIRE(left.size() == 1);
  auto r = c.rt({"kill", "--all", c.id, "KILL"});
  INFO(r.err);
  CHECK(r.code == 0);
  CHECK(gone_soon(left[0]));
  CHECK(cgroup_pids(c.id).empty());
}

TEST_CASE("kill --all of a stopped container whose cgroup is gone succeeds", "[dropin]") {
  Container c("kill-all-gone");
  c.args({"true"});
  REQUIRE(c.create().ok());
  REQUIRE(c.start().ok());
  REQUIRE(c.wait_status("stopped"));
  CHECK(c.rt({"kill", "--all", c.id, "KILL"}).code == 0);
  // Without --all a stopped container stays an error, as runc.
  auto r = c.rt({"kill", c.id, "KILL"});
  CHECK(r.code != 0);
  CHECK(contains(r.err, "container not running"));
}

TEST_CASE("delete without --force of a created container kills the init and deletes it", "[dropin]") {
  // containerd's shim does this when a step between create and start fails.
  Container c("delete-created");
  c.args({"sleep", "100"});
  REQUIRE(c.create().ok());
  int pid = c.pid();
  auto r = c.del(false);
  INFO(r.err);
  CHECK(r.code == 0);
  CHECK_FALSE(alive(pid));
  CHECK(leftovers(c).empty());
  // A running one still needs --force.
  Container d("delete-running");
  d.start_process({"sleep", "100"});
  CHECK(d.del(false).code != 0);
  CHECK(d.status() == "running");
}

TEST_CASE("the container joins the name=systemd hierarchy at its cgroup path", "[dropin]") {
  if (cgroup2_unified() || !std::filesystem::exists("/sys/fs/cgroup/systemd/cgroup.procs")) HUSK_SKIP("no name=systemd v1 hierarchy on this host");
  Container c("name-systemd");
  int pid = c.start_process({"sleep", "100"});
  std::string cg = read_file("/proc/" + std::to_string(pid) + "/cgroup");
  INFO(cg);
  CHECK(contains(cg, ":name=systemd:/husk-test/" + c.id + "\n"));
  REQUIRE(c.del(true).ok());
  CHECK(leftovers(c).empty());
}

TEST_CASE("a container left at / in name=systemd (made by an older husk) is still its own", "[dropin]") {
  // husk itself placed containers only in the controller hierarchies before.
  if (cgroup2_unified() || !std::filesystem::exists("/sys/fs/cgroup/systemd/cgroup.procs")) HUSK_SKIP("no name=systemd v1 hierarchy on this host");
  Container c("name-systemd-old");
  int pid = c.start_process({"sleep", "100"});
  write_file("/sys/fs/cgroup/systemd/cgroup.procs", std::to_string(pid));
  REQUIRE(contains(read_file("/proc/" + std::to_string(pid) + "/cgroup"), ":name=systemd:/\n"));
  CHECK(c.status() == "running");
  auto r = c.rt({"kill", c.id, "KILL"});
  INFO(r.err);
  CHECK(r.code == 0);
  REQUIRE(c.wait_status("stopped"));
  REQUIRE(c.del(false).ok());
  CHECK(leftovers(c).empty());
}

TEST_CASE("a tmpfs mount without mode= takes the mode of its mountpoint", "[dropin]") {
  Container c("tmpfs-mode");
  std::filesystem::create_directory(c.rootfs + "/tmode");
  ::chmod((c.rootfs + "/tmode").c_str(), 0710);
  c.cfg["mounts"].push_back({{"destination", "/tmode"}, {"type", "tmpfs"}, {"source", "tmpfs"},
                             {"options", {"nosuid", "size=64k"}}});
  c.args({"sh", "-c", "stat -c %a /tmode; grep -c ' /tmode .* tmpfs ' /proc/self/mountinfo"});
  auto r = c.run();
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  CHECK(lines(r.out) == std::vector<std::string>{"710", "1"});
}

TEST_CASE("a tmpfs mount with mode= keeps that mode over an existing mountpoint", "[dropin][husk-only]") {
  // runc 1.1 chmods the tmpfs to the mountpoint's mode even then, silently
  // dropping the option the config asked for.
  Container c("tmpfs-mode-opt");
  std::filesystem::create_directory(c.rootfs + "/tmode");
  ::chmod((c.rootfs + "/tmode").c_str(), 0710);
  c.cfg["mounts"].push_back({{"destination", "/tmode"}, {"type", "tmpfs"}, {"source", "tmpfs"},
                             {"options", {"mode=750"}}});
  auto r = c.run_ok({"stat", "-c", "%a", "/tmode"});
  CHECK(trim(r.out) == "750");
}

TEST_CASE("blockIO.weight goes to blkio.bfq.weight when blkio.weight is absent", "[dropin]") {
  if (cgroup2_unified()) HUSK_SKIP("a v1 blkio hierarchy is needed");
  std::filesystem::create_directories("/sys/fs/cgroup/blkio/husk-test/probe-bfq");
  bool plain = std::filesystem::exists("/sys/fs/cgroup/blkio/husk-test/probe-bfq/blkio.weight");
  bool bfq = std::filesystem::exists("/sys/fs/cgroup/blkio/husk-test/probe-bfq/blkio.bfq.weight");
  ::rmdir("/sys/fs/cgroup/blkio/husk-test/probe-bfq");
  if (plain || !bfq) HUSK_SKIP("this host has blkio.weight or no BFQ");
  Container c("bfq-weight");
  c.cfg["linux"]["resources"]["blockIO"]["weight"] = 321;
  c.start_process({"sleep", "100"});
  CHECK(trim(read_file(cgroup_file(c.id, "blkio", "blkio.bfq.weight"))) == "321");
}

TEST_CASE("exec --cgroup is refused, not ignored", "[dropin][husk-only]") {
  // runc 1.1 puts the process in a sub-cgroup; husk does not implement that
  // and says so rather than run it in the container's cgroup.
  Container c("exec-cgroup");
  c.start_process({"sleep", "100"});
  auto r = c.rt({"exec", "--cgroup", "sub", c.id, "true"});
  CHECK(r.code != 0);
  CHECK(contains(r.err, "--cgroup"));
  CHECK(lines(trim(r.err)).size() == 1);
}

TEST_CASE("--log naming a file that cannot be opened is an error", "[dropin]") {
  TempDir d("husk-it-log-");
  std::string bad = d.path + "/missing/dir/log.json";
  auto r = run({runtime(), "--root", d.path + "/root", "--log", bad, "list"});
  CHECK(r.code != 0);
  CHECK(contains(r.err, bad));
}

TEST_CASE("kernel.hostname in linux.sysctl conflicting with hostname is refused", "[dropin]") {
  Container c("sysctl-hostname");
  c.cfg["hostname"] = "a";
  c.cfg["linux"]["sysctl"] = {{"kernel.hostname", "b"}};
  c.args({"true"});
  auto r = c.run();
  CHECK(r.code != 0);
  CHECK(contains(r.err, "kernel.hostname"));
}

TEST_CASE("kernel.domainname in linux.sysctl conflicting with domainname is refused", "[dropin][husk-only]") {
  // runc 1.1 has no domainname field at all (the conformance case "domainname").
  Container c("sysctl-domainname");
  c.cfg["domainname"] = "a.test";
  c.cfg["linux"]["sysctl"] = {{"kernel.domainname", "b.test"}};
  c.args({"true"});
  auto r = c.run();
  CHECK(r.code != 0);
  CHECK(contains(r.err, "kernel.domainname"));
}

// Equal values are no conflict: engines set both (crun accepts them; runc
// 1.1.5 has no domainname field and refuses kernel.hostname beside hostname
// even when equal: the README's differences).
TEST_CASE("hostname and domainname equal to their sysctls are no conflict", "[dropin][husk-only]") {
  Container c("sysctl-same");
  c.cfg["hostname"] = "same.host";
  c.cfg["domainname"] = "same.test";
  c.cfg["linux"]["sysctl"] = {{"kernel.hostname", "same.host"}, {"kernel.domainname", "same.test"}};
  c.args({"sh", "-c", "hostname; cat /proc/sys/kernel/domainname"});
  auto r = c.run();
  INFO(r.err);
  REQUIRE(r.ok());
  CHECK(r.out == "same.host\nsame.test\n");
}

TEST_CASE("husk refuses a runc container in a shared state root", "[dropin][husk-only]") {
  // husk against runc's state: run only when HUSK_RUNTIME is husk.
  if (runtime_is_runc()) HUSK_SKIP("husk-only");
  if (::access("/usr/sbin/runc", X_OK) != 0) HUSK_SKIP("no /usr/sbin/runc");
  TempDir shared("husk-it-shared-");
  ::chmod(shared.path.c_str(), 0700);
  Container c("foreign");
  c.share_root(shared.path);
  c.args({"sleep", "100"});
  c.write_config();
  auto created = run({"/usr/sbin/runc", "--root", shared.path, "run", "-d", "--bundle", c.bundle, c.id});
  INFO(created.err);
  REQUIRE(created.code == 0);
  struct Cleanup {
    std::string root, id;
    ~Cleanup() { run({"/usr/sbin/runc", "--root", root, "delete", "--force", id}); }
  } cleanup{shared.path, c.id};
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"delete", c.id}, {"delete", "--force", c.id}, {"state", c.id}, {"kill", c.id, "KILL"}}) {
    auto r = c.rt(args);
    INFO(args[0] << ": " << r.err);
    CHECK(r.code != 0);
    CHECK(contains(r.err, "runc"));
  }
  auto l = c.rt({"list", "-q"});
  CHECK(l.code == 0);
  CHECK_FALSE(contains(l.out, c.id));
  CHECK_FALSE(contains(l.err, c.id));  // not ours: not a broken container either
  auto st = run({"/usr/sbin/runc", "--root", shared.path, "state", c.id});
  INFO(st.err);
  REQUIRE(st.code == 0);
  CHECK(json::parse(st.out)["status"] == "running");
}

TEST_CASE("husk keeps its own files out of the state root", "[dropin]") {
  Container c("seccomp-cache");
  c.cfg["linux"]["seccomp"] = {{"defaultAction", "SCMP_ACT_ALLOW"},
                               {"syscalls", {{{"names", {"mkdirat", "mkdir"}}, {"action", "SCMP_ACT_ERRNO"}}}}};
  auto r = c.run_ok({"true"});
  std::vector<std::string> entries;
  for (auto& e : std::filesystem::directory_iterator(c.root)) entries.push_back(e.path().filename());
  INFO(entries.size());
  CHECK(entries.empty());
}

namespace {

bool rt_group_sched() {
  return !cgroup2_unified() && std::filesystem::exists("/sys/fs/cgroup/cpu/cpu.rt_runtime_us");
}

// Field 41 of /proc/<pid>/stat: the scheduling policy (1 = SCHED_FIFO).
int sched_policy_of(int pid) {
  std::string st = read_file("/proc/" + std::to_string(pid) + "/stat");
  std::istringstream in(st.substr(st.rfind(')') + 2));
  std::string field;
  for (int i = 3; i <= 41 && in >> field; ++i) {
  }
  return std::stoi(field);
}

}  // namespace

TEST_CASE("a SCHED_FIFO container with a realtime budget under husk's default parent", "[dropin][cgroups][husk-only]") {
  // A new v1 cgroup has cpu.rt_runtime_us 0, so /husk could give nothing to
  // its children; runc puts such a container at /<id>, under the root's budget
  // (runc 1.1 has no process.scheduler, hence husk-only).
  if (!rt_group_sched()) HUSK_SKIP("no v1 realtime group scheduling (cpu.rt_runtime_us) on this host");
  Container c("rt-default");
  c.cfg["linux"].erase("cgroupsPath");
  c.cfg["linux"]["resources"]["cpu"] = {{"realtimeRuntime", 10000}, {"realtimePeriod", 1000000}};
  c.cfg["process"]["scheduler"] = {{"policy", "SCHED_FIFO"}, {"priority", 10}};
  add_caps(c, {"CAP_SYS_NICE"});
  int pid = c.start_process({"sleep", "100"});
  CHECK(sched_policy_of(pid) == 1);
  std::string cg = read_file("/proc/" + std::to_string(pid) + "/cgroup");
  INFO(cg);
  std::smatch m;
  REQUIRE(std::regex_search(cg, m, std::regex(R"(:cpu[^:]*:(/[^\n]*)\n)")));
  CHECK(trim(read_file("/sys/fs/cgroup/cpu" + m[1].str() + "/cpu.rt_runtime_us")) == "10000");
  REQUIRE(c.del(true).ok());
  CHECK(!std::filesystem::exists("/sys/fs/cgroup/cpu" + m[1].str()));
}

TEST_CASE("a realtime budget the container's host parent cannot give is an error naming the field",
          "[dropin][cgroups][husk-only]") {
  // runc 1.1 fails here too, with the kernel's bare EINVAL.
  if (!rt_group_sched()) HUSK_SKIP("no v1 realtime group scheduling (cpu.rt_runtime_us) on this host");
  Container c("rt-hostparent");
  c.cfg["linux"]["resources"]["cpu"] = {{"realtimeRuntime", 10000}, {"realtimePeriod", 1000000}};
  c.args({"true"});
  auto r = c.run();
  INFO(r.err);
  CHECK(r.code != 0);
  CHECK(contains(r.err, "linux.resources.cpu.realtimeRuntime"));
  CHECK(contains(r.err, "/husk-test"));
  CHECK(leftovers(c).empty());
}

TEST_CASE("SCHED_FIFO in a cgroup without realtime budget says what it needs", "[dropin][cgroups][husk-only]") {
  if (!rt_group_sched()) HUSK_SKIP("no v1 realtime group scheduling (cpu.rt_runtime_us) on this host");
  Container c("rt-nobudget");
  c.cfg["process"]["scheduler"] = {{"policy", "SCHED_FIFO"}, {"priority", 10}};
  add_caps(c, {"CAP_SYS_NICE"});
  c.args({"true"});
  auto r = c.run();
  INFO(r.err);
  CHECK(r.code != 0);
  CHECK(contains(r.err, "process.scheduler"));
  CHECK(contains(r.err, "linux.resources.cpu.realtimeRuntime"));
  CHECK(leftovers(c).empty());
}
