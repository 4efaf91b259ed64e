// The managers driven on a fake cgroup tree in a temp dir (Config::hierarchies):
// what prepare makes, what apply writes, what destroy removes, what pids and
// stats read. The kernel's interface files are plain files the test writes.
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/fd.h"
#include "cgroups/cgroups.h"
#include "skip.h"
#include "unit/temp_dir.h"

using husk::Error;
namespace cg = husk::cgroups;
namespace fs = std::filesystem;

namespace {

struct FakeTree {
  husk_test::TempDir dir{"husk-cgroups-test."};
  std::string root = dir.path;

  cg::Hierarchies unified() const { return {cg::Mode::unified, root, {}}; }
  // memory, pids, and cpu+cpuacct sharing one hierarchy, as Debian mounts them.
  cg::Hierarchies legacy() const {
    return {cg::Mode::legacy,
            "",
            {{"memory", root + "/memory"},
             {"pids", root + "/pids"},
             {"cpu", root + "/cpu,cpuacct"},
             {"cpuacct", root + "/cpu,cpuacct"}}};
  }

  void mkdirs(const std::string& rel) const { fs::create_directories(root + rel); }
  // (Re)writes a file from empty: the managers' single writes do not truncate.
  void put(const std::string& rel, const std::string& text) const { std::ofstream(root + rel) << text; }
  std::string get(const std::string& rel) const {
    std::ifstream in(root + rel);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  bool has(const std::string& rel) const { return fs::exists(fs::symlink_status(root + rel)); }
};

// Marks with a user.* xattr: trusted.* would need CAP_SYS_ADMIN.
constexpr const char* kMark = "user.husk.owner";

std::unique_ptr<cg::Manager> manager(const std::string& path, const cg::Hierarchies& h,
                                     std::vector<std::string> created = {}, const std::string& owner = "c1") {
  return cg::make_manager(
      {.path = path, .created = std::move(created), .owner = owner, .owner_xattr = kMark, .hierarchies = h});
}

// The owner mark on a directory of the fake tree; "-" when there is none.
std::string mark(const FakeTree& t, const std::string& rel) {
  char buf[64];
  ssize_t n = lgetxattr((t.root + rel).c_str(), kMark, buf, sizeof buf);
  return n < 0 ? "-" : std::string(buf, n);
}
void set_mark(const FakeTree& t, const std::string& rel, const std::string& owner) {
  REQUIRE(lsetxattr((t.root + rel).c_str(), kMark, owner.data(), owner.size(), 0) == 0);
}

cg::Hierarchies hybrid(const FakeTree& t) {
  cg::Hierarchies h = t.legacy();
  h.mode = cg::Mode::hybrid;
  h.unified = t.root + "/unified";
  for (const char* d : {"/memory", "/pids", "/cpu,cpuacct", "/unified"}) t.mkdirs(d);
  return h;
}

husk::spec::Resources limits(int64_t memory, int64_t pids, uint64_t shares) {
  husk::spec::Resources r;
  r.memory = husk::spec::Memory{};
  r.memory->limit = memory;
  r.pids_limit = pids;
  r.cpu = husk::spec::Cpu{};
  r.cpu->shares = shares;
  return r;
}

}  // namespace

TEST_CASE("v2: prepare makes the missing cgroups, enables what is available, returns the path as handle") {
  FakeTree t;
  t.put("/cgroup.controllers", "memory");
  t.put("/cgroup.subtree_control", "");
  t.mkdirs("/husk");  // the host's already
  t.put("/husk/cgroup.controllers", "memory");
  t.put("/husk/cgroup.subtree_control", "memory");
  auto m = manager("/husk/a/b", t.unified());
  CHECK(m->prepare() == "/husk/a/b");
  CHECK(fs::is_directory(t.root + "/husk/a/b"));
  CHECK(m->created() == std::vector<std::string>{"/husk/a", "/husk/a/b"});
  CHECK(t.get("/cgroup.subtree_control") == "+memory");
  CHECK(t.get("/husk/cgroup.subtree_control") == "memory");  // already on: not written
}

TEST_CASE("v2: apply writes the translated limits; a new period alone keeps the quota") {
  FakeTree t;
  auto m = manager("/husk/c", t.unified());
  m->prepare();
  for (const char* f : {"/memory.max", "/pids.max", "/cpu.weight", "/cpu.max"}) t.put("/husk/c" + std::string(f), "");
  husk::spec::Resources r = limits(64 << 20, 20, 1024);
  r.cpu->quota = 50000;
  r.cpu->period = 100000;
  m->apply(r);
  CHECK(t.get("/husk/c/memory.max") == "67108864");
  CHECK(t.get("/husk/c/pids.max") == "20");
  CHECK(t.get("/husk/c/cpu.weight") == "39");
  CHECK(t.get("/husk/c/cpu.max") == "50000 100000");

  t.put("/husk/c/cpu.max", "50000 100000\n");
  husk::spec::Resources period;
  period.cpu = husk::spec::Cpu{};
  period.cpu->period = 200000;
  m->apply(period);
  CHECK(t.get("/husk/c/cpu.max").substr(0, 12) == "50000 200000");
}

TEST_CASE("v2: pids() reads cgroup.procs of the cgroup and of the cgroups below it") {
  FakeTree t;
  auto m = manager("/husk/p", t.unified());
  m->prepare();
  t.put("/husk/p/cgroup.procs", "10\n11\n");
  t.mkdirs("/husk/p/nested");
  t.put("/husk/p/nested/cgroup.procs", "12\n");
  auto pids = m->pids();
  std::sort(pids.begin(), pids.end());
  CHECK(pids == std::vector<pid_t>{10, 11, 12});
}

TEST_CASE("v2: destroy removes what prepare made and what the container made below, nothing else") {
  FakeTree t;
  t.mkdirs("/husk/other");
  auto m = manager("/husk/a/b", t.unified());
  m->prepare();
  t.mkdirs("/husk/a/b/nested/deeper");  // a nested runtime's
  // A later process (delete) knows only what the record kept.
  manager("/husk/a/b", t.unified(), m->created())->destroy();
  CHECK_FALSE(t.has("/husk/a"));
  CHECK(fs::is_directory(t.root + "/husk/other"));
  CHECK_NOTHROW(m->destroy());  // gone already: fine
}

// Fails before the fix: the made /husk/a and /husk/a/b stayed behind.
TEST_CASE("v2: a prepare that fails while enabling controllers leaves nothing it made") {
  FakeTree t;
  t.mkdirs("/husk");
  t.put("/husk/cgroup.controllers", "memory");
  // A write to it fails (ENOENT), whoever runs the test.
  REQUIRE(symlink("missing", (t.root + "/husk/cgroup.subtree_control").c_str()) == 0);
  auto m = manager("/husk/a/b", t.unified());
  CHECK_THROWS_WITH(m->prepare(),
             Catch::Contains("enable the memory controller in " + t.root + "/husk/cgroup.subtree_control"));
  CHECK_FALSE(t.has("/husk/a"));
  CHECK(fs::is_directory(t.root + "/husk"));
  CHECK(m->created().empty());
}

// Fails before the fix: a value that is no number was read as 0.
TEST_CASE("v2: stats read the files, and a value that is no number is an error naming the file") {
  FakeTree t;
  auto m = manager("/husk/s", t.unified());
  m->prepare();
  t.put("/husk/s/cpu.stat", "usage_usec 5\nuser_usec 3\nsystem_usec 2\n");
  t.put("/husk/s/memory.current", "4096\n");
  t.put("/husk/s/pids.current", "3\n");
  t.put("/husk/s/pids.max", "max\n");
  t.put("/husk/s/io.stat", "8:0 rbytes=10 wbytes=20 rios=1 wios=2 cost.vrate=100.00\n");
  auto s = m->stats();
  CHECK(s.cpu_usage_ns == 5000);
  CHECK(s.memory_usage == 4096);
  CHECK(s.pids_current == 3);
  CHECK(s.pids_limit == 0);
  CHECK(s.io_service_bytes.size() == 2);
  t.put("/husk/s/pids.current", "3x\n");
  CHECK_THROWS_AS(m->stats(), Error);  // not a foreign exception
  CHECK_THROWS_WITH(m->stats(), Catch::Contains(t.root + "/husk/s/pids.current: \"3x\" is not a number"));
}

TEST_CASE("v1: prepare makes the cgroup in every hierarchy, apply writes each controller's files") {
  FakeTree t;
  for (const char* h : {"/memory", "/pids", "/cpu,cpuacct"}) t.mkdirs(h);
  auto m = manager("/husk/x", t.legacy());
  CHECK(m->prepare() == "/husk/x");
  CHECK(m->created() == std::vector<std::string>{"/husk", "/husk/x"});
  for (const char* f : {"/memory/husk/x/memory.limit_in_bytes", "/pids/husk/x/pids.max", "/cpu,cpuacct/husk/x/cpu.shares"})
    t.put(f, "");
  m->apply(limits(1 << 20, 7, 512));
  CHECK(t.get("/memory/husk/x/memory.limit_in_bytes") == "1048576");
  CHECK(t.get("/pids/husk/x/pids.max") == "7");
  CHECK(t.get("/cpu,cpuacct/husk/x/cpu.shares") == "512");
  t.put("/pids/husk/x/cgroup.procs", "42\n");
  CHECK(m->pids() == std::vector<pid_t>{42});
}

TEST_CASE("v1: a cgroup one hierarchy already had is not ours, and destroy leaves it") {
  FakeTree t;
  for (const char* h : {"/memory/husk", "/pids", "/cpu,cpuacct"}) t.mkdirs(h);
  auto m = manager("/husk/x", t.legacy());
  m->prepare();
  CHECK(m->created() == std::vector<std::string>{"/husk/x"});
  m->destroy();
  for (const char* h : {"/memory", "/pids", "/cpu,cpuacct"}) {
    INFO(h);
    CHECK_FALSE(t.has(h + std::string("/husk/x")));
    CHECK(t.has(h + std::string("/husk")));
  }
}

// Fails before the fix: /cpu,cpuacct/husk and /memory/husk stayed behind.
TEST_CASE("v1: a prepare that fails in one hierarchy removes what it made in the others") {
  FakeTree t;
  for (const char* h : {"/memory", "/cpu,cpuacct"}) t.mkdirs(h);  // no /pids mount point
  auto m = manager("/husk/x", t.legacy());
  CHECK_THROWS_WITH(m->prepare(), Catch::Contains("mkdir " + t.root + "/pids/husk"));
  CHECK_FALSE(t.has("/memory/husk"));
  CHECK_FALSE(t.has("/cpu,cpuacct/husk"));
}

TEST_CASE("hybrid: a controller v1 lacks is enabled and set in the unified hierarchy") {
  FakeTree t;
  cg::Hierarchies h = hybrid(t);
  t.put("/unified/cgroup.controllers", "hugetlb");
  t.put("/unified/cgroup.subtree_control", "");
  auto m = manager("/husk/y", h);
  m->prepare();
  CHECK(fs::is_directory(t.root + "/unified/husk/y"));
  t.put("/unified/husk/y/hugetlb.2MB.max", "");
  husk::spec::Resources r;
  r.hugepage_limits.push_back({"2MB", 4 << 20});
  m->apply(r);
  CHECK(t.get("/unified/cgroup.subtree_control") == "+hugetlb");
  CHECK(t.get("/unified/husk/y/hugetlb.2MB.max") == "4194304");
  CHECK(cg::exists("/husk/y", h));
  CHECK_FALSE(cg::exists("/husk/z", h));
}

// The process moving itself writes 0 to each v1 hierarchy's tasks (the
// thread, without the host-wide wait of cgroup.procs); into the unified
// hierarchy it was cloned, or writes cgroup.procs there when it was not.
TEST_CASE("hybrid: attach_self writes 0 to every v1 tasks file; the unified leaf is for clone3 or cgroup.procs") {
  FakeTree t;
  auto m = manager("/husk/s", hybrid(t));
  m->prepare();
  husk::base::Fd into(m->clone_into_fd());
  struct stat got, want;
  REQUIRE(into);
  REQUIRE(::fstat(into.get(), &got) == 0);
  REQUIRE(::stat((t.root + "/unified/husk/s").c_str(), &want) == 0);
  CHECK(got.st_ino == want.st_ino);
  for (const char* h : {"/memory", "/pids", "/cpu,cpuacct", "/unified"})
    for (const char* f : {"/husk/s/tasks", "/husk/s/cgroup.procs"}) t.put(h + std::string(f), "");
  m->attach_self(true);
  for (const char* f : {"/memory/husk/s/tasks", "/pids/husk/s/tasks", "/cpu,cpuacct/husk/s/tasks"}) CHECK(t.get(f) == "0");
  CHECK(t.get("/memory/husk/s/cgroup.procs").empty());
  CHECK(t.get("/unified/husk/s/cgroup.procs").empty());
  m->attach_self(false);
  CHECK(t.get("/unified/husk/s/cgroup.procs") == "0");
  // By pid (a process in a user namespace of its own): cgroup.procs everywhere.
  t.put("/unified/husk/s/cgroup.procs", "");
  m->attach(42, true);
  for (const char* h : {"/memory", "/pids", "/cpu,cpuacct"}) CHECK(t.get(h + std::string("/husk/s/cgroup.procs")) == "42");
  CHECK(t.get("/unified/husk/s/cgroup.procs").empty());
  CHECK(t.get("/unified/husk/s/tasks").empty());
}

TEST_CASE("v1: no clone3 target; v2: the leaf is, and attach_self after it has nothing left to do") {
  FakeTree t;
  for (const char* h : {"/memory", "/pids", "/cpu,cpuacct"}) t.mkdirs(h);
  auto v1 = manager("/husk/v1", t.legacy());
  v1->prepare();
  CHECK(v1->clone_into_fd() == -1);
  auto v2 = manager("/husk/v2", t.unified());
  v2->prepare();
  husk::base::Fd into(v2->clone_into_fd());
  CHECK(into);
  t.put("/husk/v2/cgroup.procs", "");
  v2->attach_self(true);
  CHECK(t.get("/husk/v2/cgroup.procs").empty());
  v2->attach_self(false);
  CHECK(t.get("/husk/v2/cgroup.procs") == "0");
}

TEST_CASE("cgroupfs: the handle is the path; another handle is refused") {
  FakeTree t;
  CHECK_NOTHROW(cg::make_manager({.path = "/husk/h", .handle = "/husk/h", .hierarchies = t.unified()}));
  CHECK_THROWS_WITH(cg::make_manager({.path = "/husk/h", .handle = "husk-h.scope", .hierarchies = t.unified()}),
             Catch::Contains("cgroup handle \"husk-h.scope\" is not the cgroupfs driver's for /husk/h"));
}

// A component named "..b" is a cgroup like any other (resolve_path keeps it);
// only a ".." component may climb out.
TEST_CASE("cgroupfs: a path with a \"..\" component is refused, a name starting with \"..\" is not") {
  FakeTree t;
  CHECK_NOTHROW(cg::make_manager({.path = "/husk/..b", .hierarchies = t.unified()}));
  CHECK(cg::resolve_path("/husk/..b", "c1") == "/husk/..b");
  for (const char* bad : {"/husk/../etc", "/husk/..", "husk/c1", "/"})
    CHECK_THROWS_WITH(cg::make_manager({.path = bad, .hierarchies = t.unified()}),
                      Catch::Contains("must be absolute, not the root and without"));
}

TEST_CASE("none: no cgroup, said once; limits, pause, pids, kill_all and stats fail naming why") {
  std::vector<std::string> said, debug;
  auto m = cg::make_manager({.driver = cg::Driver::none,
                             .container_id = "c1",
                             .none_reason = "no delegated cgroup",
                             .log = [&](const std::string& s) { said.push_back(s); },
                             .debug = [&](const std::string& s) { debug.push_back(s); }});
  CHECK(m->prepare().empty());
  husk::spec::Resources devices_only;
  devices_only.devices = cg::effective_device_rules({}, {});
  CHECK_NOTHROW(m->apply(devices_only));
  CHECK(debug == std::vector<std::string>{"no device rules are enforced: container c1 has no cgroup: no delegated cgroup"});
  // An engine's "nothing": zero values ask for no limit.
  husk::spec::Resources zeros;
  zeros.memory = husk::spec::Memory{};
  zeros.memory->limit = 0;
  CHECK_NOTHROW(m->apply(zeros));
  m->attach(1, false);
  m->attach_self(false);
  CHECK_NOTHROW(m->destroy());
  CHECK(said == std::vector<std::string>{"container c1 has no cgroup: no delegated cgroup"});
  husk::spec::Resources limits;
  limits.pids_limit = 5;
  const std::string why = "container c1 has no cgroup: no delegated cgroup";
  CHECK_THROWS_WITH(m->apply(limits), "linux.resources.pids.limit: cannot be applied: " + why);
  CHECK_THROWS_WITH(m->freeze(), "pause: " + why);
  CHECK_THROWS_WITH(m->thaw(), "resume: " + why);
  CHECK_THROWS_WITH(m->pids(), "ps: " + why);
  CHECK_THROWS_WITH(m->kill_all(9), "kill --all: " + why + " (kill without --all signals its init)");
  CHECK_THROWS_WITH(m->stats(), "events --stats: " + why);
  CHECK_THROWS_WITH(m->oom_kills(), "events: " + why);
}

// ---- rootless: a subtree delegated to the caller ----

TEST_CASE("rootless v2: controllers are enabled where the caller may; a limit needing another names its field") {
  FakeTree t;
  t.mkdirs("/deleg");
  t.put("/deleg/cgroup.controllers", "pids");  // one: the fake file takes each write at offset 0
  t.put("/deleg/cgroup.subtree_control", "");
  // The root's subtree_control is not the caller's: without the file every write fails.
  t.put("/cgroup.controllers", "cpu memory pids");
  std::vector<std::string> debug;
  auto m = cg::make_manager({.path = "/deleg/c1",
                             .owner = "c1",
                             .rootless = true,
                             .debug = [&](const std::string& s) { debug.push_back(s); },
                             .hierarchies = t.unified()});
  REQUIRE_NOTHROW(m->prepare());
  CHECK(t.get("/deleg/cgroup.subtree_control") == "+pids");
  CHECK_FALSE(t.has("/cgroup.subtree_control"));
  t.put("/deleg/c1/cgroup.controllers", "memory pids");
  for (const char* f : {"/memory.max", "/pids.max"}) t.put("/deleg/c1" + std::string(f), "");
  husk::spec::Resources r = limits(64 << 20, 20, 0);
  r.devices = cg::effective_device_rules({}, {});
  m->apply(r);
  CHECK(t.get("/deleg/c1/memory.max") == "67108864");
  CHECK(t.get("/deleg/c1/pids.max") == "20");
  // No device program: nothing to attach to a plain directory, and said on debug.
  REQUIRE(debug.size() == 1);
  CHECK_THAT(debug[0], Catch::Contains("cgroup /deleg/c1: no device program"));
  husk::spec::Resources cpu = limits(0, 0, 1024);
  cpu.pids_limit.reset();
  CHECK_THROWS_WITH(m->apply(cpu), Catch::StartsWith("linux.resources.cpu: needs the cpu controller, which cgroup "
                                                     "/deleg/c1 does not have (its cgroup.controllers: memory pids)"));
}

TEST_CASE("rootless: marks with user.husk.owner, trusted only on a directory owned by the caller") {
  FakeTree t;
  t.mkdirs("/deleg");
  auto rootless = [&](const std::string& path) {
    return cg::make_manager({.path = path, .owner = "c1", .rootless = true, .hierarchies = t.unified()});
  };
  rootless("/deleg/c1")->prepare();
  CHECK(mark(t, "/deleg/c1") == "c1");
  CHECK(rootless("/deleg/c1")->owned());
  // Root's trusted.* mark is not looked at, nor a user.* mark seen by root husk.
  CHECK_FALSE(cg::make_manager({.path = "/deleg/c1", .owner = "c1", .hierarchies = t.unified()})->owned());
  if (::geteuid() != 0) HUSK_SKIP("giving the cgroup to another uid needs root");
  // Someone else's directory carrying the same mark (they could write it): not ours.
  REQUIRE(::lchown((t.root + "/deleg/c1").c_str(), ::geteuid() + 4242, -1) == 0);
  CHECK(mark(t, "/deleg/c1") == "c1");
  CHECK_FALSE(rootless("/deleg/c1")->owned());
  rootless("/deleg/c1")->destroy();
  CHECK(t.has("/deleg/c1"));
}

TEST_CASE("rootless: only the unified hierarchy can be delegated") {
  FakeTree t;
  CHECK_THROWS_WITH(cg::make_manager({.path = "/deleg/c1", .rootless = true, .hierarchies = hybrid(t)}),
                    Catch::Contains("rootless husk uses only a delegated cgroup v2 hierarchy, not v1"));
}

// ---- the owner mark: only what husk made for this container is its to empty and remove ----

TEST_CASE("v2: prepare marks each directory it makes with the owner, not those that were there") {
  FakeTree t;
  t.mkdirs("/husk");
  auto m = manager("/husk/a/b", t.unified());
  m->prepare();
  CHECK(mark(t, "/husk") == "-");
  CHECK(mark(t, "/husk/a") == "c1");
  CHECK(mark(t, "/husk/a/b") == "c1");
  CHECK(m->owned());
}

TEST_CASE("hybrid: prepare marks every directory it makes in every hierarchy, the unified one too") {
  FakeTree t;
  auto m = manager("/husk/x", hybrid(t));
  m->prepare();
  for (const char* root : {"/memory", "/pids", "/cpu,cpuacct", "/unified"})
    for (const char* p : {"/husk", "/husk/x"}) {
      INFO(root << p);
      CHECK(mark(t, root + std::string(p)) == "c1");
    }
  CHECK(m->owned());
}

TEST_CASE("prepare fails naming the directory and the xattr when the mark cannot be set, leaving nothing") {
  FakeTree t;
  t.mkdirs("/husk");
  // No such xattr namespace: EOPNOTSUPP, whoever runs the test.
  auto m = cg::make_manager({.path = "/husk/a/b", .owner = "c1", .owner_xattr = "bogus.owner",
                             .hierarchies = t.unified()});
  CHECK_THROWS_WITH(m->prepare(), Catch::Contains("set the xattr bogus.owner on " + t.root + "/husk/a"));
  CHECK_FALSE(t.has("/husk/a"));
  CHECK(m->created().empty());
}

TEST_CASE("v2: owned() only for a leaf this owner's prepare made") {
  FakeTree t;
  t.mkdirs("/husk/pre");  // someone else's
  CHECK_FALSE(manager("/husk/pre", t.unified())->owned());
  CHECK_FALSE(manager("/husk/gone", t.unified())->owned());
  manager("/husk/c", t.unified())->prepare();
  CHECK(manager("/husk/c", t.unified())->owned());
  CHECK_FALSE(manager("/husk/c", t.unified(), {}, "c2")->owned());
  CHECK_FALSE(manager("/husk/c", t.unified(), {}, "c")->owned());  // a prefix of the mark
  set_mark(t, "/husk/c", "c1x");
  CHECK_FALSE(manager("/husk/c", t.unified())->owned());
}

TEST_CASE("v1: owned() needs the mark wherever the leaf exists") {
  FakeTree t;
  for (const char* h : {"/memory", "/pids", "/cpu,cpuacct"}) t.mkdirs(h);
  manager("/husk/x", t.legacy())->prepare();
  CHECK(manager("/husk/x", t.legacy())->owned());
  // Gone from one hierarchy (a destroy stopped midway): the rest is still ours.
  REQUIRE(::rmdir((t.root + "/pids/husk/x").c_str()) == 0);
  CHECK(manager("/husk/x", t.legacy())->owned());
  // Unmarked in one hierarchy: not ours, as a host cgroup only partly there.
  REQUIRE(lremovexattr((t.root + "/memory/husk/x").c_str(), kMark) == 0);
  CHECK_FALSE(manager("/husk/x", t.legacy())->owned());
  CHECK_FALSE(manager("/husk/none", t.legacy())->owned());
}

TEST_CASE("a leaf made but not yet marked is owned while empty, and only with the sticky bit") {
  FakeTree t;
  auto m = manager("/husk/c", t.unified());
  m->prepare();
  struct stat st;
  REQUIRE(::stat((t.root + "/husk/c").c_str(), &st) == 0);
  CHECK((st.st_mode & S_ISVTX) == 0);  // the sticky bit goes once the mark is on
  // What a husk killed between prepare()'s mkdir and its mark leaves.
  REQUIRE(lremovexattr((t.root + "/husk/c").c_str(), kMark) == 0);
  CHECK_FALSE(manager("/husk/c", t.unified())->owned());
  REQUIRE(::chmod((t.root + "/husk/c").c_str(), 01755) == 0);
  CHECK(manager("/husk/c", t.unified())->owned());
  manager("/husk/c", t.unified(), {"/husk/c"})->destroy();
  CHECK_FALSE(t.has("/husk/c"));
  // With a process in it, the unnamed tag is not enough.
  t.mkdirs("/husk/d");
  REQUIRE(::chmod((t.root + "/husk/d").c_str(), 01755) == 0);
  t.put("/husk/d/cgroup.procs", "4242\n");
  CHECK_FALSE(manager("/husk/d", t.unified())->owned());
}

TEST_CASE("none: owns no cgroup") {
  CHECK_FALSE(cg::make_manager({.driver = cg::Driver::none, .owner = "c1"})->owned());
}

TEST_CASE("v2: destroy leaves directories listed in created that lack this owner's mark") {
  FakeTree t;
  t.mkdirs("/victim/leaf");  // a planted record names someone else's cgroups
  manager("/victim/leaf", t.unified(), {"/victim", "/victim/leaf"})->destroy();
  CHECK(t.has("/victim/leaf"));
  // Our leaf below someone else's empty cgroup, which the record claims too.
  t.mkdirs("/theirs");
  auto m = manager("/theirs/c", t.unified());
  m->prepare();
  CHECK(m->created() == std::vector<std::string>{"/theirs/c"});
  manager("/theirs/c", t.unified(), {"/theirs", "/theirs/c"})->destroy();
  CHECK_FALSE(t.has("/theirs/c"));
  CHECK(t.has("/theirs"));
  // Another container's.
  manager("/husk/d", t.unified(), {}, "c2")->prepare();
  manager("/husk/d", t.unified(), {"/husk", "/husk/d"})->destroy();
  CHECK(t.has("/husk/d"));
}

TEST_CASE("v1: destroy leaves directories listed in created that lack this owner's mark, in each hierarchy") {
  FakeTree t;
  for (const char* h : {"/memory", "/pids", "/cpu,cpuacct"}) t.mkdirs(h);
  auto m = manager("/husk/x", t.legacy());
  m->prepare();
  REQUIRE(lremovexattr((t.root + "/pids/husk/x").c_str(), kMark) == 0);
  REQUIRE(lremovexattr((t.root + "/pids/husk").c_str(), kMark) == 0);
  manager("/husk/x", t.legacy(), m->created())->destroy();
  CHECK(t.has("/pids/husk/x"));
  CHECK_FALSE(t.has("/memory/husk"));
  CHECK_FALSE(t.has("/cpu,cpuacct/husk"));
}
