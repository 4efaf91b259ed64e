// seccomp::load(): filters really loaded into forked children. No root is
// needed: an unprivileged process may load a filter once no_new_privs is set.
#include <fcntl.h>
#include <grp.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <seccomp.h>
#include <signal.h>
#include <sched.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "helpers.h"
#include "skip.h"
#include "seccomp/seccomp.h"
#include "spec/defaults.h"

using namespace husk;
using namespace seccomp_test;

namespace {

// Run fn in a forked child (with no_new_privs unless told otherwise) and
// return its wait status; fn's result is the exit code, 0 meaning success.
// Failures print why on stderr.
int in_child(const std::function<int()>& fn, bool no_new_privs = true) {
  pid_t pid = fork();
  if (pid < 0) FAIL("fork: " << strerror(errno));
  if (pid == 0) {
    int rc = 120;
    if (no_new_privs && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) _exit(121);
    try {
      rc = fn();
    } catch (const std::exception& e) {
      fprintf(stderr, "child: %s\n", e.what());
      rc = 122;
    }
    _exit(rc);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

// "exit 0" for success; assertions compare against it so a failure shows
// the child's code or signal.
std::string status_text(int status) {
  if (WIFEXITED(status)) return "exit " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "signal " + std::to_string(WTERMSIG(status));
  return "status " + std::to_string(status);
}

// errno of a call expected to fail, 0 when it succeeded.
template <class F>
int errno_of(F f) {
  errno = 0;
  return f() < 0 ? errno : 0;
}

}  // namespace

TEST_CASE("load: ERRNO rule makes mkdir fail with EPERM, rest allowed", "[seccomp][load]") {
  TempDir dir("husk-seccomp-");
  const std::string target = dir.path + "/x";
  auto p = seccomp::plan(config("SCMP_ACT_ALLOW", {call({"mkdir", "mkdirat"}, "SCMP_ACT_ERRNO"),
                                                    call({"getpid"}, "SCMP_ACT_ALLOW")}));
  int st = in_child([&] {
    if (seccomp::load(p) != -1) return 1;
    if (int e = errno_of([&] { return mkdir(target.c_str(), 0700); }); e != EPERM) {
      fprintf(stderr, "mkdir: errno %d\n", e);
      return 2;
    }
    if (getpid() <= 0) return 3;
    if (int e = errno_of([&] { return access(dir.path.c_str(), F_OK); }); e != 0) return 4;
    return 0;
  });
  CHECK(status_text(st) == "exit 0");
  CHECK(access(target.c_str(), F_OK) != 0);
  // The directory was writable: only the filter stopped the child.
  CHECK(mkdir(target.c_str(), 0700) == 0);
}

TEST_CASE("load: errnoRet is what the syscall returns", "[seccomp][load]") {
  auto p = seccomp::plan(config("SCMP_ACT_ALLOW", {call({"mkdir", "mkdirat"}, "SCMP_ACT_ERRNO", ENOSYS)}));
  int st = in_child([&] {
    seccomp::load(p);
    return errno_of([] { return mkdir("/tmp/husk-seccomp-never", 0700); }) == ENOSYS ? 0 : 1;
  });
  CHECK(status_text(st) == "exit 0");
}

TEST_CASE("load: SCMP_ACT_KILL_PROCESS kills the child with SIGSYS", "[seccomp][load]") {
  auto p = seccomp::plan(config("SCMP_ACT_ALLOW", {call({"uname"}, "SCMP_ACT_KILL_PROCESS")}));
  int st = in_child([&] {
    seccomp::load(p);
    struct utsname u;
    uname(&u);
    return 1;  // not reached
  });
  REQUIRE(WIFSIGNALED(st));
  CHECK(WTERMSIG(st) == SIGSYS);
}

TEST_CASE("load: argument conditions", "[seccomp][load]") {
  SECTION("args on one index are ORed (personality 8 or 0x40000 refused)") {
    auto p = seccomp::plan(config(
        "SCMP_ACT_ALLOW",
        {call({"personality"}, "SCMP_ACT_ERRNO", EDOM,
              {{0, PER_LINUX32, 0, "SCMP_CMP_EQ"}, {0, ADDR_NO_RANDOMIZE, 0, "SCMP_CMP_EQ"}})}));
    int st = in_child([&] {
      seccomp::load(p);
      if (personality(0xffffffff) < 0) return 1;
      if (errno_of([] { return personality(PER_LINUX32); }) != EDOM) return 2;
      if (errno_of([] { return personality(ADDR_NO_RANDOMIZE); }) != EDOM) return 3;
      if (personality(PER_LINUX) < 0) return 4;
      return 0;
    });
    CHECK(status_text(st) == "exit 0");
  }
  SECTION("args on distinct indexes are ANDed (getpriority(PRIO_PROCESS, 12345) only)") {
    auto p = seccomp::plan(config(
        "SCMP_ACT_ALLOW", {call({"getpriority"}, "SCMP_ACT_ERRNO", EDOM,
                                {{0, PRIO_PROCESS, 0, "SCMP_CMP_EQ"}, {1, 12345, 0, "SCMP_CMP_EQ"}})}));
    int st = in_child([&] {
      seccomp::load(p);
      if (errno_of([] { return getpriority(PRIO_PROCESS, 12345) == -1 ? -1 : 0; }) != EDOM) return 1;
      if (errno_of([] { return getpriority(PRIO_PROCESS, 0) == -1 ? -1 : 0; }) != 0) return 2;
      if (errno_of([] { return getpriority(PRIO_PGRP, 12345) == -1 ? -1 : 0; }) == EDOM) return 3;
      return 0;
    });
    CHECK(status_text(st) == "exit 0");
  }
  SECTION("MASKED_EQ: value is the mask, valueTwo the expected bits") {
    // Refuse datagram sockets whatever the extra type flags.
    auto p = seccomp::plan(config(
        "SCMP_ACT_ALLOW", {call({"socket"}, "SCMP_ACT_ERRNO", EDOM, {{1, 0xf, SOCK_DGRAM, "SCMP_CMP_MASKED_EQ"}})}));
    int st = in_child([&] {
      seccomp::load(p);
      if (errno_of([] { return socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0); }) != EDOM) return 1;
      if (socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0) < 0) return 2;
      return 0;
    });
    CHECK(status_text(st) == "exit 0");
  }
}

