// What callers rely on from the container process beyond the runtime-spec
// (issue 8, "The process"): a session of its own, fds closed before seccomp,
// HOME, stdio usable by a non-root user, cwd, capabilities husk cannot grant,
// loopback, hook environment, poststart failures and Docker's error texts.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "harness.h"

using namespace hit;
namespace fs = std::filesystem;

namespace {

// "ppid pgrp session" of /proc/<pid>/stat (the fields after the comm).
struct StatIds {
  int pgrp = -1, session = -1;
};
StatIds stat_ids(int pid) {
  std::string s = read_file("/proc/" + std::to_string(pid) + "/stat");
  StatIds ids;
  char state;
  int ppid;
  std::sscanf(s.c_str() + s.rfind(')') + 1, " %c %d %d %d", &state, &ppid, &ids.pgrp, &ids.session);
  return ids;
}

std::string quoted(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) out += "'" + a + "' ";
  return out;
}

// `runtime --root R ARGS` from a shell in a session of its own, so a
// process that kills its process group cannot hit the test. Returns the
// runtime's exit status as the shell saw it, "" when the shell was killed.
std::string status_in_own_session(const Container& c, const std::vector<std::string>& args) {
  std::vector<std::string> argv{runtime(), "--root", c.root};
  argv.insert(argv.end(), args.begin(), args.end());
  std::string file = c.bundle + "/runtime-status";
  auto r = run({"setsid", "-w", "sh", "-c", quoted(argv) + "; echo $? > " + file});
  INFO(r.err);
  return fs::exists(file) ? trim(read_file(file)) : "";
}

int exec_detached(Container& c, const std::vector<std::string>& argv, const std::vector<std::string>& opts = {}) {
  std::string pf = c.bundle + "/exec.pid";
  std::vector<std::string> a{"exec", "--detach", "--pid-file", pf};
  a.insert(a.end(), opts.begin(), opts.end());
  a.push_back(c.id);
  a.insert(a.end(), argv.begin(), argv.end());
  auto r = c.rt(a);
  INFO(r.err);
  REQUIRE(r.ok());
  return std::stoi(read_file(pf));
}

}  // namespace

TEST_CASE("every container process starts a session of its own", "[dropin][dropin-process][session]") {
  Container c("sess");
  int init = c.start_process({"sleep", "60"});
  CHECK(stat_ids(init).session == init);
  CHECK(stat_ids(init).pgrp == init);
  int ex = exec_detached(c, {"sleep", "61"});
  CHECK(stat_ids(ex).session == ex);
  CHECK(stat_ids(ex).pgrp == ex);

  SECTION("kill(0, SIGKILL) in exec does not reach the caller") {
    // The exec'd shell kills only its own group, itself.
    CHECK(status_in_own_session(c, {"exec", c.id, "sh", "-c", "kill -9 0; sleep 2"}) == "137");
  }
}

TEST_CASE("kill(0, SIGKILL) in the init does not reach `run`", "[dropin][dropin-process][session]") {
  Container c("sess-run");
  c.args({"sh", "-c", "kill -9 0; sleep 2"});
  c.write_config();
  // The init is pid 1 of its pid namespace: its own SIGKILL does not reach it.
  CHECK(status_in_own_session(c, {"run", "--bundle", c.bundle, c.id}) == "0");
}

