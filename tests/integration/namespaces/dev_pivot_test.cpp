// tmpcopyup, /dev bound from the host or read-only, --no-pivot and a mount
// namespace shared with the host.
#include <fcntl.h>
#include <linux/magic.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include <catch2/catch.hpp>
#include <fstream>

#include "base/mountinfo.h"
#include "support.h"

using namespace husk;
using namespace nstest;

TEST_CASE("tmpcopyup copies the image's content into the new tmpfs") {
  std::string rootfs = make_rootfs("copyup");
  fs::path run = fs::path(rootfs) / "run";
  fs::create_directories(run / "sub/deeper");
  std::ofstream(run / "sub/deeper/file") << "content\n";
  REQUIRE(chown((run / "sub/deeper/file").c_str(), 1, 2) == 0);
  REQUIRE(chmod((run / "sub/deeper/file").c_str(), 0640) == 0);
  REQUIRE(chmod((run / "sub").c_str(), 0711) == 0);
  fs::create_symlink("/etc/passwd", run / "link");
  spec::Spec s;
  s.root = spec::Root{rootfs, false};
  s.mounts = {mnt("/run", "tmpfs", "tmpfs", {"tmpcopyup", "ro", "mode=755"})};
  auto o = in_child(CLONE_NEWNS, [&](Report& r) {
    ns::RootfsOptions opts = options_for(rootfs);
    base::Fd rootfs_fd = ns::prepare_rootfs(s, opts);
    ns::enter_rootfs(opts, rootfs_fd.get());
    struct stat st{};
    r.expect(fs_type("/run") == TMPFS_MAGIC, "/run is a tmpfs");
    r.expect(slurp("/run/sub/deeper/file") == "content\n", "file content copied");
    r.expect(lstat("/run/sub/deeper/file", &st) == 0 && st.st_uid == 1 && st.st_gid == 2 &&
                 (st.st_mode & 07777) == 0640,
             "owner and mode kept");
    r.expect((mode_of("/run/sub") & 07777) == 0711, "directory mode kept");
    r.expect(fs::read_symlink("/run/link") == "/etc/passwd", "symlink copied as a symlink");
    r.expect(is_ro("/run") && write_errno("/run/new") == EROFS, "ro applied after the copy");
  });
  expect_ok(o);
  // The image itself is unchanged underneath.
  CHECK(slurp((run / "sub/deeper/file").string()) == "content\n");
}

TEST_CASE("a /dev bound from the host is left alone") {
  std::string rootfs = make_rootfs("devbind");
  fs::path hostdev = fs::path(g_tmp) / "hostdev";
  fs::create_directories(hostdev);
  spec::Spec s;
  s.root = spec::Root{rootfs, false};
  s.mounts = {mnt("/dev", "bind", hostdev.string(), {"rbind"})};
  s.linux_ = spec::Linux{};
  s.linux_->devices = {spec::Device{"c", "/dev/fuse", 10, 229}};
  auto o = in_child(CLONE_NEWNS, [&](Report& r) {
    ns::RootfsOptions opts = options_for(rootfs);
    base::Fd rootfs_fd = ns::prepare_rootfs(s, opts);
    r.expect(fs::is_empty(hostdev), "no nodes or symlinks created in the host's directory");
  });
  expect_ok(o);
}

TEST_CASE("read-only /dev and a mount namespace shared with the host") {
  std::string rootfs = make_rootfs("devro");
  spec::Spec s;
  s.root = spec::Root{rootfs, false};
  s.mounts = {mnt("/dev", "tmpfs", "tmpfs", {"ro", "mode=755"})};
  auto o = in_child(CLONE_NEWNS, [&](Report& r) {
    ns::RootfsOptions opts = options_for(rootfs);
    base::Fd rootfs_fd = ns::prepare_rootfs(s, opts);
    ns::enter_rootfs(opts, rootfs_fd.get());
    ns::finalize_rootfs(s, opts);
    struct stat st{};
    r.expect(lstat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode), "devices created before /dev went ro");
    r.expect(is_ro("/dev"), "/dev is read-only as asked");
  });
  expect_ok(o);

  ns::RootfsOptions shared;
  shared.rootfs = base::judge(rootfs, O_PATH | O_DIRECTORY, "root.path").id;
  shared.own_mount_ns = false;
  CHECK_THROWS_WITH(ns::prepare_rootfs(s, shared), Catch::Contains("need a new mount namespace"));
}

TEST_CASE("--no-pivot moves the rootfs onto / and chroots; a shared mount namespace is only chrooted") {
  std::string rootfs = make_rootfs("nopivot");
  spec::Spec s;
  s.root = spec::Root{rootfs, true};
  s.mounts = {mnt("/proc", "proc", "proc", {}), mnt("/dev", "tmpfs", "tmpfs", {"mode=755"})};
  pid_t host = getpid();
  auto o = in_child(CLONE_NEWNS, [&](Report& r) {
    ns::RootfsOptions opts = options_for(rootfs);
    opts.no_pivot = true;
    base::Fd rootfs_fd = ns::prepare_rootfs(s, opts);
    ns::enter_rootfs(opts, rootfs_fd.get());
    ns::finalize_rootfs(s, opts);
    r.expect(fs::exists("/bin/busybox") && !fs::exists(g_tmp), "the rootfs is /");
    r.expect(is_ro("/"), "root.readonly after MS_MOVE");
    struct stat st{};
    r.expect(lstat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode), "/dev populated");
    expect_no_leak(r, host, rootfs);
  });
  expect_ok(o);

  spec::Spec bare;
  bare.root = spec::Root{rootfs, false};
  auto o2 = in_child(0, [&](Report& r) {
    ns::RootfsOptions opts = options_for(rootfs);
    opts.own_mount_ns = false;
    auto before = base::read_mountinfo().size();
    base::Fd rootfs_fd = ns::prepare_rootfs(bare, opts);
    r.expect(base::read_mountinfo().size() == before, "nothing mounted in a shared namespace");
    ns::enter_rootfs(opts, rootfs_fd.get());
    ns::finalize_rootfs(bare, opts);
    r.expect(fs::exists("/bin/busybox") && !fs::exists(g_tmp), "chrooted into the rootfs");
  });
  expect_ok(o2);
}
