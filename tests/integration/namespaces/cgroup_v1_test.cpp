// "cgroup" mounts on a cgroup v1 or hybrid host.
#include <linux/magic.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <sstream>

#include <catch2/catch.hpp>
#include <fstream>

#include "skip.h"
#include "base/mountinfo.h"
#include "support.h"

using namespace husk;
using namespace nstest;

// The line "<id>:<controllers>:<path>" of /proc/self/cgroup for `controller`.
std::string own_cgroup_path(const std::string& controller) {
  std::istringstream in(slurp("/proc/self/cgroup"));
  for (std::string line; std::getline(in, line);) {
    size_t a = line.find(':'), b = line.find(':', a + 1);
    if (line.substr(a + 1, b - a - 1) == controller) return line.substr(b + 1);
  }
  return "";
}

// The root field of the topmost mount at `point` in /proc/self/mountinfo.
std::string mount_root(const std::string& point) {
  std::string found = "<none>";
  for (const auto& m : base::read_mountinfo())
    if (m.mount_point == point) found = m.root;
  return found;
}

TEST_CASE("cgroup mount on a v1/hybrid host: tmpfs with the host's hierarchies, bound or through a cgroup namespace") {
  if (fs_type("/sys/fs/cgroup") != TMPFS_MAGIC || fs_type("/sys/fs/cgroup/memory") != CGROUP_SUPER_MAGIC)
    HUSK_SKIP("not a cgroup v1/hybrid host with a memory hierarchy");
  bool hybrid = fs_type("/sys/fs/cgroup/unified") == CGROUP2_SUPER_MAGIC;
  std::string memcg = own_cgroup_path("memory");
  REQUIRE(!memcg.empty());
  for (bool cgroupns : {false, true}) {
    DYNAMIC_SECTION((cgroupns ? "with" : "without") << " a cgroup namespace") {
      std::string rootfs = make_rootfs(cgroupns ? "cgv1ns" : "cgv1");
      spec::Spec s;
      s.root = spec::Root{rootfs, false};
      // Read-only through a namespace, read-write as a bind: both variants covered.
      s.mounts = {mnt("/proc", "proc", "proc", {}),
                  mnt("/sys/fs/cgroup", "cgroup", "cgroup",
                      {"nosuid", "noexec", "nodev", cgroupns ? "ro" : "rw"})};
      s.linux_ = spec::Linux{};
      if (cgroupns) s.linux_->namespaces.push_back(spec::Namespace{"cgroup", ""});
      auto o = in_child(CLONE_NEWNS | (cgroupns ? CLONE_NEWCGROUP : 0), [&](Report& r) {
        ns::RootfsOptions opts = options_for(rootfs);
        base::Fd rootfs_fd = ns::prepare_rootfs(s, opts);
        ns::enter_rootfs(opts, rootfs_fd.get());
        ns::finalize_rootfs(s, opts);
        r.expect(fs_type("/sys/fs/cgroup") == TMPFS_MAGIC, "/sys/fs/cgroup is a tmpfs");
        r.expect((mode_of("/sys/fs/cgroup") & 07777) == 0755, "/sys/fs/cgroup has mode 0755");
        r.expect(is_ro("/sys/fs/cgroup") == cgroupns, "/sys/fs/cgroup is read-only exactly when asked");
        r.expect(fs_type("/sys/fs/cgroup/memory") == CGROUP_SUPER_MAGIC, "/sys/fs/cgroup/memory is cgroup v1");
        r.expect(is_ro("/sys/fs/cgroup/memory") == cgroupns, "/sys/fs/cgroup/memory is read-only exactly when asked");
        r.expect(fs_type("/sys/fs/cgroup/systemd") == CGROUP_SUPER_MAGIC || !fs::exists("/sys/fs/cgroup/systemd"),
                 "/sys/fs/cgroup/systemd, if there, is cgroup v1");
        if (hybrid)
          r.expect(fs_type("/sys/fs/cgroup/unified") == CGROUP2_SUPER_MAGIC, "/sys/fs/cgroup/unified is cgroup2");
        // Our own memory cgroup is the root of what the container sees.
        std::string procs = slurp("/sys/fs/cgroup/memory/cgroup.procs");
        r.expect(("\n" + procs).find("\n" + std::to_string(getpid()) + "\n") != std::string::npos,
                 "our pid is in /sys/fs/cgroup/memory/cgroup.procs: " + procs);
        std::string root = mount_root("/sys/fs/cgroup/memory");
        r.expect(root == (cgroupns ? "/" : memcg), "mount root of /sys/fs/cgroup/memory: " + root);
        r.expect(write_errno("/sys/fs/cgroup/new") == (cgroupns ? EROFS : 0), "writing to the tmpfs");
      });
      expect_ok(o);
    }
  }
}
