// The state root is not trusted blindly (issue 7, items 6-8): a root or
// container dir someone else could write to is refused, planted state.json
// and symlinks cannot make kill/delete touch anything outside, pid files are
// never written through a symlink, and delete --force recovers an id from a
// broken state.json or a husk killed at any point of create.
#include <catch2/catch.hpp>

#include <filesystem>
#include <map>
#include <thread>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "skip.h"

using namespace hit;
namespace fs = std::filesystem;

namespace {

uint64_t start_time(int pid) {
  auto st = read_file("/proc/" + std::to_string(pid) + "/stat");
  std::stringstream ss(st.substr(st.rfind(')') + 2));
  std::string f;
  for (int field = 3; field <= 22 && ss >> f; ++field) {
  }
  return std::stoull(f);
}

// Wait until `pid` runs `comm` (it may still be the shell that execs it).
void wait_comm(int pid, const std::string& comm) {
  for (int i = 0; i < 500; ++i) {
    if (trim(read_file("/proc/" + std::to_string(pid) + "/comm")) == comm) return;
    std::this_thread::sleep_for(5ms);
  }
  FAIL("process " << pid << " never became " << comm);
}

// Every entry below `dir` (not following symlinks) with its type and content.
std::map<std::string, std::string> snapshot(const std::string& dir) {
  std::map<std::string, std::string> out;
  for (auto& e : fs::recursive_directory_iterator(dir)) {
    auto st = e.symlink_status();
    std::string v = std::to_string(static_cast<int>(st.type())) + ":" +
                    std::to_string(static_cast<unsigned>(st.permissions())) + ":";
    if (fs::is_symlink(st)) v += fs::read_symlink(e.path()).string();
    else if (fs::is_regular_file(st)) v += read_file(e.path());
    out[e.path().string()] = v;
  }
  return out;
}

// husk's state.json for a container that is running as `pid`.
json planted_state(const std::string& id, int pid, uint64_t start, const std::string& cgroup) {
  return {{"ociVersion", "1.2.0"},   {"id", id},
          {"status", "running"},     {"pid", pid},
          {"bundle", "/nonexistent"}, {"rootfs", "/nonexistent/rootfs"},
          {"created", "2026-01-01T00:00:00.000000000Z"},
          {"owner", ""},             {"annotations", json::object()},
          {"initStartTime", start},  {"cgroupPath", cgroup},
          {"cgroupCreated", json::array({cgroup})}};
}

void plant(const Container& c, const json& state) {
  fs::create_directories(c.root + "/" + c.id);
  ::chmod((c.root + "/" + c.id).c_str(), 0700);
  write_file(c.root + "/" + c.id + "/state.json", state.dump(), 0600);
}

// A cgroup /husk-test/<name> of the test's own with a `sleep 1000` in it (the
// pids hierarchy on v1/hybrid hosts, as husk places containers there too).
struct Victim {
  std::string path, dir;
  std::unique_ptr<Child> sleeper;
  int pid = -1;
  uint64_t start = 0;

  explicit Victim(const std::string& name) : path("/husk-test/" + name) {
    dir = (cgroup2_unified() ? "/sys/fs/cgroup" : "/sys/fs/cgroup/pids") + path;
    fs::create_directories(dir);
    sleeper = std::make_unique<Child>(
        std::vector<std::string>{"sh", "-c", "echo $$ > " + dir + "/cgroup.procs && exec sleep 1000"});
    pid = sleeper->pid();
    wait_comm(pid, "sleep");
    start = start_time(pid);
  }
  ~Victim() {
    sleeper.reset();  // SIGKILL by pid and reap
    for (int i = 0; i < 100 && ::rmdir(dir.c_str()) != 0 && errno == EBUSY; ++i) std::this_thread::sleep_for(10ms);
  }
  bool exists() const { return fs::exists(dir); }
  // argv run by a shell that first moves itself (and so the runtime it
  // execs) into this cgroup.
  std::vector<std::string> inside(const std::vector<std::string>& argv) const {
    std::vector<std::string> out{"sh", "-c", "echo $$ > " + dir + "/cgroup.procs && exec \"$0\" \"$@\""};
    out.insert(out.end(), argv.begin(), argv.end());
    return out;
  }
};

}  // namespace

