// CVE-2019-5736: overwriting the runtime binary through /proc/<pid>/exe (or
// an fd of a runtime process) from inside a container.
//
// Every case runs against a private copy of the runtime (sec::RuntimeCopy),
// so a working attack damages only the copy, and asserts from the host that
// the copy's sha256 is unchanged. The hostile helper (hostile.c `scan`)
// scans /proc/*/exe and /proc/*/fd/* for the copy's inode, tries to open it
// for writing and keeps O_PATH handles it re-opens for writing through
// /proc/self/fd/N once no runtime process executes the file any more.
//
// How they failed: against the husk of the working tree before 06ed4be
// (14774f5 + uncommitted work) every case granted CAP_SYS_PTRACE failed:
// the helper got a handle on a runtime process that was still the husk
// binary (an `exec` child before its execve, a created init waiting on
// exec.fifo: non-dumpable, which CAP_SYS_PTRACE overrides) and overwrote
// the copy once the runtime had exited ("HANDLE /proc/3/exe", "ESCAPED").
// The default-capabilities run passed there and fails against the mutant
// (14774f5 with mutant-14774f5.patch, which drops PR_SET_DUMPABLE). Since
// 06ed4be (issue 7 item 1: create/run/exec re-execute from a read-only
// overlay or sealed memfd copy) all pass except the host-pid-namespace
// case, see there.
#include <catch2/catch.hpp>

#include <filesystem>

#include <signal.h>
#include <sys/stat.h>
#include <thread>

#include "sec.h"

using namespace hit;
using namespace sec;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> scan_args(const RuntimeCopy& rc, int seconds) {
  return {"/hostile", "scan", std::to_string(rc.dev), std::to_string(rc.ino), std::to_string(seconds)};
}

// create + start with the copy; the container's stdout goes to `out`.
void create_start(const RuntimeCopy& rc, Container& c, const std::shared_ptr<Capture>& out, bool start = true) {
  c.write_config();
  auto r = rt_with(rc.path, c, {"create", "--bundle", c.bundle, c.id}, SpawnOpts{.out = out});
  INFO("create " << c.id << ": " << r.err);
  REQUIRE(r.ok());
  if (!start) return;
  auto s = rt_with(rc.path, c, {"start", c.id});
  INFO("start " << c.id << ": " << s.err);
  REQUIRE(s.ok());
}

// Runs `exec ID true` with the copy for `dur`.
int exec_storm(const RuntimeCopy& rc, const Container& c, std::chrono::milliseconds dur) {
  int n = 0;
  auto end = std::chrono::steady_clock::now() + dur;
  while (std::chrono::steady_clock::now() < end) {
    rt_with(rc.path, c, {"exec", c.id, "true"});
    ++n;
  }
  return n;
}

void check_no_escape(const RuntimeCopy& rc, const std::string& out) {
  INFO("hostile output:\n" << out);
  CHECK(contains(out, "scan done"));
  CHECK_FALSE(contains(out, "ESCAPED"));
  CHECK_FALSE(contains(out, "HANDLE "));  // a handle is a write waiting for the runtime to exit
  CHECK(rc.unchanged());
}

}  // namespace

TEST_CASE("CVE-2019-5736: hostile entrypoint vs. exec'd runtime processes", "[cve-2019-5736][security]") {
  if (hostile_binary().empty()) return skip(hostile_error());
  for (bool ptrace : {false, true}) {
    INFO((ptrace ? "with" : "without") << " CAP_SYS_PTRACE");
    RuntimeCopy rc;
    Container c("5736-ep");
    install_hostile(c);
    if (ptrace) add_caps(c.cfg, {"CAP_SYS_PTRACE"});
    c.args(scan_args(rc, 6));
    auto out = std::make_shared<Capture>();
    create_start(rc, c, out);
    REQUIRE(eventually([&] { return contains(out->read(), "scanning"); }));
    int n = exec_storm(rc, c, 4s);
    INFO(n << " execs");
    CHECK(c.wait_status("stopped", 10s));
    check_no_escape(rc, out->read());
  }
}

