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

TEST_CASE("CVE-2019-5736: container in the host pid namespace with CAP_SYS_PTRACE",
          "[cve-2019-5736][security][!mayfail]") {
  // No pid namespace: the container sees the host's runtime processes
  // (create, start, state, exec callers and their children) too. Such a
  // container is host-equivalent anyway (/proc/<pid>/root of any host root
  // process reaches the host's whole filesystem, checked below), so this
  // case is [!mayfail]: reported,
  // not failing the suite. It fails after 06ed4be: only create/run/exec
  // re-execute from the protected copy, and only after they started from
  // the on-disk binary; `start` and the others run from disk throughout.
  if (hostile_binary().empty()) return skip(hostile_error());
  RuntimeCopy rc;
  Container b("5736-hostpid"), v("5736-victim");
  install_hostile(b);
  add_caps(b.cfg, {"CAP_SYS_PTRACE"});
  remove_namespace(b.cfg, "pid");
  auto scan = scan_args(rc, 7);
  // This test process is root in the host's mount namespace: its
  // /proc/<pid>/root is the host's /.
  std::string cmd = "test -e /proc/" + std::to_string(::getpid()) + "/root" + rc.path +
                    " && echo HOST-ROOT-REACHABLE; exec";
  for (auto& a : scan) cmd += " " + a;
  b.args({"sh", "-c", cmd});
  auto out_b = std::make_shared<Capture>();
  create_start(rc, b, out_b);
  REQUIRE(eventually([&] { return contains(out_b->read(), "scanning"); }));
  v.args({"sleep", "60"});
  auto out_v = std::make_shared<Capture>();
  create_start(rc, v, out_v, false);
  std::this_thread::sleep_for(1500ms);
  CHECK(rt_with(rc.path, v, {"start", v.id}).ok());
  exec_storm(rc, v, 3s);
  CHECK(b.wait_status("stopped", 10s));
  CHECK(contains(out_b->read(), "HOST-ROOT-REACHABLE"));  // what makes this configuration host-equivalent
  check_no_escape(rc, out_b->read());
}

// Moved from the end-to-end suite (test_cve.cpp). It failed before
// refuse_own_binary() existed (4e486f2): `--version` printed from inside.
TEST_CASE("CVE-2019-5736: the runtime binary cannot be run inside the container", "[cve-2019-5736][security]") {
  // The init and exec'd processes are clones of the runtime until they exec:
  // their /proc/self/exe is the host binary. Running it (directly or as a
  // script interpreter) would give the container a dumpable process whose
  // /proc/<pid>/exe opens the host binary for writing.
  auto version_leaked = [](const Result& r) { return contains(r.out, "version") || contains(r.out, "spec:"); };
  // The host's libraries, so that a dynamically linked runtime could really
  // start in the busybox rootfs if it were not refused.
  auto with_host_libs = [](Container& c) {
    for (std::string dir : {"/lib", "/lib64", "/usr/lib"}) {
      if (!fs::exists(dir)) continue;
      fs::create_directories(c.rootfs + dir);
      c.cfg["mounts"].push_back({{"destination", dir}, {"type", "bind"}, {"source", dir}, {"options", {"rbind", "ro"}}});
    }
  };
  SECTION("as the container's process") {
    Container c("cve-exe-run");
    with_host_libs(c);
    c.args({"/proc/self/exe", "--version"});
    auto r = c.run();
    INFO(r.out << r.err);
    CHECK(r.code != 0);
    CHECK_FALSE(version_leaked(r));
    CHECK(leftovers(c).empty());
  }
  SECTION("through exec, directly and as a #! interpreter") {
    Container c("cve-exe-exec");
    with_host_libs(c);
    write_file(c.rootfs + "/via-shebang", "#!/proc/self/exe --version\n", 0755);
    int pid = c.start_process({"sleep", "30"});
    REQUIRE(pid > 0);
    for (std::string prog : {"/proc/self/exe", "/via-shebang"}) {
      INFO(prog);
      auto r = c.rt({"exec", c.id, prog, "--version"});
      INFO(r.out << r.err);
      CHECK(r.code != 0);
      CHECK_FALSE(version_leaked(r));
    }
    // the container is unharmed
    CHECK(c.rt({"exec", c.id, "true"}).ok());
  }
}