namespace {
// Syscalls of a profile written before close_range (Linux 5.9) existed: what
// busybox and a runtime's last steps use, and no close_range.
const std::vector<std::string> kOldAllowList = {
    "access", "arch_prctl", "brk", "capget", "capset", "chdir", "clock_gettime", "clock_nanosleep", "clone",
    "close", "dup", "dup2", "dup3", "epoll_create1", "epoll_ctl", "epoll_pwait", "epoll_wait", "execve",
    "exit", "exit_group", "faccessat", "fchdir", "fchown", "fcntl", "fstat", "fstatfs", "futex", "getcwd",
    "getdents64", "getegid", "geteuid", "getgid", "getgroups", "getpgrp", "getpid", "getppid", "getrandom",
    "getrlimit", "getsid", "gettid", "getuid", "ioctl", "kill", "lseek", "lstat", "madvise", "mmap",
    "mprotect", "munmap", "nanosleep", "newfstatat", "open", "openat", "pipe", "pipe2", "poll", "ppoll",
    "prctl", "pread64", "prlimit64", "read", "readlink", "readlinkat", "recvfrom", "recvmsg",
    "rseq", "rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "sendmsg", "sendto", "set_robust_list",
    "set_tid_address", "setgid", "setgroups", "setpgid", "setresgid", "setresuid", "setsid", "setuid",
    "sigaltstack", "stat", "statfs", "statx", "sysinfo", "tgkill", "umask", "uname", "wait4", "waitid",
    "write", "writev"};

json old_profile() {
  return {{"defaultAction", "SCMP_ACT_ERRNO"},
          {"architectures", {"SCMP_ARCH_X86_64"}},
          {"syscalls", {{{"names", kOldAllowList}, {"action", "SCMP_ACT_ALLOW"}}}}};
}
}  // namespace

TEST_CASE("a seccomp allow-list without close_range does not break start and exec", "[dropin][dropin-process][seccomp]") {
  for (bool nnp : {false, true}) {
    INFO("noNewPrivileges " << nnp);
    Container c(nnp ? "scmp-nnp" : "scmp");
    c.cfg["process"]["noNewPrivileges"] = nnp;
    c.cfg["linux"]["seccomp"] = old_profile();
    c.args({"echo", "seccomp-ok"});
    auto r = c.run();
    INFO(r.err);
    CHECK(r.ok());
    CHECK(contains(r.out, "seccomp-ok"));
    c.del(true);

    Container d(nnp ? "scmp-nnp-x" : "scmp-x");
    d.cfg["process"]["noNewPrivileges"] = nnp;
    d.cfg["linux"]["seccomp"] = old_profile();
    d.start_process({"sleep", "60"});
    auto x = d.rt({"exec", d.id, "echo", "exec-ok"});
    INFO(x.err);
    CHECK(x.ok());
    CHECK(contains(x.out, "exec-ok"));
  }
}

TEST_CASE("HOME comes from the container's /etc/passwd", "[dropin][dropin-process][home]") {
  struct Case {
    int uid;
    std::string env_home, want;
  };
  for (const auto& k : {Case{0, "", "/root"}, Case{1000, "", "/home/user"}, Case{4242, "", "/"},
                        Case{1000, "HOME=/custom", "/custom"}}) {
    INFO("uid " << k.uid << " " << k.env_home);
    Container c("home");
    auto& env = c.cfg["process"]["env"];
    json kept = json::array();
    for (const auto& e : env)
      if (e.get<std::string>().rfind("HOME=", 0) != 0) kept.push_back(e);
    if (!k.env_home.empty()) kept.push_back(k.env_home);
    env = kept;
    c.cfg["process"]["user"] = {{"uid", k.uid}, {"gid", k.uid}};
    c.start_process({"sleep", "60"});
    auto x = c.rt({"exec", c.id, "sh", "-c", "echo \"home=$HOME\""});
    INFO(x.err);
    CHECK(trim(x.out) == "home=" + k.want);
    auto ex_uid = c.rt({"exec", "-u", "4242", c.id, "sh", "-c", "echo \"home=$HOME\""});
    CHECK(trim(ex_uid.out) == "home=" + (k.env_home.empty() ? std::string("/") : k.want));
    std::string init_env = read_file("/proc/" + std::to_string(c.pid()) + "/environ");
    CHECK(contains(std::string(1, '\0') + init_env, std::string(1, '\0') + "HOME=" + k.want + '\0'));
  }
}

TEST_CASE("HOME never comes through a magic link planted as /etc/passwd", "[dropin][dropin-process][home][security]") {
  // The init reads the image's /etc/passwd while it still holds fds of ours
  // (the host --log file among them). Seen failing before openat2 with
  // RESOLVE_NO_MAGICLINKS: HOME=/LEAKED, read from the init's stdin.
  Container c("home-magic");
  fs::remove(c.rootfs + "/etc/passwd");
  fs::create_symlink("/proc/self/fd/0", c.rootfs + "/etc/passwd");
  c.args({"sh", "-c", "echo home=$HOME"});
  auto r = c.run({}, SpawnOpts{.stdin_data = "root:x:0:0::/LEAKED:/bin/sh\n"});
  INFO(r.err);
  REQUIRE(r.ok());
  CHECK(trim(r.out) == "home=/");
}