TEST_CASE("CVE-2019-5736: hostile exec'd program", "[cve-2019-5736][security]") {
  if (hostile_binary().empty()) return skip(hostile_error());
  RuntimeCopy rc;
  Container c("5736-exec");
  install_hostile(c);
  add_caps(c.cfg, {"CAP_SYS_PTRACE"});
  c.args({"sleep", "60"});
  auto out = std::make_shared<Capture>();
  create_start(rc, c, out);
  std::vector<std::string> argv{rc.path, "--root", c.root, "exec", c.id};
  for (auto& a : scan_args(rc, 6)) argv.push_back(a);
  Child hostile(argv);
  exec_storm(rc, c, 4s);
  auto r = hostile.wait();
  check_no_escape(rc, r.out + r.err);
}

TEST_CASE("CVE-2019-5736: shared pid namespace, created init and exec", "[cve-2019-5736][security]") {
  // B joins A's pid namespace with CAP_SYS_PTRACE; C is created in the same
  // pid namespace and left waiting in `created` (its init is the runtime)
  // before it is started; meanwhile A gets exec'd processes.
  if (hostile_binary().empty()) return skip(hostile_error());
  RuntimeCopy rc;
  Container a("5736-a"), b("5736-b"), c("5736-c");
  a.args({"sleep", "60"});
  auto out_a = std::make_shared<Capture>();
  create_start(rc, a, out_a);
  std::string pidns = "/proc/" + std::to_string(a.pid()) + "/ns/pid";
  install_hostile(b);
  add_caps(b.cfg, {"CAP_SYS_PTRACE"});
  join_namespace(b.cfg, "pid", pidns);
  b.args(scan_args(rc, 8));
  auto out_b = std::make_shared<Capture>();
  create_start(rc, b, out_b);
  REQUIRE(eventually([&] { return contains(out_b->read(), "scanning"); }));
  join_namespace(c.cfg, "pid", pidns);
  c.args({"true"});
  auto out_c = std::make_shared<Capture>();
  create_start(rc, c, out_c, false);
  std::this_thread::sleep_for(2500ms);
  CHECK(rt_with(rc.path, c, {"start", c.id}).ok());
  exec_storm(rc, a, 2500ms);
  CHECK(b.wait_status("stopped", 10s));
  check_no_escape(rc, out_b->read());
}