// Fails against 14774f5: create succeeded in a mode-0777 root.
TEST_CASE("a state root writable by group or others is refused", "[security][husk-only]") {
  for (mode_t mode : {0777, 0770, 0722}) {
    Container c("wroot");
    c.args({"sleep", "60"});
    ::chmod(c.root.c_str(), mode);
    auto r = c.create();
    INFO("mode " << std::oct << mode << ": " << r.err);
    CHECK(r.code == 1);
    CHECK(contains(r.err, c.root));
    CHECK(contains(r.err, "writable by group or others"));
    CHECK(lines(r.err).size() == 1);
    auto l = c.rt({"list"});
    CHECK(l.code == 1);
    ::chmod(c.root.c_str(), 0700);
    CHECK(leftovers(c).empty());
  }
}

// Fails against 14774f5: the root was made 0711 and the container dir 0711.
TEST_CASE("a new state root and container dirs are made 0700", "[security][husk-only]") {
  TempDir parent("husk-it-newroot-");
  Container c("newroot");
  c.share_root(parent.path + "/a/root");
  c.args({"sleep", "60"});
  c.cfg["process"]["user"] = {{"uid", 1000}, {"gid", 1000}};
  auto r = c.create();
  INFO(r.err);
  REQUIRE(r.ok());
  struct stat st;
  REQUIRE(::stat(c.root.c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0700);
  REQUIRE(::stat((c.root + "/" + c.id).c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0700);
  // The init still reaches exec.fifo as a non-root user in a 0700 dir.
  auto s = c.start();
  INFO(s.err);
  CHECK(s.ok());
  CHECK(c.del(true).ok());
  CHECK(leftovers(c).empty());
}

// Fails against 14774f5: a root and a container dir owned by uid 65534 were used.
TEST_CASE("a state root or container dir owned by another uid is refused", "[security][husk-only]") {
  Container c("uroot");
  c.args({"sleep", "60"});
  REQUIRE(::chown(c.root.c_str(), 65534, 65534) == 0);
  auto r = c.create();
  INFO(r.err);
  CHECK(r.code == 1);
  CHECK(contains(r.err, c.root + ": owned by uid 65534"));
  REQUIRE(::chown(c.root.c_str(), 0, 0) == 0);
  REQUIRE(c.create().ok());
  int pid = c.pid();
  std::string dir = c.root + "/" + c.id;
  REQUIRE(::chown(dir.c_str(), 65534, 65534) == 0);
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"state", c.id}, {"kill", c.id, "KILL"}, {"delete", "--force", c.id}}) {
    auto x = c.rt(args);
    INFO(args[0] << ": " << x.err);
    CHECK(x.code == 1);
    CHECK(contains(x.err, dir + ": owned by uid 65534"));
  }
  CHECK(alive(pid));
  REQUIRE(::chown(dir.c_str(), 0, 0) == 0);
  CHECK(c.del(true).ok());
  CHECK(leftovers(c).empty());
}

// Fails against 14774f5: `kill` SIGKILLed the host sleep through its pid and start time.
TEST_CASE("a planted state.json naming a host process gets it neither killed nor signalled",
          "[security][husk-only]") {
  Child host({"sleep", "1000"});
  wait_comm(host.pid(), "sleep");
  uint64_t start = start_time(host.pid());
  // "/" is refused as a cgroup path; /husk-test/<id> is not the sleep's cgroup.
  for (const std::string cg : {"/husk-test/", "/"}) {
    Container c("planted");
    std::string path = cg == "/" ? cg : cg + c.id;
    plant(c, planted_state(c.id, host.pid(), start, path));
    INFO("cgroupPath " << path);
    auto k = c.rt({"kill", c.id, "KILL"});
    INFO("kill: " << k.err);
    CHECK(k.code != 0);
    auto ka = c.rt({"kill", "--all", c.id, "KILL"});
    INFO("kill --all: " << ka.err);
    auto d = c.del(true);
    INFO("delete --force: " << d.err);
    CHECK(d.ok());
    std::this_thread::sleep_for(50ms);
    REQUIRE(alive(host.pid()));
    CHECK(start_time(host.pid()) == start);
    CHECK(leftovers(c).empty());
  }
}

// Fails against 14774f5: exec joined the host sleep's namespaces and only failed
// moving that process into the cgroup (absent from blkio); delete --force then
// SIGKILLed the sleep.
TEST_CASE("exec refuses a planted state.json whose pid is not in the recorded cgroup", "[security][husk-only]") {
  Container c("plantexec");
  Child host({"sleep", "1000"});
  wait_comm(host.pid(), "sleep");
  Victim v(c.id + "-other");  // an existing cgroup the sleep is not in
  json state = planted_state(c.id, host.pid(), start_time(host.pid()), v.path);
  state["cgroupCreated"] = json::array();
  plant(c, state);
  write_file(c.root + "/" + c.id + "/config.json", c.cfg.dump(), 0600);
  auto e = c.rt({"exec", c.id, "true"});
  INFO(e.err);
  CHECK(e.code != 0);
  CHECK(contains(e.err, "not running"));
  CHECK(c.del(true).ok());
  CHECK(alive(host.pid()));
  CHECK(alive(v.pid));
}

