// Rootfs setup inside a user namespace, and idmapped bind mounts.
#include <fcntl.h>
#include <linux/magic.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>

#include "base/fdpass.h"
#include "support.h"

using namespace husk;
using namespace nstest;

TEST_CASE("inside a user namespace: devices are bind mounts of the host's, sysfs falls back to a bind") {
  std::string rootfs = make_rootfs("userns");
  spec::Spec s;
  s.root = spec::Root{rootfs, true};
  s.mounts = {mnt("/dev", "tmpfs", "tmpfs", {"nosuid", "mode=755"}),
              mnt("/sys", "sysfs", "sysfs", {"nosuid", "noexec", "nodev", "ro"})};
  s.linux_ = spec::Linux{};
  spec::Device tun{"c", "/dev/net/tun", 10, 200};
  if (fs::exists("/dev/net/tun")) s.linux_->devices = {tun};
  // No network namespace of its own: the user namespace may not mount sysfs.
  auto o = in_child(CLONE_NEWUSER | CLONE_NEWNS, [&](Report& r) {
    // We created the user namespace: map our own root (uid/gid 0) into it.
    write_file("/proc/self/setgroups", "deny");
    write_file("/proc/self/uid_map", "0 0 1");
    write_file("/proc/self/gid_map", "0 0 1");
    ns::RootfsOptions opts = options_for(rootfs);
    opts.user_ns = true;
    base::Fd rootfs_fd = ns::prepare_rootfs(s, opts);
    ns::enter_rootfs(opts, rootfs_fd.get());
    ns::finalize_rootfs(s, opts);
    struct stat st{};
    r.expect(lstat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3),
             "/dev/null is the host's null device");
    int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
    r.expect(fd >= 0 && write(fd, "x", 1) == 1, "/dev/null is usable");
    if (fd >= 0) close(fd);
    if (!s.linux_->devices.empty())
      r.expect(lstat("/dev/net/tun", &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(10, 200),
               "linux.devices entry bound from the host");
    r.expect(fs_type("/sys") == SYSFS_MAGIC && is_ro("/sys"), "/sys is the host's sysfs, read-only");
    r.expect(is_ro("/"), "root.readonly in a user namespace");
  });
  expect_ok(o);
}

TEST_CASE("idmapped bind mounts with their own mappings") {
  std::string rootfs = make_rootfs("idmap");
  fs::path src = fs::path(g_tmp) / "idmap-src";
  fs::create_directories(src);
  std::ofstream(src / "root-owned") << "x";
  std::ofstream(src / "user-owned") << "y";
  REQUIRE(chown((src / "root-owned").c_str(), 0, 0) == 0);
  REQUIRE(chown((src / "user-owned").c_str(), 1000, 1000) == 0);
  spec::Spec s;
  s.root = spec::Root{rootfs, false};
  spec::Mount m = mnt("/idmapped", "bind", src.string(), {"rbind", "idmap"});
  // On-disk ids 0..1999 are shown as 100000..101999.
  m.uid_mappings = {{0, 100000, 2000}};
  m.gid_mappings = {{0, 100000, 2000}};
  s.mounts = {m};
  auto o = in_child(CLONE_NEWNS, [&](Report& r) {
    ns::RootfsOptions opts = options_for(rootfs);
    base::Fd rootfs_fd = ns::prepare_rootfs(s, opts);
    ns::enter_rootfs(opts, rootfs_fd.get());
    struct stat st{};
    r.expect(stat("/idmapped/root-owned", &st) == 0 && st.st_uid == 100000 && st.st_gid == 100000,
             "on-disk root shows as 100000, got " + std::to_string(st.st_uid));
    r.expect(stat("/idmapped/user-owned", &st) == 0 && st.st_uid == 101000 && st.st_gid == 101000,
             "on-disk 1000 shows as 101000, got " + std::to_string(st.st_uid));
  });
  expect_ok(o);
  // The source itself is unchanged.
  struct stat st{};
  REQUIRE(stat((src / "user-owned").c_str(), &st) == 0);
  CHECK(st.st_uid == 1000);
}

TEST_CASE("idmapped mount into a user namespace: made on the host, attached by the init") {
  std::string rootfs = make_rootfs("idmap-userns");
  fs::path src = fs::path(g_tmp) / "idmap-src2";
  fs::create_directories(src);
  std::ofstream(src / "user-owned") << "y";
  REQUIRE(chown((src / "user-owned").c_str(), 1000, 1000) == 0);
  spec::Spec s;
  s.root = spec::Root{rootfs, false};
  s.mounts = {mnt("/data", "bind", src.string(), {"rbind", "idmap"})};

  int sv[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0);
  // The "container init": a new user namespace, then its mount namespace.
  auto init = [&](Report& r) {
    close(sv[0]);
    if (write(sv[1], "u", 1) != 1) throw sys_error("signal");
    char byte;
    int fd;  // after the host wrote our maps and built the mount
    if (base::recv_with_fd(sv[1], &byte, 1, &fd) != 1) throw sys_error("recvmsg");
    if (fd < 0) throw Error("no fd received");
    if (unshare(CLONE_NEWNS) < 0) throw sys_error("unshare mount");
    ns::RootfsOptions opts = options_for(rootfs);
    opts.user_ns = true;
    ns::RootfsOptions without = opts;
    expect_error(r, [&] { ns::prepare_rootfs(s, without); }, "make_idmapped_mount",
                 "idmap inside a user namespace without a prepared fd was accepted");
    opts.idmapped[0] = fd;
    base::Fd rootfs_fd = ns::prepare_rootfs(s, opts);
    ns::enter_rootfs(opts, rootfs_fd.get());
    struct stat st{};
    r.expect(stat("/data/user-owned", &st) == 0 && st.st_uid == 1000 && st.st_gid == 1000,
             "the container sees the on-disk owner 1000, got " + std::to_string(st.st_uid));
    r.expect(stat("/bin/busybox", &st) == 0 && st.st_uid == 65534, "unmapped rootfs files show as nobody");
  };
  // The runtime on the host: the init's maps, then its idmapped mount.
  auto host = [&](pid_t pid) {
    close(sv[1]);
    char c;
    REQUIRE(read(sv[0], &c, 1) == 1);
    std::string dir = "/proc/" + std::to_string(pid) + "/";
    std::ofstream(dir + "uid_map") << "0 100000 65536\n";
    std::ofstream(dir + "gid_map") << "0 100000 65536\n";
    int nsfd = open((dir + "ns/user").c_str(), O_RDONLY | O_CLOEXEC);
    REQUIRE(nsfd >= 0);
    int tree = ns::make_idmapped_mount(s.mounts[0], nsfd);
    CHECK(tree >= 0);
    REQUIRE(base::send_with_fd(sv[0], "f", 1, tree) == 1);
    close(tree);
    close(nsfd);
    close(sv[0]);
  };
  expect_ok(in_child(CLONE_NEWUSER, init, host));
}