// The runtime binary run inside the container, as the init's program
// (`/proc/self/exe` resolves to the init's own image at its execve) and as
// an exec'd program, directly and as a #! interpreter: the container then
// has a dumpable process whose /proc/<pid>/exe is the runtime's image. That
// process is kept alive, blocked opening a FIFO as its --log file; the
// attacker opens its /proc/<pid>/exe read-only, the process is killed (a
// running image cannot be opened for writing: ETXTBSY), and the attacker
// re-opens its handle for writing through /proc/self/fd. Seen failing
// against 14774f5's husk without ensure_protected_binary() (refuse_own_binary
// aside, which refused these by name): ESCAPED, "PWNED" written into the
// runtime copy. Since 06ed4be the image is a read-only overlay (or sealed
// memfd) view: DENIED.
TEST_CASE("CVE-2019-5736: the runtime binary run inside the container cannot be written", "[cve-2019-5736][security]") {
  RuntimeCopy rc;
  // The host's libraries, so that a dynamically linked runtime (HUSK_STATIC=OFF) starts in the busybox rootfs.
  auto with_host_libs = [](Container& c) {
    for (std::string dir : {"/lib", "/lib64", "/usr/lib"}) {
      if (!fs::exists(dir)) continue;
      fs::create_directories(c.rootfs + dir);
      c.cfg["mounts"].push_back({{"destination", dir}, {"type", "bind"}, {"source", dir}, {"options", {"rbind", "ro"}}});
    }
    REQUIRE(::mkfifo((c.rootfs + "/log.fifo").c_str(), 0600) == 0);
  };
  // Holds /proc/PID/exe, waits for /gone (the runtime process was killed), writes through the handle.
  auto attack = [](const std::string& pid) {
    return "exec 3< /proc/" + pid + "/exe || { echo NOHANDLE; exit 1; }; echo HANDLE; "
           "while ! test -e /gone; do sleep 0.05; done; "
           "if printf PWNED 2>/dev/null >> /proc/self/fd/3; then echo ESCAPED; else echo DENIED; fi";
  };
  auto wait_for = [](const std::shared_ptr<Capture>& out, const std::string& what) {
    return eventually([&] { return contains(out->read(), what); }, 10s);
  };
  SECTION("as the container's process") {
    // The attacker lives in a second container in the host's pid namespace,
    // so it outlives the first one's init.
    Container a("5736-self-init"), b("5736-self-attacker");
    with_host_libs(a);
    a.args({"/proc/self/exe", "--log", "/log.fifo", "list"});
    create_start(rc, a, std::make_shared<Capture>());
    int init = a.pid();
    remove_namespace(b.cfg, "pid");
    b.args({"sh", "-c", attack(std::to_string(init)) + "; touch /done"});
    auto out = std::make_shared<Capture>();
    create_start(rc, b, out);
    REQUIRE(wait_for(out, "HANDLE"));
    REQUIRE(::kill(init, SIGKILL) == 0);
    REQUIRE(eventually([&] { return a.status() == "stopped"; }, 10s));
    write_file(b.rootfs + "/gone", "");
    REQUIRE(wait_for(out, "ED"));
    INFO(out->read());
    CHECK(contains(out->read(), "DENIED"));
    CHECK_FALSE(contains(out->read(), "ESCAPED"));
    CHECK(rc.unchanged());
  }
  SECTION("through exec, directly and as a #! interpreter") {
    Container c("5736-self-exec");
    with_host_libs(c);
    write_file(c.rootfs + "/via-shebang", "#!/proc/self/exe --log=/log.fifo\n", 0755);
    c.args({"sleep", "60"});
    create_start(rc, c, std::make_shared<Capture>());
    for (std::string prog : {"/proc/self/exe", "/via-shebang"}) {
      INFO(prog);
      fs::remove(c.rootfs + "/gone");
      std::vector<std::string> argv{"exec", "-d", "--pid-file", c.bundle + "/inner.pid", c.id, prog};
      if (prog == "/proc/self/exe") argv.insert(argv.end(), {"--log", "/log.fifo", "list"});
      REQUIRE(rt_with(rc.path, c, argv).ok());
      int inner = std::stoi(read_file(c.bundle + "/inner.pid"));
      // The pid as the container sees it: the last one in NSpid.
      std::string ns_pid = trim(status_field(inner, "NSpid"));
      ns_pid = ns_pid.substr(ns_pid.find_last_of(" \t") + 1);
      // Detached, its output into the rootfs: a runtime process waiting in
      // the foreground would keep the image busy and hide the attack.
      std::string result = c.rootfs + "/result";
      fs::remove(result);
      REQUIRE(rt_with(rc.path, c, {"exec", "-d", c.id, "sh", "-c", "{ " + attack(ns_pid) + "; } > /result 2>&1"}).ok());
      auto seen = [&](const std::string& what) { return fs::exists(result) && contains(read_file(result), what); };
      REQUIRE(eventually([&] { return seen("HANDLE"); }, 10s));
      REQUIRE(::kill(inner, SIGKILL) == 0);
      REQUIRE(eventually([&] { return !fs::exists("/proc/" + std::to_string(inner) + "/exe"); }));
      write_file(c.rootfs + "/gone", "");
      REQUIRE(eventually([&] { return seen("ED"); }, 10s));
      INFO(read_file(result));
      CHECK(seen("DENIED"));
      CHECK_FALSE(seen("ESCAPED"));
      CHECK(rc.unchanged());
    }
  }
}