TEST_CASE("load: extra architectures and flags are accepted by the kernel", "[seccomp][load]") {
  auto c = config("SCMP_ACT_ALLOW", {call({"mkdir", "mkdirat", "socketcall"}, "SCMP_ACT_ERRNO")});
  c.architectures = {"SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"};
  c.flags = seccomp::supported_flags();
  auto p = seccomp::plan(c);
  int st = in_child([&] {
    seccomp::load(p);
    return errno_of([] { return mkdir("/tmp/husk-seccomp-never", 0700); }) == EPERM ? 0 : 1;
  });
  CHECK(status_text(st) == "exit 0");
}

TEST_CASE("load: SECCOMP_FILTER_FLAG_TSYNC reaches threads started before", "[seccomp][load]") {
  TempDir dir("husk-seccomp-");
  // Another thread waits for the filter, then tries mkdir; returns its errno.
  auto run = [&](bool tsync) {
    auto c = config("SCMP_ACT_ALLOW", {call({"mkdir", "mkdirat"}, "SCMP_ACT_ERRNO")});
    if (tsync) c.flags = {"SECCOMP_FILTER_FLAG_TSYNC"};
    auto p = seccomp::plan(c);
    const std::string target = dir.path + (tsync ? "/tsync" : "/plain");
    return in_child([&] {
      int go[2];
      if (pipe2(go, O_CLOEXEC) != 0) return 100;
      int err = -1;
      std::thread t([&] {
        char b;
        if (read(go[0], &b, 1) == 1) err = errno_of([&] { return mkdir(target.c_str(), 0700); });
      });
      seccomp::load(p);
      if (write(go[1], "x", 1) != 1) return 101;
      t.join();
      return err;
    });
  };
  int with = run(true);
  REQUIRE(WIFEXITED(with));
  CHECK(WEXITSTATUS(with) == EPERM);
  int without = run(false);
  REQUIRE(WIFEXITED(without));
  CHECK(WEXITSTATUS(without) == 0);  // the filter only covered the loading thread
}

