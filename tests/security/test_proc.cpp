// CVE-2019-16884, CVE-2019-19921, CVE-2023-27561, CVE-2023-28642,
// CVE-2025-52881: a fake /proc in the rootfs (symlinks, a directory with
// fake attr files, a symlink into a tmpfs) or mounts over /proc/sys and
// /proc/self/attr, so that the runtime's writes to procfs (LSM labels,
// sysctls) land in an ordinary file, possibly on the host.
//
// How they failed: against the mutant (14774f5 with mutant-14774f5.patch:
// openat2 without RESOLVE_IN_ROOT, special mounts following symlinks, no
// procfs or /proc destination checks): the three /proc-symlink cases ran
// with no procfs at /proc inside the container, and the 52881 case changed
// the bind-mounted host tree. They pass against 14774f5 and later.
#include <catch2/catch.hpp>

#include <filesystem>

#include "sec.h"

using namespace hit;
using namespace sec;
namespace fs = std::filesystem;

namespace {

// A tree of files that look like procfs' LSM and sysctl files.
void fake_proc_tree(const std::string& dir) {
  for (std::string p : {"self/attr/apparmor", "thread-self/attr/apparmor", "1/attr/apparmor", "sys/kernel",
                        "sys/net/ipv4"})
    fs::create_directories(dir + "/" + p);
  for (std::string p : {"self", "thread-self", "1"})
    for (std::string f : {"attr/current", "attr/exec", "attr/apparmor/current", "attr/apparmor/exec"})
      write_file(dir + "/" + p + "/" + f, "FAKE\n");
  write_file(dir + "/sys/kernel/domainname", "FAKE\n");
  write_file(dir + "/sys/net/ipv4/ip_forward", "FAKE\n");
  write_file(dir + "/mounts", "");
}

void with_labels(Container& c) {
  c.cfg["process"]["apparmorProfile"] = "husk-sec-evil";
  c.cfg["process"]["selinuxLabel"] = "system_u:system_r:evil_t:s0";
  c.cfg["linux"]["sysctl"] = {{"net.ipv4.ip_forward", "1"}, {"kernel.domainname", "evil.example"}};
}

// The container's /proc is procfs at /proc, and procfs is nowhere else.
void check_proc_contained(const Result& r) {
  INFO(r.out << r.err);
  if (r.code != 0) {
    CHECK_FALSE(r.err.empty());
    return;
  }
  auto m = parse_mountinfo(r.out);
  auto* p = &mount_at(m, "/proc");
  CHECK(p->fstype == "proc");
  for (auto& e : m)
    if (e.fstype == "proc") CHECK(e.mount_point.rfind("/proc", 0) == 0);
}

}  // namespace

TEST_CASE("CVE-2019-16884: /proc in the rootfs is a symlink", "[cve-2019-16884][security]") {
  for (bool absolute : {false, true}) {
    Container c(absolute ? "cve-proc-abs" : "cve-proc-rel");
    INFO((absolute ? "absolute" : "relative") << " /proc symlink");
    TempDir outdir("husk-it-fakeproc-");
    auto& outside = outdir.path;
    fs::create_directory(c.rootfs + "/fakeproc");
    fs::remove(c.rootfs + "/proc");
    fs::create_directory_symlink(absolute ? outside : "fakeproc", c.rootfs + "/proc");
    c.args({"cat", "/proc/self/mountinfo"});
    auto r = c.run();
    check_proc_contained(r);
    CHECK(fs::is_empty(outside));
    CHECK(fs::is_empty(c.rootfs + "/fakeproc"));
    CHECK(leftovers(c).empty());
  }
}

