// Root-only tests of the cgroups library against the real kernel. The same
// binary runs on the host (v1/hybrid) and in the cgroup v2 VM
// (test-cgroups-v2, next to this file); each test checks the files the mode
// uses and the behaviour a container relies on. Every cgroup lives under
// /husk-test/<random>.
#include <fcntl.h>
#include <linux/bpf.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <thread>

#include "cgroups/cgroups.h"
#include "skip.h"

namespace cg = husk::cgroups;
namespace spec = husk::spec;

namespace {

const cg::Mode kMode = cg::detect_mode();
const bool kV2 = kMode == cg::Mode::unified;

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

bool exists(const std::string& p) { return access(p.c_str(), F_OK) == 0; }

// Where a controller's files for `path` are in this mode.
std::string dir_of(const std::string& controller, const std::string& path) {
  if (kV2) return "/sys/fs/cgroup" + path;
  if (controller == "unified") return "/sys/fs/cgroup/unified" + path;
  return "/sys/fs/cgroup/" + controller + path;
}

std::string file(const std::string& controller, const std::string& path, const std::string& name) {
  return dir_of(controller, path) + "/" + name;
}

void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

// A cgroup of our own, killed and removed whatever the test outcome.
struct TestCgroup {
  std::string path;
  std::unique_ptr<cg::Manager> m;
  TestCgroup() {
    std::random_device rd;
    path = "/husk-test/t" + std::to_string(getpid()) + "-" + std::to_string(rd() % 1000000);
    m = cg::make_manager({.path = path});
    m->prepare();
  }
  ~TestCgroup() {
    try {
      if (m->frozen()) m->thaw();
      m->kill_all(SIGKILL);
      m->destroy();
    } catch (const std::exception& e) {
      WARN("cleanup of " << path << ": " << e.what());
    }
  }
};

// A child that waits for "go" before running fn(), so the parent can move it
// into the cgroup first. exit status = fn()'s return value.
struct Child {
  pid_t pid = -1;
  int go = -1;
  Child(cg::Manager& m, const std::function<int()>& fn) {
    int p[2];
    REQUIRE(pipe2(p, O_CLOEXEC) == 0);
    pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      // Catch2's handlers would report the test signals as test failures.
      for (int sig : {SIGTERM, SIGINT, SIGSEGV, SIGABRT}) signal(sig, SIG_DFL);
      close(p[1]);
      char c;
      if (read(p[0], &c, 1) != 1) _exit(120);
      _exit(fn());
    }
    close(p[0]);
    go = p[1];
    m.attach(pid, false);
    REQUIRE(write(go, "g", 1) == 1);
    close(go);
  }
  // Raw waitpid status.
  int wait() {
    int st = 0;
    REQUIRE(waitpid(pid, &st, 0) == pid);
    pid = -1;
    return st;
  }
  int exit_code() {
    int st = wait();
    INFO("status " << st);
    REQUIRE(WIFEXITED(st));
    return WEXITSTATUS(st);
  }
  ~Child() {
    if (pid > 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  }
};

// errno of open(path, flags) in a child placed in the cgroup (0: it opened).
int open_errno_in(cg::Manager& m, const char* path, int flags) {
  Child c(m, [&] {
    int fd = open(path, flags | O_CLOEXEC);
    return fd >= 0 ? 0 : errno;
  });
  return c.exit_code();
}

spec::Resources base_limits() {
  spec::Resources r;
  r.memory = spec::Memory{};
  r.memory->limit = 64 << 20;
  r.pids_limit = 20;
  r.cpu = spec::Cpu{};
  r.cpu->quota = 50000;
  r.cpu->period = 100000;
  r.cpu->cpus = "0";
  r.cpu->mems = "0";
  return r;
}

spec::DeviceRule rule(bool allow, const char* type, std::optional<int64_t> major, std::optional<int64_t> minor,
                      const char* access) {
  return {allow, type, major, minor, access};
}

bool is_root() { return geteuid() == 0; }

}  // namespace

TEST_CASE("mode detection") {
  INFO("mode " << int(kMode));
  if (exists("/sys/fs/cgroup/cgroup.controllers")) CHECK(kMode == cg::Mode::unified);
  else if (exists("/sys/fs/cgroup/unified/cgroup.controllers")) CHECK(kMode == cg::Mode::hybrid);
  else CHECK(kMode == cg::Mode::legacy);
  WARN("cgroup mode: " << (kV2 ? "unified" : kMode == cg::Mode::hybrid ? "hybrid" : "legacy"));
}