// A host cgroup that exists in one v1 hierarchy only (the pids one here) is
// not husk's, even though create makes the same path in the others. Seen
// failing before the fix: create counted it as made, skipped the "already has
// processes" check, and delete SIGKILLed the host process and removed the cgroup.
TEST_CASE("a cgroupsPath that exists in one v1 hierarchy is never husk's to empty", "[security]") {
  if (cgroup2_unified()) HUSK_SKIP("one hierarchy on a cgroup2 host: nothing to mix up");
  Container c("partcg");
  Victim v(c.id + "-pre");
  c.cfg["linux"]["cgroupsPath"] = v.path;
  c.args({"sleep", "60"});
  auto r = c.create();
  INFO(r.err);
  if (r.ok()) {
    c.start();
    c.del(true);
  } else {
    CHECK(contains(r.err, "already has processes"));
  }
  std::this_thread::sleep_for(50ms);
  CHECK(alive(v.pid));
  CHECK(v.exists());
  // The empty directories create made in the other hierarchies.
  std::error_code ec;
  for (auto& h : fs::directory_iterator("/sys/fs/cgroup", ec))
    if (h.path().filename() != "pids") ::rmdir((h.path().string() + v.path).c_str());
}

// Fails against 14774f5: kill --all SIGKILLed the victim's sleep and husk itself.
TEST_CASE("a planted cgroupPath of a cgroup holding husk itself is neither emptied nor removed",
          "[security][husk-only]") {
  Container c("selfcg");
  Victim v(c.id + "-victim");
  plant(c, planted_state(c.id, v.pid, v.start, v.path));
  const std::string pids_max = trim(read_file(v.dir + "/pids.max"));
  // pause and update went to that cgroup until they shared kill's check: update set pids.max there.
  for (const auto& args : std::vector<std::vector<std::string>>{{"update", "--pids-limit", "1", c.id},
                                                                {"pause", c.id},
                                                                {"kill", "--all", c.id, "KILL"},
                                                                {"kill", c.id, "KILL"},
                                                                {"delete", "--force", c.id}}) {
    std::vector<std::string> argv{runtime(), "--root", c.root};
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = run(v.inside(argv));
    INFO(args[1] << ": " << r.code << " " << r.err);
    CHECK_FALSE(r.signaled);
    CHECK(r.code != 128 + SIGKILL);
    if (args[0] != "delete") CHECK(r.code != 0);
    std::this_thread::sleep_for(50ms);
    CHECK(alive(v.pid));
    CHECK(v.exists());
    CHECK(trim(read_file(v.dir + "/pids.max")) == pids_max);
  }
  CHECK_FALSE(fs::exists(c.root + "/" + c.id));
}

// Fails against 14774f5: delete --force removed state.json, config.json and
// exec.fifo from the directory the planted symlink pointed at.
TEST_CASE("delete --force of a <root>/<id> symlink deletes nothing outside the root", "[security]") {
  Container c("linkdir");
  TempDir outside("husk-it-outside-");
  write_file(outside.path + "/state.json", planted_state(c.id, 0, 0, "/husk-test/" + c.id).dump());
  write_file(outside.path + "/config.json", c.cfg.dump());
  write_file(outside.path + "/precious", "precious\n");
  REQUIRE(::mkfifo((outside.path + "/exec.fifo").c_str(), 0622) == 0);
  REQUIRE(::symlink(outside.path.c_str(), (c.root + "/" + c.id).c_str()) == 0);
  auto before = snapshot(outside.path);
  auto s = c.rt({"state", c.id});
  CHECK(s.code != 0);
  auto d = c.del(true);
  INFO(d.err);
  CHECK(d.ok());
  CHECK(snapshot(outside.path) == before);
  struct stat st;
  CHECK(::lstat((c.root + "/" + c.id).c_str(), &st) != 0);
}