TEST_CASE("load: without no_new_privs an unprivileged process is refused", "[seccomp][load]") {
  auto p = seccomp::plan(config("SCMP_ACT_ALLOW", {call({"mkdir"}, "SCMP_ACT_ERRNO")}));
  int st = in_child(
      [&] {
        // Drop root (and with it CAP_SYS_ADMIN) when the tests run as root.
        if (geteuid() == 0 && (setgroups(0, nullptr) != 0 || setresgid(65534, 65534, 65534) != 0 ||
                               setresuid(65534, 65534, 65534) != 0))
          return 1;
        try {
          seccomp::load(p);
        } catch (const Error& e) {
          if (std::string(e.what()) == "seccomp: load filter: Permission denied" && e.err() == EACCES)
            return 0;
          fprintf(stderr, "unexpected: %s\n", e.what());
          return 2;
        }
        return 3;
      },
      /*no_new_privs=*/false);
  CHECK(status_text(st) == "exit 0");
}

TEST_CASE("load: a plan carrying a flag libseccomp cannot set is refused", "[seccomp][load]") {
  seccomp::Plan p;
  p.default_action = SCMP_ACT_ALLOW;
  p.flags = SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV;
  int st = in_child([&] {
    try {
      seccomp::load(p);
    } catch (const Error& e) {
      return std::string(e.what()).find("not supported") != std::string::npos ? 0 : 2;
    }
    return 1;
  });
  CHECK(status_text(st) == "exit 0");
}

namespace {

int listen_unix(const std::string& path) {
  int lsock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(lsock >= 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strcpy(addr.sun_path, path.c_str());
  REQUIRE(bind(lsock, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  REQUIRE(listen(lsock, 1) == 0);
  return lsock;
}

bool wait_readable(int fd) {
  pollfd pfd{fd, POLLIN, 0};
  return poll(&pfd, 1, 10000) == 1;
}

// The container process: load the filter, hand the listener to the agent,
// then ask getppid(), which only the agent can answer (with 4242).
[[noreturn]] void notifying_child(const seccomp::Plan& p, const spec::Seccomp& c) {
  int rc = 0;
  try {
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) _exit(10);
    int fd = seccomp::load(p);
    if (fd < 0) _exit(11);
    if (!(fcntl(fd, F_GETFD) & FD_CLOEXEC)) _exit(12);
    const std::string state = R"({"ociVersion":"1.2.0","id":"c1","status":"creating","pid":)" +
                              std::to_string(getpid()) + R"(,"bundle":"/b"})";
    seccomp::send_to_listener(c.listener_path, fd,
                              seccomp::process_state_json("1.2.0", getpid(), c.listener_metadata, state));
    close(fd);
    long got = syscall(SYS_getppid);
    rc = got == 4242 ? 0 : 13;
  } catch (const std::exception& e) {
    fprintf(stderr, "child: %s\n", e.what());
    rc = 14;
  }
  _exit(rc);
}

// The agent's side of one notification: child's getppid() returns 4242.
void answer_getppid(int notify_fd, pid_t child) {
  seccomp_notif* req = nullptr;
  seccomp_notif_resp* resp = nullptr;
  REQUIRE(seccomp_notify_alloc(&req, &resp) == 0);
  REQUIRE(seccomp_notify_receive(notify_fd, req) == 0);
  CHECK(req->pid == static_cast<uint32_t>(child));
  CHECK(req->data.nr == SYS_getppid);
  resp->id = req->id;
  resp->val = 4242;
  resp->error = 0;
  resp->flags = 0;
  CHECK(seccomp_notify_respond(notify_fd, resp) == 0);
  seccomp_notify_free(req, resp);
}

}  // namespace

// The whole notify path: the child loads a filter with NOTIFY on getppid and
// hands the listener fd to an agent socket with send_to_listener(); this
// process plays the agent and answers the child's getppid() with 4242.
TEST_CASE("load: SCMP_ACT_NOTIFY hands a working listener fd to the agent", "[seccomp][load][notify]") {
  TempDir dir("husk-seccomp-");
  const std::string sock_path = dir.path + "/agent.sock";
  int lsock = listen_unix(sock_path);

  auto c = config("SCMP_ACT_ALLOW", {call({"getppid"}, "SCMP_ACT_NOTIFY")});
  c.listener_path = sock_path;
  c.listener_metadata = "meta=1";
  auto p = seccomp::plan(c);
  REQUIRE(p.notify);

  pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    close(lsock);
    notifying_child(p, c);
  }

  bool ok = wait_readable(lsock);
  CHECK(ok);
  int conn = ok ? accept4(lsock, nullptr, nullptr, SOCK_CLOEXEC) : -1;
  close(lsock);
  int notify_fd = -1;
  std::string payload;
  if (conn >= 0) {
    Received got = receive_all(conn);  // the runtime closed its end after one state
    CHECK(got.fds.size() == 1);        // exactly one fd, once
    CHECK(got.messages_with_fds == 1);
    if (!got.fds.empty()) notify_fd = got.fds[0];
    payload = got.payload;
  }
  CHECK(notify_fd >= 0);

  if (notify_fd >= 0 && wait_readable(notify_fd)) {
    answer_getppid(notify_fd, child);
  } else {
    kill(child, SIGKILL);
    FAIL_CHECK("no notification arrived");
  }
  if (notify_fd >= 0) close(notify_fd);

  int st = 0;
  waitpid(child, &st, 0);
  CHECK(status_text(st) == "exit 0");

  auto j = nlohmann::json::parse(payload);
  CHECK(j["ociVersion"] == "1.2.0");
  CHECK(j["fds"] == nlohmann::json::array({"seccompFd"}));
  CHECK(j["pid"] == child);
  CHECK(j["metadata"] == "meta=1");
  CHECK(j["state"]["id"] == "c1");
  CHECK(j["state"]["pid"] == child);
}

namespace {

// Default ERRNO(EPERM); every syscall numbered up to 300 (natively) is allowed
// except mkdir.
spec::Seccomp allow_up_to_300() {
  spec::Seccomp c;
  c.default_action = "SCMP_ACT_ERRNO";
  spec::SeccompSyscall allow;
  allow.action = "SCMP_ACT_ALLOW";
  for (int nr = 0; nr <= 300; ++nr) {
    char* n = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);
    if (!n) continue;
    if (std::string(n) != "mkdir") allow.names.push_back(n);
    free(n);
  }
  c.syscalls.push_back(allow);
  return c;
}

#if defined(__x86_64__)
// A syscall through the i386 entry point (arch AUDIT_ARCH_I386).
long i386_syscall(long nr, long arg) {
  long ret;
  __asm__ volatile("int $0x80" : "=a"(ret) : "a"(nr), "b"(arg) : "memory");
  return ret;
}
#endif

}  // namespace