TEST_CASE("a non-root process can open its stdio pipe or file through /dev/stdout",
          "[dropin][dropin-process][stdio][husk-only]") {
  Container c("stdio");
  c.cfg["process"]["user"] = {{"uid", 1000}, {"gid", 1000}};
  c.args({"sh", "-c", "echo via-dev-stdout > /dev/stdout"});
  c.write_config();
  auto r = run({"sh", "-c", quoted({runtime(), "--root", c.root, "run", "--bundle", c.bundle, c.id}) + "| cat"});
  INFO(r.err);
  CHECK(contains(r.out, "via-dev-stdout"));
  c.del(true);

  SECTION("a root-only regular file keeps its owner, and exec") {
    // runc chowns it too; husk changes the owner of anonymous pipes and
    // sockets only (`husk run < /etc/shadow` handed the file to the uid).
    TempDir t("husk-it-stdio-");
    std::string file = t.path + "/out";
    write_file(file, "", 0600);
    Container d("stdio-x");
    d.cfg["process"]["user"] = {{"uid", 1000}, {"gid", 1000}};
    d.start_process({"sleep", "60"});
    auto x = run({"sh", "-c",
                  quoted({runtime(), "--root", d.root, "exec", d.id, "sh", "-c", "echo exec-file"}) + ">> " + file});
    INFO(x.err);
    CHECK(contains(read_file(file), "exec-file"));
    struct stat st;
    REQUIRE(::stat(file.c_str(), &st) == 0);
    CHECK(st.st_uid == 0);
    auto p = run({"sh", "-c",
                  quoted({runtime(), "--root", d.root, "exec", d.id, "sh", "-c", "echo exec-pipe > /dev/stdout"}) +
                      "| cat"});
    CHECK(contains(p.out, "exec-pipe"));
  }
}

TEST_CASE("a missing cwd is created under a read-only root; exec --cwd does not create one", "[dropin][dropin-process][cwd]") {
  Container c("cwd-ro");
  c.cfg["root"]["readonly"] = true;
  c.cfg["process"]["cwd"] = "/made/by/runtime";
  c.start_process({"sleep", "60"});
  auto pwd = c.rt({"exec", c.id, "pwd"});
  INFO(pwd.err);
  CHECK(trim(pwd.out) == "/made/by/runtime");

  auto x = c.rt({"exec", "--cwd", "/not/there", c.id, "true"});
  CHECK(x.code != 0);
  CHECK(contains(x.err, "no such file or directory"));
  CHECK(c.rt({"exec", c.id, "test", "-e", "/not/there"}).code != 0);
}

TEST_CASE("a capability outside the runtime's bounding set is a warning", "[dropin][dropin-process][caps][husk-only]") {
  // config.md: a capability that cannot be granted SHOULD be a warning; runc
  // 1.1 skips only capabilities the kernel does not know and fails here with
  // "unable to apply caps: operation not permitted".
  Container c("caps-bnd");
  std::vector<std::string> caps{"CAP_KILL", "CAP_SYS_MODULE"};
  c.cfg["process"]["capabilities"] = {{"bounding", caps}, {"effective", caps}, {"permitted", caps},
                                      {"ambient", caps}};
  c.args({"sh", "-c", "grep CapEff /proc/self/status"});
  c.write_config();
  auto r = run({"setpriv", "--bounding-set", "-sys_module", runtime(), "--root", c.root, "run", "--bundle",
                c.bundle, c.id});
  INFO(r.err);
  REQUIRE(r.ok());
  CHECK(contains(r.err, "CAP_SYS_MODULE"));
  auto eff = r.out.substr(r.out.find(':') + 1);
  CHECK(std::stoull(trim(eff), nullptr, 16) == cap_mask({"CAP_KILL"}));
}