// Fails against 14774f5: `kill` followed the state.json symlink and SIGKILLed the victim.
TEST_CASE("state.json and config.json symlinks are not followed", "[security][husk-only]") {
  Container c("linkstate");
  Victim v(c.id + "-victim");
  TempDir outside("husk-it-outside-");
  json cfg = c.cfg;
  cfg["linux"]["cgroupsPath"] = v.path;
  write_file(outside.path + "/state.json", planted_state(c.id, v.pid, v.start, v.path).dump());
  write_file(outside.path + "/config.json", cfg.dump());
  std::string dir = c.root + "/" + c.id;
  REQUIRE(::mkdir(dir.c_str(), 0700) == 0);
  REQUIRE(::symlink((outside.path + "/state.json").c_str(), (dir + "/state.json").c_str()) == 0);
  REQUIRE(::symlink((outside.path + "/config.json").c_str(), (dir + "/config.json").c_str()) == 0);
  auto before = snapshot(outside.path);
  auto k = c.rt({"kill", c.id, "KILL"});
  INFO("kill: " << k.err);
  CHECK(k.code != 0);
  CHECK(contains(k.err, "symlink"));
  auto d = c.del(true);
  INFO("delete: " << d.err);
  CHECK(d.ok());
  std::this_thread::sleep_for(50ms);
  CHECK(alive(v.pid));
  CHECK(v.exists());
  CHECK(snapshot(outside.path) == before);
  CHECK_FALSE(fs::exists(dir));
}

// Fails against 14774f5: the pid went into `precious` through the symlink at
// <pid file>.tmp (runc's temp name is .<pid file>, created O_EXCL).
TEST_CASE("--pid-file never writes through a symlink", "[security]") {
  TempDir outside("husk-it-outside-");
  std::string precious = outside.path + "/precious";
  write_file(precious, "precious\n");
  Container c("pidlink");
  c.args({"sleep", "60"});
  auto plant_links = [&](const std::string& pf) {
    for (const std::string& p : {pf, pf + ".tmp"})
      REQUIRE(::symlink(precious.c_str(), p.c_str()) == 0);
  };
  auto check_pid_file = [&](const std::string& pf, int pid) {
    struct stat st;
    REQUIRE(::lstat(pf.c_str(), &st) == 0);
    CHECK(S_ISREG(st.st_mode));
    CHECK(read_file(pf) == std::to_string(pid));
    CHECK(read_file(precious) == "precious\n");
  };
  std::string pf = c.bundle + "/init.pid";
  plant_links(pf);
  auto r = c.create({"--pid-file", pf});
  INFO("create: " << r.err);
  REQUIRE(r.ok());
  check_pid_file(pf, c.pid());
  REQUIRE(c.start().ok());

  std::string epf = c.bundle + "/exec.pid";
  plant_links(epf);
  auto e = c.rt({"exec", "-d", "--pid-file", epf, c.id, "sleep", "30"});
  INFO("exec: " << e.err);
  REQUIRE(e.ok());
  check_pid_file(epf, std::stoi(read_file(epf)));
  // No temp file left next to the pid files.
  for (auto& f : fs::directory_iterator(c.bundle)) {
    std::string n = f.path().filename();
    INFO(n);
    CHECK((n == "rootfs" || n == "config.json" || n == "init.pid" || n == "init.pid.tmp" || n == "exec.pid" ||
           n == "exec.pid.tmp"));
  }
}

// Fails against 14774f5: delete --force stopped at the JSON error (or, with no
// state.json, removed the dir and left the init and its cgroup behind).
TEST_CASE("delete --force recovers a container whose state.json is broken", "[security][husk-only]") {
  const std::vector<std::pair<std::string, std::string>> variants = {
      {"corrupt", "{\"id\": "}, {"truncated", ""}, {"empty", ""}, {"array", "[]"},
      {"wrong-typed", "{\"pid\":\"x\"}"}, {"missing", ""}};
  for (const auto& [name, text] : variants) {
    Container c("broken");
    c.args({"sleep", "60"});
    auto r = c.create();
    INFO(name << ": create: " << r.err);
    REQUIRE(r.ok());
    int pid = c.pid();
    std::string state = c.root + "/" + c.id + "/state.json";
    if (name == "missing") {
      REQUIRE(::unlink(state.c_str()) == 0);
    } else if (name == "truncated") {
      std::string full = read_file(state);
      write_file(state, full.substr(0, full.size() / 2), 0600);
    } else {
      write_file(state, text, 0600);
    }
    auto s = c.rt({"state", c.id});
    INFO(name << ": state: " << s.err);
    CHECK(s.code == 1);
    CHECK(lines(s.err).size() == 1);
    if (name != "missing") CHECK(contains(s.err, state));
    auto l = c.rt({"list"});
    CHECK(l.code == 0);
    auto d = c.del(true);
    INFO(name << ": delete: " << d.err);
    CHECK(d.ok());
    CHECK(gone_soon(pid));
    CHECK(leftovers(c) == std::vector<std::string>{});
    auto again = c.create();
    INFO(name << ": create again: " << again.err);
    CHECK(again.ok());
    CHECK(c.del(true).ok());
    CHECK(leftovers(c) == std::vector<std::string>{});
  }
}