TEST_CASE("load: syscalls newer than the profile fail with ENOSYS, not the default", "[seccomp][load]") {
  auto p = seccomp::plan(allow_up_to_300());
  int st = in_child([&] {
    seccomp::load(p);
    if (errno_of([] { return mkdir("/tmp/husk-seccomp-never", 0700); }) != EPERM) return 1;
    // Above the highest named syscall: libc's fallbacks need ENOSYS.
    for (long nr : {301L, 437L /* openat2 */, 452L /* fchmodat2 */, 1000L})
      if (errno_of([&] { return syscall(nr, 0, 0, 0, 0); }) != ENOSYS) return 2;
    if (getpid() <= 0) return 3;
    return 0;
  });
  CHECK(status_text(st) == "exit 0");
}

#if defined(__x86_64__)
TEST_CASE("load: the ENOSYS limit of the x86 arch is its own", "[seccomp][load]") {
  // Probed in a child: a kernel without IA-32 emulation (CONFIG_IA32_EMULATION
  // off, or ia32_emulation=0) answers int 0x80 with SIGSEGV.
  const int probe = in_child([] { return i386_syscall(20 /* getpid */, 0) == getpid() ? 0 : 1; });
  if (status_text(probe) != "exit 0")
    HUSK_SKIP("no i386 syscall entry on this kernel (int 0x80: " + status_text(probe) + ")");
  auto c = allow_up_to_300();
  c.architectures = {"SCMP_ARCH_X86_64", "SCMP_ARCH_X86"};
  auto p = seccomp::plan(c);
  REQUIRE(p.enosys.size() == 2);
  REQUIRE(p.enosys[1].arch == SCMP_ARCH_X86);
  const long x86_max = p.enosys[1].max_nr;
  REQUIRE(x86_max < 437);
  int st = in_child([&] {
    seccomp::load(p);
    if (i386_syscall(39 /* i386 mkdir */, 0) != -EPERM) return 1;
    if (i386_syscall(437 /* i386 openat2 */, 0) != -ENOSYS) return 2;
    if (i386_syscall(x86_max + 1, 0) != -ENOSYS) return 3;
    return i386_syscall(20 /* getpid */, 0) == getpid() ? 0 : 4;
  });
  CHECK(status_text(st) == "exit 0");
}
#endif

