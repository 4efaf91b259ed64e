// Paths that try to leave the rootfs or to mount over what the kernel
// reports: symlinked and .. destinations, proc on a symlink, mounts inside
// /proc, a fake /dev/null for maskedPaths.
#include <linux/magic.h>
#include <sched.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>

#include "base/mountinfo.h"
#include "support.h"

using namespace husk;
using namespace nstest;

TEST_CASE("symlinks and .. in destinations never leave the rootfs; rshared does not leak to the host") {
  std::string rootfs = make_rootfs("evil");
  std::string escape = g_tmp + "/escape";
  fs::create_directories(escape);
  // Followed on the host this would be <tmp>/escape; in the rootfs it is <rootfs><tmp>/escape.
  fs::create_symlink("/../../../" + escape, fs::path(rootfs) / "evil");
  fs::create_symlink("../../../../../../../..", fs::path(rootfs) / "up");

  spec::Spec s;
  s.root = spec::Root{rootfs, false};
  s.mounts = {
      mnt("/proc", "proc", "proc", {}),
      mnt("/evil", "tmpfs", "tmpfs", {"size=64k"}),
      mnt("/a/../../etc", "tmpfs", "tmpfs", {"size=64k"}),
      mnt("/up/tmp/x", "tmpfs", "tmpfs", {"size=64k"}),
  };
  s.linux_ = spec::Linux{};
  s.linux_->rootfs_propagation = "rshared";

  pid_t host = getpid();
  auto o = in_child(CLONE_NEWNS, [&](Report& r) {
    ns::RootfsOptions opts = options_for(rootfs);
    base::Fd rootfs_fd = ns::prepare_rootfs(s, opts);
    auto mi = base::read_mountinfo();
    auto mounted = [&](const std::string& p) {
      for (const auto& m : mi)
        if (m.mount_point == p) return true;
      return false;
    };
    r.expect(mounted(rootfs + escape), "symlink destination mounted inside the rootfs");
    r.expect(!mounted(escape), "nothing mounted on the host path the symlink names");
    r.expect(mounted(rootfs + "/etc"), "/a/../../etc is <rootfs>/etc");
    r.expect(!mounted("/etc"), "host /etc untouched");
    r.expect(mounted(rootfs + "/tmp/x"), "relative symlink up and out stays in the rootfs");
    r.expect(!fs::exists("/tmp/x"), "host /tmp/x not created");
    r.expect(fs::is_empty(escape), "host escape dir untouched");
    expect_no_leak(r, host, rootfs);
    expect_no_leak(r, host, escape);

    ns::enter_rootfs(opts, rootfs_fd.get());
    ns::finalize_rootfs(s, opts);
    bool shared = false;
    for (const auto& m : base::read_mountinfo())
      if (m.mount_point == "/") shared = m.optional.find("shared:") != std::string::npos;
    r.expect(shared, "rootfsPropagation rshared makes / shared");
    expect_no_leak(r, host, rootfs);
  });
  expect_ok(o);
}

TEST_CASE("proc and sysfs are only mounted on real directories (CVE-2019-16884/19921)") {
  std::string rootfs = make_rootfs("procsym");
  fs::remove(fs::path(rootfs) / "proc");
  fs::create_directories(fs::path(rootfs) / "fakeproc");
  fs::create_symlink("/fakeproc", fs::path(rootfs) / "proc");
  spec::Spec s;
  s.root = spec::Root{rootfs, false};
  s.mounts = {mnt("/proc", "proc", "proc", {})};
  auto o = in_child(CLONE_NEWNS, [&](Report& r) {
    ns::RootfsOptions opts = options_for(rootfs);
    expect_error(r, [&] { ns::prepare_rootfs(s, opts); }, "mounts[0] (/proc)", "proc mounted through a symlink");
    r.expect(fs_type(rootfs + "/fakeproc") != PROC_SUPER_MAGIC, "nothing mounted on the symlink's target");
  });
  expect_ok(o);
}

TEST_CASE("mounts inside /proc other than the lxcfs files are refused") {
  std::string rootfs = make_rootfs("procsub");
  spec::Spec s;
  s.root = spec::Root{rootfs, false};
  s.mounts = {mnt("/proc", "proc", "proc", {}),
              mnt("/proc/sys/kernel/core_pattern", "bind", "/etc/hostname", {"bind"})};
  auto o = in_child(CLONE_NEWNS, [&](Report& r) {
    ns::RootfsOptions opts = options_for(rootfs);
    expect_error(r, [&] { ns::prepare_rootfs(s, opts); }, "inside /proc",
                 "bind over /proc/sys/kernel/core_pattern accepted");
  });
  expect_ok(o);
}

TEST_CASE("maskedPaths refuse a /dev/null that is not the null device (CVE-2025-31133)") {
  std::string rootfs = make_rootfs("fakenull");
  std::ofstream(fs::path(rootfs) / "etc/secret") << "secret\n";
  spec::Spec s;
  s.root = spec::Root{rootfs, false};
  s.mounts = {mnt("/proc", "proc", "proc", {})};
  s.linux_ = spec::Linux{};
  s.linux_->masked_paths = {"/etc/secret"};
  auto o = in_child(CLONE_NEWNS, [&](Report& r) {
    ns::RootfsOptions opts = options_for(rootfs);
    base::Fd rootfs_fd = ns::prepare_rootfs(s, opts);
    ns::enter_rootfs(opts, rootfs_fd.get());
    // A createContainer hook (or a racing process sharing the rootfs) swaps
    // /dev/null for a file before the masks are applied.
    if (unlink("/dev/null") < 0) throw sys_error("unlink /dev/null");
    std::ofstream("/dev/null") << "not a device\n";
    expect_error(r, [&] { ns::finalize_rootfs(s, opts); }, "not the null device", "masked with a fake /dev/null");
  });
  expect_ok(o);
}
