// CVE-2023-25809: runc mounted /sys/fs/cgroup writable in a user-namespaced
// (rootless) container when it had no cgroup namespace of its own, so the
// container could write the host's cgroup files. The container's
// /sys/fs/cgroup must be read-only when the config says so (also with a
// user namespace), and the container must not change a host cgroup.
//
// How they failed: against the mutant (14774f5 with mutant-14774f5.patch,
// which drops MOUNT_ATTR_RDONLY from the per-hierarchy cgroup mounts) the
// mounts were rw and the probes wrote notify_on_release and made
// directories. (The first version of the probes used `test -w`, which
// busybox answers "yes" for root regardless of the mount: not a bug.) Pass
// against 14774f5 and later.
#include <catch2/catch.hpp>

#include <filesystem>

#include <sys/stat.h>

#include "sec.h"

using namespace hit;
using namespace sec;
namespace fs = std::filesystem;

namespace {

// Every cgroup directory the host has, recursively, up to depth 3 (enough
// to see a directory the container made in any view root it could reach).
std::string host_cgroup_dirs() {
  std::string s;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator("/sys/fs/cgroup", fs::directory_options::skip_permission_denied, ec);
       it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    if (it.depth() > 2) {
      it.disable_recursion_pending();
      continue;
    }
    if (it->is_directory(ec) && !it->is_symlink(ec)) s += it->path().string() + "\n";
  }
  return s;
}

// Tries to change cgroupfs from inside; prints what worked.
std::string vandal(const std::string& tag) {
  return "cat /proc/self/mountinfo; "
         // mkdir only in the view roots (never below, e.g. in a host
         // service's cgroup); the -w probes change nothing.
         "for d in /sys/fs/cgroup /sys/fs/cgroup/*; do "
         "  [ -d \"$d\" ] && mkdir \"$d/" + tag + "\" 2>/dev/null && echo WROTE-MKDIR $d; "
         "done; "
         // Rewrites notify_on_release with the value it has: changes
         // nothing if it works, but shows the file was writable. (busybox
         // `test -w` is always true for root, so no -w probes.)
         "for f in /sys/fs/cgroup/notify_on_release /sys/fs/cgroup/*/notify_on_release "
         "         /sys/fs/cgroup/*/*/notify_on_release; do "
         "  [ -f \"$f\" ] || continue; "
         "  v=$(cat \"$f\"); echo \"$v\" 2>/dev/null > \"$f\" && echo WROTE-FILE $f; "
         "done; true";
}

// Removes the probe directories the container managed to make, if any:
// in a view root that was the host's root cgroup, or the container's own
// cgroup (which the harness could not remove otherwise). Explicit paths only.
void remove_probe_dirs(const std::string& tag, const std::string& id) {
  std::error_code ec;
  std::vector<fs::path> roots{"/sys/fs/cgroup", fs::path("/sys/fs/cgroup/husk-test") / id};
  for (auto& e : fs::directory_iterator("/sys/fs/cgroup", ec)) {
    roots.push_back(e.path());
    roots.push_back(e.path() / "husk-test" / id);
  }
  for (auto& r : roots) ::rmdir((r / tag).c_str());
}

void check_ro_cgroupfs(Container& c) {
  std::string tag = "husk-sec-probe-" + std::to_string(::getpid());
  std::string before = host_cgroup_dirs();
  c.args({"sh", "-c", vandal(tag)});
  auto r = c.run();
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  auto m = parse_mountinfo(r.out);
  int cg = 0;
  for (auto& e : m)
    if (e.mount_point.rfind("/sys/fs/cgroup", 0) == 0 && (e.fstype == "cgroup" || e.fstype == "cgroup2" ||
                                                          e.fstype == "tmpfs")) {
      INFO("mount " << e.mount_point << " " << e.fstype << " " << e.options);
      CHECK(e.has_opt("ro"));
      ++cg;
    }
  CHECK(cg > 0);
  CHECK_FALSE(contains(r.out, "WROTE-"));
  std::string after = host_cgroup_dirs();
  CHECK_FALSE(contains(after, tag));
  remove_probe_dirs(tag, c.id);
  CHECK(leftovers(c).empty());
}

}  // namespace

TEST_CASE("CVE-2023-25809: read-only /sys/fs/cgroup", "[cve-2023-25809][security]") {
  SECTION("default config (cgroup namespace)") {
    Container c("25809");
    check_ro_cgroupfs(c);
  }
  SECTION("no cgroup namespace") {
    Container c("25809-nocgns");
    remove_namespace(c.cfg, "cgroup");
    check_ro_cgroupfs(c);
  }
  SECTION("user namespace") {
    if (!fs::exists("/proc/self/ns/user")) return skip("no user namespaces");
    Container c("25809-userns");
    c.cfg["linux"]["namespaces"].push_back({{"type", "user"}});
    c.cfg["linux"]["uidMappings"] = {{{"containerID", 0}, {"hostID", 200000}, {"size", 65536}}};
    c.cfg["linux"]["gidMappings"] = {{{"containerID", 0}, {"hostID", 200000}, {"size", 65536}}};
    ::chmod(c.bundle.c_str(), 0755);  // mkdtemp made it 0700: the mapped root must reach the rootfs
    check_ro_cgroupfs(c);
  }
  SECTION("user namespace without a cgroup namespace") {
    if (!fs::exists("/proc/self/ns/user")) return skip("no user namespaces");
    Container c("25809-userns-nocgns");
    remove_namespace(c.cfg, "cgroup");
    c.cfg["linux"]["namespaces"].push_back({{"type", "user"}});
    c.cfg["linux"]["uidMappings"] = {{{"containerID", 0}, {"hostID", 200000}, {"size", 65536}}};
    c.cfg["linux"]["gidMappings"] = {{{"containerID", 0}, {"hostID", 200000}, {"size", 65536}}};
    ::chmod(c.bundle.c_str(), 0755);
    // The runtime may refuse to mount cgroupfs here; if it runs, read-only.
    std::string tag = "husk-sec-probe-" + std::to_string(::getpid());
    c.args({"sh", "-c", vandal(tag)});
    auto r = c.run();
    INFO(r.out << r.err);
    CHECK_FALSE(contains(r.out, "WROTE-"));
    CHECK_FALSE(contains(host_cgroup_dirs(), tag));
    remove_probe_dirs(tag, c.id);
  }
}