namespace {

// A Docker-default-sized profile: default ERRNO, ~350 allowed syscalls in a
// few entries, plus Docker-style argument rules for personality and clone.
spec::Seccomp docker_sized_profile() {
  const std::set<std::string> held_back = {"mkdir", "mkdirat", "personality", "clone", "mount",
                                           "reboot", "kexec_load", "ptrace", "unshare", "setns", "clone3"};
  spec::Seccomp c;
  c.default_action = "SCMP_ACT_ERRNO";
  c.architectures = {"SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"};
  std::vector<std::string> names;
  for (int nr = 0; nr < 1024 && names.size() < 350; ++nr) {
    char* n = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);
    if (!n) continue;
    if (!held_back.count(n)) names.push_back(n);
    free(n);
  }
  for (size_t i = 0; i < names.size(); i += 50)
    c.syscalls.push_back(call({names.begin() + static_cast<long>(i),
                               names.begin() + static_cast<long>(std::min(names.size(), i + 50))},
                              "SCMP_ACT_ALLOW"));
  for (uint64_t per : {0x0ull, 0x8ull, 0x20000ull, 0x20008ull, 0xffffffffull})
    c.syscalls.push_back(call({"personality"}, "SCMP_ACT_ALLOW", std::nullopt, {{0, per, 0, "SCMP_CMP_EQ"}}));
  c.syscalls.push_back(call({"clone"}, "SCMP_ACT_ALLOW", std::nullopt,
                            {{0, 0x7e020000, 0, "SCMP_CMP_MASKED_EQ"}}));
  c.syscalls.push_back(call({"clone3"}, "SCMP_ACT_ERRNO", ENOSYS));
  return c;
}

}  // namespace

TEST_CASE("load: a Docker-sized allow-list profile behaves", "[seccomp][load]") {
  auto p = seccomp::plan(docker_sized_profile());
  CHECK(p.rules.size() > 350);
  int st = in_child([&] {
    seccomp::load(p);
    if (errno_of([] { return mkdir("/tmp/husk-seccomp-never", 0700); }) != EPERM) return 1;
    if (personality(0xffffffff) < 0) return 2;
    if (errno_of([] { return personality(ADDR_NO_RANDOMIZE); }) != EPERM) return 3;
    if (errno_of([] { return syscall(SYS_clone3, nullptr, 0); }) != ENOSYS) return 4;
    if (errno_of([] { return syscall(SYS_unshare, 0); }) != EPERM) return 5;
    if (getpid() <= 0) return 6;
    return 0;
  });
  CHECK(status_text(st) == "exit 0");
}

// Timing only (hidden: run with `husk-unit-seccomp [bench]`).
TEST_CASE("bench: plan, compile and load of a Docker-sized profile", "[.][bench]") {
  using clk = std::chrono::steady_clock;
  auto mean_us = [](int runs, const std::function<void()>& f) {
    auto t0 = clk::now();
    for (int i = 0; i < runs; ++i) f();
    return std::chrono::duration<double, std::micro>(clk::now() - t0).count() / runs;
  };
  for (bool multi_arch : {false, true}) {
    auto cfg = docker_sized_profile();
    if (!multi_arch) cfg.architectures.clear();
    const int runs = 20;
    seccomp::Plan p;
    double plan_us = mean_us(runs, [&] { p = seccomp::plan(cfg); });
    seccomp::Program prog;
    double compile_us = mean_us(runs, [&] { prog = seccomp::compile(p); });
    TempDir cache("husk-seccomp-");
    seccomp::compile(p, cache.path);
    double cached_us = mean_us(runs, [&] { prog = seccomp::compile(p, cache.path); });

    double load_us = 0;
    for (int i = 0; i < runs; ++i) {
      int fds[2];
      REQUIRE(pipe2(fds, O_CLOEXEC) == 0);
      int st = in_child([&] {
        auto s = clk::now();
        seccomp::load(prog);
        double us = std::chrono::duration<double, std::micro>(clk::now() - s).count();
        return write(fds[1], &us, sizeof us) == sizeof us ? 0 : 1;
      });
      double us = 0;
      REQUIRE(read(fds[0], &us, sizeof us) == sizeof us);
      close(fds[0]);
      close(fds[1]);
      REQUIRE(status_text(st) == "exit 0");
      load_us += us / runs;
    }
    WARN((multi_arch ? "x86_64+x86+x32" : "native only") << ": " << p.rules.size() << " rules, "
         << prog.insns.size() << " insns; plan " << plan_us << " us, compile " << compile_us
         << " us, compile (cache hit) " << cached_us << " us, load(Program) " << load_us << " us");
  }
}