TEST_CASE("limits land in the cgroup files and the child is inside") {
  if (!is_root()) HUSK_SKIP("needs root");
  TestCgroup t;
  auto r = base_limits();
  t.m->apply(r);
  if (kV2) {
    CHECK(slurp(file("", t.path, "memory.max")) == "67108864");
    CHECK(slurp(file("", t.path, "pids.max")) == "20");
    CHECK(slurp(file("", t.path, "cpu.max")) == "50000 100000");
    CHECK(slurp(file("", t.path, "cpuset.cpus")) == "0");
    CHECK(slurp(file("", t.path, "cpuset.mems")) == "0");
  } else {
    CHECK(slurp(file("memory", t.path, "memory.limit_in_bytes")) == "67108864");
    CHECK(slurp(file("pids", t.path, "pids.max")) == "20");
    CHECK(slurp(file("cpu", t.path, "cpu.cfs_quota_us")) == "50000");
    CHECK(slurp(file("cpu", t.path, "cpu.cfs_period_us")) == "100000");
    CHECK(slurp(file("cpuset", t.path, "cpuset.cpus")) == "0");
  }
  auto st = t.m->stats();
  CHECK(st.memory_limit == 64 << 20);
  CHECK(st.pids_limit == 20);

  int pipefd[2];
  REQUIRE(pipe2(pipefd, O_CLOEXEC) == 0);
  Child c(*t.m, [&] {
    char b;
    return read(pipefd[0], &b, 1) == 1 ? 0 : 1;
  });
  auto pids = t.m->pids();
  CHECK(std::find(pids.begin(), pids.end(), c.pid) != pids.end());
  std::string own = slurp("/proc/" + std::to_string(c.pid) + "/cgroup");
  CHECK(own.find(t.path) != std::string::npos);
  if (kMode == cg::Mode::hybrid) CHECK(own.find("0::" + t.path) != std::string::npos);  // unified too
  CHECK(t.m->stats().pids_current >= 1);
  REQUIRE(write(pipefd[1], "x", 1) == 1);
  CHECK(c.exit_code() == 0);
  close(pipefd[0]);
  close(pipefd[1]);
}