// `create` under strace killed at the n-th call of `syscall` (inject=SC:
// signal=KILL:when=N); then delete --force must leave nothing and the id be
// reusable. False when create got past that call (made fewer than n).
// `nested`: the cgroup is /husk-test/<id>/leaf, its parent made by create too.
namespace {
bool killed_create_recovers(const std::string& syscall, int n, bool nested = false) {
  Container c("sigkill");
  c.args({"sleep", "60"});
  if (nested) c.cfg["linux"]["cgroupsPath"] = "/husk-test/" + c.id + "/leaf";
  c.write_config();
  std::string inject = "inject=" + syscall + ":signal=KILL:when=" + std::to_string(n);
  auto r = run({"strace", "-o", "/dev/null", "-e", inject, runtime(), "--root", c.root, "create", "--bundle",
                c.bundle, c.id});
  INFO(syscall << " #" << n << ": create exit " << r.code << ": " << r.err);
  const bool hit = r.code != 0;
  auto d = c.del(true);
  INFO("delete --force: " << d.err);
  CHECK(d.ok());
  CHECK(leftovers(c) == std::vector<std::string>{});
  if (!hit) return false;
  auto again = c.create();
  INFO("create again: " << again.err);
  CHECK(again.ok());
  CHECK(c.del(true).ok());
  CHECK(leftovers(c) == std::vector<std::string>{});
  return true;
}
}  // namespace

// Fails against 14774f5 at about 70 points (mkdir of the cgroups, the openat,
// write, rename and clone3 calls after them): cgroups, and later the init,
// were left behind.
TEST_CASE("a husk SIGKILLed at any point of create leaves nothing delete --force cannot remove",
          "[security]") {
  if (::access("/usr/bin/strace", X_OK) != 0) {
    WARN("strace is not installed (scripts/setup installs it): the fault injection test did not run");
    return;
  }
  const char* syscalls[] = {"openat", "mkdir",  "mkdirat",  "write",   "rename",  "renameat", "renameat2",
                            "mknodat", "flock", "clone3",   "sendmsg", "sendto",  "recvmsg",  "recvfrom",
                            "unlinkat", "fchmodat"};
  int killed = 0;
  for (const char* sc : syscalls) {
    // The n-th call of `sc` is hit until create makes fewer calls than n.
    for (int n = 1; n <= 100 && killed_create_recovers(sc, n); ++n) ++killed;
  }
  // Most points must really have been hit, or the test proves nothing (runc
  // makes most of its calls in threads, which strace without -f does not see).
  CHECK(killed >= (runtime_is_runc() ? 10 : 50));
}

// strace's signal without a fault is sent on entry to the call: a kill at
// the n-th lsetxattr is one right after a cgroup's mkdir. On 7bdf3ce the
// first one left the leaf unmarked: delete --force left it ("not marked as
// made by husk"), and so did every later delete of a reused id.
TEST_CASE("a create killed between a cgroup's mkdir and its mark leaves nothing behind", "[security][husk-only]") {
  if (::access("/usr/bin/strace", X_OK) != 0) {
    WARN("strace is not installed (scripts/setup installs it): the fault injection test did not run");
    return;
  }
  // Nested: the parent create made was not in the record (a review helper saw
  // one of 40 timed kills leave it, marked, in every hierarchy).
  const bool nested = GENERATE(false, true);
  INFO("nested: " << nested);
  int killed = 0;
  for (int n = 1; n <= 40 && killed_create_recovers("lsetxattr", n, nested); ++n) ++killed;
  CHECK(killed >= 1);
}

TEST_CASE("list names a container with a broken state.json and still lists the others", "[husk-only]") {
  // Before, list skipped it without a word, so the broken one (holding an
  // init and a cgroup) went unnoticed; runc 1.1 prints the error and goes on.
  Container good("list-good");
  good.args({"sleep", "60"});
  REQUIRE(good.create().ok());
  Container bad("list-bad");
  bad.share_root(good.root);
  bad.args({"sleep", "60"});
  REQUIRE(bad.create().ok());
  std::string state = bad.root + "/" + bad.id + "/state.json";
  write_file(state, "{\"id\": ", 0600);
  auto l = good.rt({"list", "--quiet"});
  INFO(l.err);
  CHECK(l.code == 0);
  CHECK(lines(l.out) == std::vector<std::string>{good.id});
  CHECK(contains(l.err, state));
  CHECK(bad.del(true).ok());
}