namespace {

husk::spec::Seccomp husk_default_profile(bool allow_nested) {
  nlohmann::json cfg = {{"ociVersion", "1.2.0"},
                        {"root", {{"path", "rootfs"}}},
                        {"process", {{"args", {"sh"}}, {"cwd", "/"}}},
                        {"linux", {{"seccomp", husk::spec::default_seccomp(allow_nested)}}}};
  return *husk::spec::parse(cfg.dump()).linux_->seccomp;
}

}  // namespace

TEST_CASE("load: husk's default profile lets a program run and refuses the escape tools", "[seccomp][load]") {
  TempDir dir("husk-seccomp-default-");
  auto p = seccomp::plan(husk_default_profile(false));
  int st = in_child([&] {
    int unfiltered[46] = {};
    for (int family = 41; family <= 45; ++family) unfiltered[family] = errno_of([&] { return socket(family, SOCK_STREAM, 0); });
    seccomp::load(p);
    if (mkdir((dir.path + "/made").c_str(), 0700) != 0) return 1;
    pid_t child = fork();  // glibc's fork is clone without namespace flags
    if (child == 0) _exit(7);
    int cs = 0;
    if (child < 0 || waitpid(child, &cs, 0) != child || !WIFEXITED(cs) || WEXITSTATUS(cs) != 7) return 2;
    if (errno_of([] { return syscall(SYS_unshare, CLONE_NEWUSER); }) != EPERM) return 3;
    if (errno_of([] { return syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, nullptr, nullptr, nullptr, 0); }) != EPERM)
      return 4;
    if (errno_of([] { return syscall(SYS_clone3, nullptr, 0); }) != ENOSYS) return 5;
    if (errno_of([] { return syscall(SYS_ptrace, 0 /* PTRACE_TRACEME */, 0, 0, 0); }) != EPERM) return 6;
    if (errno_of([] { return syscall(SYS_keyctl, 0, 0, 0, 0, 0); }) != EPERM) return 7;
    if (errno_of([] { return syscall(SYS_bpf, 0, nullptr, 0); }) != EPERM) return 8;
    if (errno_of([] { return syscall(SYS_io_uring_setup, 1, nullptr); }) != EPERM) return 9;
    if (errno_of([] { return personality(ADDR_NO_RANDOMIZE); }) != EPERM) return 10;
    if (personality(0xffffffff) < 0) return 11;
    if (syscall(SYS_unshare, CLONE_FILES) != 0) return 12;  // not a namespace
    if (errno_of([] { return socket(40 /* AF_VSOCK */, SOCK_STREAM, 0); }) != EPERM) return 13;
    // The kernel reads an int: bits above 32 must not carry AF_VSOCK past the filter.
    if (errno_of([] { return syscall(SYS_socket, (1L << 32) | 40, SOCK_STREAM, 0); }) != EPERM) return 15;
    if (errno_of([] { return syscall(SYS_socket, (1L << 32) | AF_UNIX, SOCK_STREAM, 0); }) != EPERM) return 16;
    for (int family : {AF_UNIX, AF_INET, AF_INET6, AF_NETLINK}) {
      int fd = socket(family, SOCK_DGRAM, 0);
      if (fd < 0) return 100 + family;
      close(fd);
    }
    // The families above AF_VSOCK pass the filter: the kernel answers as it did before.
    for (int family = 41; family <= 45; ++family)
      if (errno_of([&] { return socket(family, SOCK_STREAM, 0); }) != unfiltered[family]) return 200 + family;
    return 0;
  });
  CHECK(status_text(st) == "exit 0");
}

TEST_CASE("load: the nested profile lets a user namespace be made", "[seccomp][load]") {
  if (int probe = in_child([] { return syscall(SYS_unshare, CLONE_NEWUSER) == 0 ? 0 : 1; }, false);
      status_text(probe) != "exit 0")
    HUSK_SKIP("this host refuses unprivileged user namespaces");
  auto p = seccomp::plan(husk_default_profile(true));
  int st = in_child([&] {
    seccomp::load(p);
    if (syscall(SYS_unshare, CLONE_NEWUSER) != 0) return 1;
    if (errno_of([] { return syscall(SYS_ptrace, 0, 0, 0, 0); }) != EPERM) return 2;
    return 0;
  });
  CHECK(status_text(st) == "exit 0");
}