TEST_CASE("the loopback interface of a new network namespace is up", "[dropin][dropin-process][net]") {
  Container c("lo");
  auto r = c.run_ok({"cat", "/sys/class/net/lo/flags"});
  CHECK((std::stoul(trim(r.out), nullptr, 16) & 1) == 1);  // IFF_UP
}

TEST_CASE("hooks without env get the runtime's environment", "[dropin][dropin-process][hooks]") {
  TempDir t("husk-it-hookenv-");
  Container c("hookenv");
  std::string out = t.path + "/env";
  // createContainer/startContainer hooks run the image's programs in the
  // container: the caller's environment (secrets included) must not reach
  // them. Before the init cleared its environment, /hook-env got the mark.
  c.cfg["hooks"] = {{"prestart", {{{"path", "/bin/sh"}, {"args", {"sh", "-c", "env > " + out}}}}},
                    {"startContainer", {{{"path", "/bin/sh"}, {"args", {"sh", "-c", "env > /hook-env"}}}}},
                    {"poststop", {{{"path", "/bin/sh"}, {"args", {"sh", "-c", "env > " + out + ".stop"}}}}}};
  c.args({"true"});
  c.write_config();
  auto r = run({"env", "HIT_HOOK_MARK=m42", runtime(), "--root", c.root, "run", "--bundle", c.bundle, c.id});
  INFO(r.err);
  REQUIRE(r.ok());
  CHECK(contains(read_file(out), "HIT_HOOK_MARK=m42"));
  CHECK(contains(read_file(out + ".stop"), "HIT_HOOK_MARK=m42"));
  REQUIRE(fs::exists(c.rootfs + "/hook-env"));
  CHECK_FALSE(contains(read_file(c.rootfs + "/hook-env"), "HIT_HOOK_MARK"));
}

TEST_CASE("a failing poststart hook is an error and stops the container", "[dropin][dropin-process][hooks]") {
  // runtime-spec 1.3 runtime.md lifecycle step 9: "If any poststart hook
  // fails, the runtime MUST generate an error, stop the container, and
  // continue the lifecycle at step 12." runc 1.1 runs poststart during create.
  TempDir t("husk-it-ps-");
  Container c("ps-fail");
  c.cfg["hooks"] = {{"poststart",
                     {{{"path", "/bin/sh"}, {"args", {"sh", "-c", "exit 3"}}},
                      {{"path", "/bin/sh"}, {"args", {"sh", "-c", "touch " + t.path + "/second"}}}}}};
  c.args({"sleep", "60"});
  auto cr = c.create();
  int pid = -1;
  bool failed = !cr.ok();
  if (cr.ok()) {
    pid = c.pid();
    auto s = c.start();
    INFO(s.err);
    failed = !s.ok();
    CHECK(contains(s.err, "poststart"));
    CHECK(c.status() == "stopped");
    CHECK(c.del().ok());
  }
  CHECK(failed);
  CHECK_FALSE(fs::exists(t.path + "/second"));
  if (pid > 0) {
    std::string st;
    try {
      st = read_file("/proc/" + std::to_string(pid) + "/stat");
    } catch (...) {
    }
    CHECK((st.empty() || st[st.rfind(')') + 2] == 'Z'));
  }
}

TEST_CASE("a missing or non-executable program gets the errors Docker maps to 127/126", "[dropin][dropin-process][errors]") {
  struct Case {
    std::string prog, want;
  };
  const Case cases[] = {{"/nope", "no such file or directory"},
                        {"nope", "executable file not found in $PATH"},
                        {"/etc", "permission denied"},
                        {"/etc/passwd", "permission denied"}};
  Container running("errs-x");
  running.start_process({"sleep", "60"});
  for (const auto& k : cases) {
    INFO(k.prog);
    Container c("errs");
    c.args({k.prog});
    auto r = c.run();
    INFO(r.err);
    CHECK(r.code != 0);
    CHECK(contains(r.err, k.want));
    auto x = running.rt({"exec", running.id, k.prog});
    INFO(x.err);
    CHECK(x.code != 0);
    CHECK(contains(x.err, k.want));
  }
}