TEST_CASE("checkBeforeUpdate refuses a limit below the usage") {
  if (!is_root()) HUSK_SKIP("needs root");
  TestCgroup t;
  int ready[2], go[2];
  REQUIRE(pipe2(ready, O_CLOEXEC) == 0);
  REQUIRE(pipe2(go, O_CLOEXEC) == 0);
  Child c(*t.m, [&] {
    // Hold 16 MiB of touched memory until told to go.
    char* p = static_cast<char*>(mmap(nullptr, 16 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    std::memset(p, 1, 16 << 20);
    char b;
    if (write(ready[1], "r", 1) != 1) return 2;
    return read(go[0], &b, 1) == 1 ? 0 : 1;
  });
  char b;
  REQUIRE(read(ready[0], &b, 1) == 1);
  spec::Resources r;
  r.memory = spec::Memory{};
  r.memory->limit = 4 << 20;
  r.memory->check_before_update = true;
  CHECK_THROWS_WITH(t.m->apply(r), Catch::Contains("below the current usage"));
  r.memory->limit = 256 << 20;
  CHECK_NOTHROW(t.m->apply(r));
  REQUIRE(write(go[1], "x", 1) == 1);
  CHECK(c.exit_code() == 0);
  for (int fd : {ready[0], ready[1], go[0], go[1]}) close(fd);
}

TEST_CASE("device rules: a denied device cannot be opened, an allowed one can") {
  if (!is_root()) HUSK_SKIP("needs root");
  TestCgroup t;
  spec::Resources r;
  r.devices = cg::effective_device_rules({}, {});
  r.devices.push_back(rule(false, "c", 1, 3, "rw"));  // /dev/null, after the defaults
  t.m->apply(r);
  if (!kV2) {
    std::string list = slurp(file("devices", t.path, "devices.list"));
    INFO(list);
    CHECK(list.find("c 1:3 m") != std::string::npos);
    CHECK(list.find("c 1:3 rwm") == std::string::npos);
    CHECK(list.find("c 1:5 rwm") != std::string::npos);
    CHECK(list.find("a *:* rwm") == std::string::npos);
  }
  CHECK(open_errno_in(*t.m, "/dev/null", O_RDWR) == EPERM);
  CHECK(open_errno_in(*t.m, "/dev/null", O_RDONLY) == EPERM);
  CHECK(open_errno_in(*t.m, "/dev/zero", O_RDWR) == 0);
  CHECK(open_errno_in(*t.m, "/dev/full", O_WRONLY) == 0);

  // An update replaces the policy: /dev/null allowed again, /dev/zero not.
  r.devices = cg::effective_device_rules({}, {});
  r.devices.push_back(rule(false, "c", 1, 5, "rwm"));
  t.m->apply(r);
  CHECK(open_errno_in(*t.m, "/dev/null", O_RDWR) == 0);
  CHECK(open_errno_in(*t.m, "/dev/zero", O_RDONLY) == EPERM);
  // An update without device rules leaves them alone.
  spec::Resources pids_only;
  pids_only.pids_limit = 50;
  t.m->apply(pids_only);
  CHECK(open_errno_in(*t.m, "/dev/zero", O_RDONLY) == EPERM);
}

TEST_CASE("a fork bomb stops at pids.max") {
  if (!is_root()) HUSK_SKIP("needs root");
  TestCgroup t;
  spec::Resources r;
  r.pids_limit = 20;
  t.m->apply(r);
  Child c(*t.m, [] {
    std::vector<pid_t> kids;
    int result = 200;
    for (int i = 0; i < 100; ++i) {
      pid_t k = fork();
      if (k == 0) {
        pause();
        _exit(0);
      }
      if (k < 0) {
        result = errno == EAGAIN ? i : 201;
        break;
      }
      kids.push_back(k);
    }
    for (pid_t k : kids) kill(k, SIGKILL);
    for (pid_t k : kids) waitpid(k, nullptr, 0);
    return result;
  });
  CHECK(c.exit_code() == 19);  // the child itself is the 20th task
}

TEST_CASE("memory limit: a child allocating past it is OOM-killed") {
  if (!is_root()) HUSK_SKIP("needs root");
  TestCgroup t;
  spec::Resources r;
  r.memory = spec::Memory{};
  r.memory->limit = 32 << 20;
  // No swap either, or the child would just swap out.
  if (kV2 || exists(file("memory", t.path, "memory.memsw.limit_in_bytes"))) r.memory->swap = 32 << 20;
  t.m->apply(r);
  Child c(*t.m, [] {
    size_t len = 128 << 20;
    char* p = static_cast<char*>(mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    if (p == MAP_FAILED) return 3;
    for (size_t i = 0; i < len; i += 4096) p[i] = 1;
    return 0;
  });
  int st = c.wait();
  INFO("status " << st);
  CHECK(WIFSIGNALED(st));
  CHECK((WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL));
  CHECK(t.m->oom_kills() >= 1);
  CHECK(t.m->stats().oom_kill >= 1);
}

TEST_CASE("freeze stops the tasks, thaw resumes them") {
  if (!is_root()) HUSK_SKIP("needs root");
  TestCgroup t;
  auto* counter = static_cast<uint64_t*>(
      mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  REQUIRE(counter != MAP_FAILED);
  Child c(*t.m, [&] {
    for (;;) __atomic_fetch_add(counter, 1, __ATOMIC_RELAXED);
    return 0;
  });
  auto load = [&] { return __atomic_load_n(counter, __ATOMIC_RELAXED); };
  while (load() == 0) sleep_ms(1);
  t.m->freeze();
  CHECK(t.m->frozen());
  if (kV2) CHECK(slurp(file("", t.path, "cgroup.events")).find("frozen 1") != std::string::npos);
  else if (kMode != cg::Mode::unified && exists("/sys/fs/cgroup/freezer"))
    CHECK(slurp(file("freezer", t.path, "freezer.state")) == "FROZEN");
  uint64_t a = load();
  sleep_ms(200);
  CHECK(load() == a);
  t.m->thaw();
  CHECK_FALSE(t.m->frozen());
  sleep_ms(100);
  CHECK(load() != a);
  t.m->kill_all(SIGKILL);
  int st = c.wait();
  CHECK((WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL));
  munmap(counter, 4096);
}

TEST_CASE("kill_all reaches every task, also for signals other than SIGKILL") {
  if (!is_root()) HUSK_SKIP("needs root");
  TestCgroup t;
  Child a(*t.m, [] { return pause(); });
  Child b(*t.m, [] { return pause(); });
  sleep_ms(20);
  t.m->kill_all(SIGTERM);
  int sa = a.wait(), sb = b.wait();
  CHECK((WIFSIGNALED(sa) && WTERMSIG(sa) == SIGTERM));
  CHECK((WIFSIGNALED(sb) && WTERMSIG(sb) == SIGTERM));
  CHECK_FALSE(t.m->frozen());  // kill_all thaws what it froze

  Child c(*t.m, [] { return pause(); });
  sleep_ms(20);
  t.m->kill_all(SIGKILL);  // cgroup.kill on v2
  int sc = c.wait();
  CHECK((WIFSIGNALED(sc) && WTERMSIG(sc) == SIGKILL));
  for (int i = 0; i < 100 && !t.m->pids().empty(); ++i) sleep_ms(10);
  CHECK(t.m->pids().empty());
}

TEST_CASE("destroy removes the cgroup and the ancestors it created, and only those") {
  if (!is_root()) HUSK_SKIP("needs root");
  std::unique_ptr<cg::Manager> m;
  std::string top = "/husk-test/d" + std::to_string(getpid());
  {
    auto outer = cg::make_manager({.path = top + "/keep"});
    outer->prepare();  // an unrelated sibling that must survive
    m = cg::make_manager({.path = top + "/a/b"});
    m->prepare();
    auto made = m->created();
    CHECK(std::find(made.begin(), made.end(), top + "/a") != made.end());
    CHECK(std::find(made.begin(), made.end(), top) == made.end());
    Child c(*m, [] { return 0; });
    CHECK(c.exit_code() == 0);
    // A cgroup the container made inside its own (a nested runtime) goes too.
    cg::make_manager({.path = top + "/a/b/nested/deeper"})->prepare();
    // A later process only knows what the state recorded.
    auto again = cg::make_manager({.path = top + "/a/b", .created = made});
    again->destroy();
    CHECK_NOTHROW(again->destroy());  // missing is fine
    for (const char* ctrl : {"memory", "pids", "unified"}) {
      if (kV2 && std::string(ctrl) != "memory") continue;
      if (std::string(ctrl) == "unified" && kMode != cg::Mode::hybrid) continue;
      INFO(ctrl);
      CHECK_FALSE(exists(dir_of(ctrl, top + "/a/b/nested")));
      CHECK_FALSE(exists(dir_of(ctrl, top + "/a/b")));
      CHECK_FALSE(exists(dir_of(ctrl, top + "/a")));
      CHECK(exists(dir_of(ctrl, top + "/keep")));
    }
    made = outer->created();
    CHECK(std::find(made.begin(), made.end(), top) != made.end());
    outer->destroy();
    CHECK_FALSE(exists(dir_of("memory", top)));
  }
}

TEST_CASE("clone_into_fd is the cgroup's directory on v2, its unified one on hybrid hosts, -1 on v1") {
  if (!is_root()) HUSK_SKIP("needs root");
  TestCgroup t;
  int fd = t.m->clone_into_fd();
  if (kMode == cg::Mode::legacy) {
    CHECK(fd == -1);
    return;
  }
  REQUIRE(fd >= 0);
  struct stat st, want;
  REQUIRE(fstat(fd, &st) == 0);
  CHECK(S_ISDIR(st.st_mode));
  REQUIRE(stat((kV2 ? "/sys/fs/cgroup" + t.path : "/sys/fs/cgroup/unified" + t.path).c_str(), &want) == 0);
  CHECK(st.st_ino == want.st_ino);
  CHECK((fcntl(fd, F_GETFD) & FD_CLOEXEC));
  close(fd);
}

TEST_CASE("hybrid: hugetlb limits go to the unified hierarchy when v1 lacks hugetlb") {
  if (!is_root()) HUSK_SKIP("needs root");
  if (kMode != cg::Mode::hybrid || exists("/sys/fs/cgroup/hugetlb") ||
      slurp("/sys/fs/cgroup/unified/cgroup.controllers").find("hugetlb") == std::string::npos ||
      !exists("/sys/kernel/mm/hugepages/hugepages-2048kB")) HUSK_SKIP("not a hybrid host with hugetlb only in the unified hierarchy");
  TestCgroup t;
  spec::Resources r;
  r.hugepage_limits.push_back({"2MB", 4 << 20});
  t.m->apply(r);
  CHECK(slurp(file("unified", t.path, "hugetlb.2MB.max")) == std::to_string(4 << 20));
}

// ---- cgroup v2 only ----

TEST_CASE("v2: io.max throttles reads of the scratch disk") {
  if (!kV2 || !is_root() || !exists("/dev/vda")) HUSK_SKIP("needs cgroup v2 and /dev/vda (the VM)");
  TestCgroup t;
  struct stat st;
  REQUIRE(stat("/dev/vda", &st) == 0);
  spec::Resources r;
  r.block_io = spec::BlockIo{};
  r.block_io->throttle_read_bps.push_back({int64_t(major(st.st_rdev)), int64_t(minor(st.st_rdev)), 512 << 10});
  t.m->apply(r);
  std::string devnum = std::to_string(major(st.st_rdev)) + ":" + std::to_string(minor(st.st_rdev));
  CHECK(slurp(file("", t.path, "io.max")) == devnum + " rbps=524288 wbps=max riops=max wiops=max");
  auto start = std::chrono::steady_clock::now();
  Child c(*t.m, [] {
    int fd = open("/dev/vda", O_RDONLY | O_DIRECT | O_CLOEXEC);
    if (fd < 0) return 1;
    void* buf;
    if (posix_memalign(&buf, 4096, 1 << 20) != 0) return 2;
    for (int i = 0; i < 2; ++i)
      if (read(fd, buf, 1 << 20) != 1 << 20) return 3;
    return 0;
  });
  CHECK(c.exit_code() == 0);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  INFO("2 MiB at 512 KiB/s took " << secs << " s");
  CHECK(secs >= 1.5);
}

TEST_CASE("v2: the device filter allows exactly the rule's access") {
  if (!kV2 || !is_root() || !exists("/dev/vda")) HUSK_SKIP("needs cgroup v2 and /dev/vda (the VM)");
  TestCgroup t;
  struct stat st;
  REQUIRE(stat("/dev/vda", &st) == 0);
  int64_t maj = major(st.st_rdev), min = minor(st.st_rdev);
  spec::Resources r;
  r.devices = cg::effective_device_rules({}, {});
  t.m->apply(r);
  CHECK(open_errno_in(*t.m, "/dev/vda", O_RDONLY) == EPERM);
  CHECK(open_errno_in(*t.m, "/dev/null", O_RDWR) == 0);

  r.devices = cg::effective_device_rules({rule(true, "b", maj, min, "r")}, {});
  t.m->apply(r);
  CHECK(open_errno_in(*t.m, "/dev/vda", O_RDONLY) == 0);
  CHECK(open_errno_in(*t.m, "/dev/vda", O_WRONLY) == EPERM);
  CHECK(open_errno_in(*t.m, "/dev/vda", O_RDWR) == EPERM);

  // Exactly one program stays attached after the replacement.
  int fd = open(dir_of("", t.path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  uint32_t ids[8] = {};
  union bpf_attr attr;
  std::memset(&attr, 0, sizeof(attr));
  attr.query.target_fd = fd;
  attr.query.attach_type = BPF_CGROUP_DEVICE;
  attr.query.prog_ids = reinterpret_cast<uint64_t>(ids);
  attr.query.prog_cnt = 8;
  REQUIRE(syscall(SYS_bpf, BPF_PROG_QUERY, &attr, sizeof(attr)) == 0);
  CHECK(attr.query.prog_cnt == 1);
  close(fd);
}

TEST_CASE("v2: stats read cpu, memory, pids and io") {
  if (!kV2 || !is_root()) HUSK_SKIP("needs cgroup v2");
  TestCgroup t;
  t.m->apply(base_limits());
  Child c(*t.m, [] {
    auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
    while (std::chrono::steady_clock::now() < end) {
    }
    return 0;
  });
  CHECK(c.exit_code() == 0);
  auto s = t.m->stats();
  CHECK(s.cpu_usage_ns > 0);
  CHECK(s.memory_limit == 64 << 20);
  CHECK(s.pids_limit == 20);
  CHECK_FALSE(s.memory_raw.empty());
}

TEST_CASE("a cgroup that is already gone: kill_all, destroy, pids and frozen are no-ops") {
  if (!is_root()) HUSK_SKIP("needs root");
  auto m = cg::make_manager({.path = "/husk-test/gone" + std::to_string(getpid())});
  CHECK_NOTHROW(m->kill_all(SIGKILL));
  CHECK_NOTHROW(m->kill_all(SIGTERM));
  CHECK_NOTHROW(m->destroy());
  CHECK(m->pids().empty());
  CHECK_FALSE(m->frozen());
}