TEST_CASE("CVE-2019-19921/CVE-2023-27561: fake /proc with attr files, LSM labels and sysctls",
          "[cve-2019-19921][cve-2023-27561][cve-2025-52881][security]") {
  // Without the LSM the labels fail create; with it they are written through
  // the host's /proc. Either way no fake attr or sysctl file may be written.
  for (bool absolute : {false, true}) {
    INFO((absolute ? "absolute symlink to a host directory" : "relative symlink to a rootfs directory"));
    TempDir host("husk-sec-fakeproc-");
    Container c("fakeproc-attr");
    std::string fake = absolute ? host.path : c.rootfs + "/fakeproc";
    fs::create_directories(fake);
    fake_proc_tree(fake);
    fs::remove(c.rootfs + "/proc");
    fs::create_directory_symlink(absolute ? host.path : "fakeproc", c.rootfs + "/proc");
    std::string before = tree_state(fake), host_before = tree_state(host.path);
    with_labels(c);
    c.args({"cat", "/proc/self/mountinfo"});
    auto r = c.run();
    check_proc_contained(r);
    CHECK(tree_state(fake) == before);
    CHECK(tree_state(host.path) == host_before);
    CHECK(leftovers(c).empty());
  }
}

TEST_CASE("CVE-2023-28642: /proc is a symlink into a tmpfs mount", "[cve-2023-28642][security]") {
  Container c("proc-tmpfs");
  fs::create_directories(c.rootfs + "/faketmp");
  fs::remove(c.rootfs + "/proc");
  fs::create_directory_symlink("faketmp", c.rootfs + "/proc");
  // The tmpfs comes first, so the runtime meets /proc -> faketmp (a mount).
  auto mounts = c.cfg["mounts"];
  c.cfg["mounts"] = json::array({{{"destination", "/faketmp"}, {"type", "tmpfs"}, {"source", "tmpfs"},
                                  {"options", {"nosuid", "nodev", "mode=755"}}}});
  for (auto& m : mounts) c.cfg["mounts"].push_back(m);
  with_labels(c);
  c.args({"cat", "/proc/self/mountinfo"});
  std::string before = tree_state(c.rootfs + "/faketmp");
  auto r = c.run();
  check_proc_contained(r);
  CHECK(tree_state(c.rootfs + "/faketmp") == before);
  CHECK(leftovers(c).empty());
}

TEST_CASE("CVE-2025-52881: sysctl and attr writes redirected by mounts over /proc", "[cve-2025-52881][security]") {
  TempDir host("husk-sec-52881-");
  std::string victim = host.path + "/victim";
  write_file(victim, "HOST-VICTIM\n");
  struct Variant {
    const char* name;
    const char* destination;
    bool symlinks;  // the sysctl files are symlinks to the host victim
  };
  for (auto v : {Variant{"bind over /proc/sys", "/proc/sys", false},
                 Variant{"bind over /proc/sys, files are symlinks to a host file", "/proc/sys", true},
                 Variant{"bind over /proc/sys/net", "/proc/sys/net", true},
                 Variant{"bind over /proc/self/attr", "/proc/self/attr", true}}) {
    INFO(v.name);
    TempDir src("husk-sec-52881-src-");
    std::string base = src.path;
    if (std::string(v.destination) == "/proc/sys") {
      fake_proc_tree(base + "/tree");
      base += "/tree/sys";
    } else if (std::string(v.destination) == "/proc/sys/net") {
      fs::create_directories(base + "/ipv4");
      write_file(base + "/ipv4/ip_forward", "FAKE\n");
    } else {
      fs::create_directories(base + "/apparmor");
      for (std::string f : {"current", "exec", "apparmor/current", "apparmor/exec"}) write_file(base + "/" + f, "FAKE\n");
    }
    if (v.symlinks)
      for (auto& e : fs::recursive_directory_iterator(base))
        if (e.is_regular_file()) {
          fs::remove(e.path());
          fs::create_symlink(victim, e.path());
        }
    std::string before = tree_state(src.path), victim_before = file_state(victim);
    Container c("52881");
    with_labels(c);
    c.cfg["mounts"].push_back(
        {{"destination", v.destination}, {"type", "bind"}, {"source", base}, {"options", {"rbind", "rw"}}});
    c.args({"sh", "-c", "cat /proc/sys/net/ipv4/ip_forward /proc/sys/kernel/domainname; true"});
    auto r = c.run();
    INFO(r.out << r.err);
    CHECK(tree_state(src.path) == before);
    CHECK(file_state(victim) == victim_before);
    CHECK(leftovers(c).empty());
  }
}
