// The full case: one container rootfs with every kind of mount, /dev,
// sysctls, masked and readonly paths and a read-only root, checked from
// inside by concern.
#include <fcntl.h>
#include <linux/magic.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>

#include "base/mountinfo.h"
#include "support.h"

using namespace husk;
using namespace nstest;

namespace {

spec::Spec full_spec(const std::string& rootfs, const fs::path& hostdata) {
  spec::Spec s;
  s.root = spec::Root{rootfs, true};
  s.hostname = "husk-it";
  s.mounts = {
      mnt("/proc", "proc", "proc", {"nosuid", "noexec", "nodev"}),
      mnt("/dev", "tmpfs", "tmpfs", {"nosuid", "strictatime", "mode=755", "size=65536k"}),
      mnt("/dev/pts", "devpts", "devpts", {"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"}),
      mnt("/dev/shm", "tmpfs", "shm", {"nosuid", "noexec", "nodev", "mode=1777", "size=65536k"}),
      mnt("/dev/mqueue", "mqueue", "mqueue", {"nosuid", "noexec", "nodev"}),
      mnt("/sys", "sysfs", "sysfs", {"nosuid", "noexec", "nodev", "ro"}),
      mnt("/sys/fs/cgroup", "cgroup", "cgroup", {"nosuid", "noexec", "nodev", "relatime", "ro"}),
      mnt("/scratch", "tmpfs", "tmpfs", {"nodev", "mode=700", "size=1024k"}),
      mnt("/mnt/deep/nested", "tmpfs", "tmpfs", {}),
      mnt("relative/dest", "tmpfs", "tmpfs", {"size=64k"}),
      mnt("/data", "bind", hostdata.string(), {"rbind", "ro", "nosuid"}),
      mnt("/etc/bound.txt", "none", (hostdata / "file.txt").string(), {"bind", "ro"}),
  };
  s.linux_ = spec::Linux{};
  auto& l = *s.linux_;
  l.namespaces = {{"mount", ""}, {"network", ""}, {"ipc", ""}, {"uts", ""}};
  l.masked_paths = {"/sys/firmware", "/proc/does-not-exist", "/etc/hostname", "/proc/kcore", "/proc/keys",
                    "/proc/timer_list", "/proc/sched_debug"};
  l.readonly_paths = {"/proc/sys", "/proc/bus", "/proc/irq", "/proc/sysrq-trigger", "/no/such/path"};
  l.sysctl = {{"net.ipv4.ip_forward", "1"}, {"kernel.shmmni", "1234"}, {"kernel.domainname", "husk.test"}};
  spec::Device fuse;
  fuse.type = "c";
  fuse.path = "/dev/fuse";
  fuse.major = 10;
  fuse.minor = 229;
  fuse.file_mode = 0620;
  fuse.uid = 1;
  fuse.gid = 2;
  spec::Device fifo;
  fifo.type = "p";
  fifo.path = "/dev/sub/dir/fifo";
  spec::Device zero;  // overrides the default /dev/zero
  zero.type = "c";
  zero.path = "/dev/zero";
  zero.major = 1;
  zero.minor = 5;
  zero.file_mode = 0640;
  l.devices = {fuse, fifo, zero};
  return s;
}

// Kernels differ in which of these exist (missing ones are skipped): check the ones we have.
std::vector<std::string> existing_proc_files() {
  std::vector<std::string> proc_files;
  for (const char* f : {"/proc/kcore", "/proc/keys", "/proc/timer_list", "/proc/sched_debug"})
    if (fs::exists(f)) proc_files.push_back(f);
  return proc_files;
}

// cwd, the pivot, root.readonly
void check_root(Report& r) {
  char cwd[256] = {};
  r.expect(getcwd(cwd, sizeof cwd) && std::string(cwd) == "/", "cwd is / after enter_rootfs");
  r.expect(fs::exists("/bin/busybox"), "busybox visible at /bin/busybox");
  r.expect(!fs::exists(std::string(g_tmp)), "the host temp dir is not visible after pivot");
  // The old root is gone from the mount table.
  for (const auto& m : base::read_mountinfo())
    r.expect(m.mount_point.rfind(g_tmp, 0) != 0, "old root mount left: " + m.mount_point);

  // root.readonly
  r.expect(is_ro("/"), "/ is read-only");
  r.expect(write_errno("/etc/newfile") == EROFS, "writing to / fails with EROFS");
}

void check_proc_sys_cgroup(Report& r, bool unified_host) {
  r.expect(fs_type("/proc") == PROC_SUPER_MAGIC, "/proc is procfs");
  r.expect(fs_type("/sys") == SYSFS_MAGIC, "/sys is sysfs");
  r.expect(is_ro("/sys"), "/sys is read-only");
  if (unified_host) {
    r.expect(fs_type("/sys/fs/cgroup") == CGROUP2_SUPER_MAGIC, "/sys/fs/cgroup is cgroup2");
  } else {
    // v1/hybrid: a tmpfs of the host's hierarchies (see the cgroup v1 test).
    r.expect(fs_type("/sys/fs/cgroup") == TMPFS_MAGIC, "/sys/fs/cgroup is a tmpfs");
    r.expect(fs_type("/sys/fs/cgroup/memory") == CGROUP_SUPER_MAGIC, "/sys/fs/cgroup/memory is cgroup v1");
    r.expect(is_ro("/sys/fs/cgroup/memory"), "/sys/fs/cgroup/memory is read-only");
  }
  r.expect(is_ro("/sys/fs/cgroup"), "/sys/fs/cgroup is read-only");
}

void check_dev(Report& r) {
  r.expect(fs_type("/dev") == TMPFS_MAGIC, "/dev is tmpfs");
  r.expect(!is_ro("/dev"), "/dev stays writable when not asked ro");
  struct {
    const char* p;
    unsigned maj, min;
  } devs[] = {{"/dev/null", 1, 3}, {"/dev/zero", 1, 5}, {"/dev/full", 1, 7},
              {"/dev/random", 1, 8}, {"/dev/urandom", 1, 9}, {"/dev/tty", 5, 0}};
  for (const auto& d : devs) {
    struct stat st{};
    bool ok = lstat(d.p, &st) == 0 && S_ISCHR(st.st_mode) && major(st.st_rdev) == d.maj &&
              minor(st.st_rdev) == d.min &&
              (st.st_mode & 07777) == (std::string(d.p) == "/dev/zero" ? 0640u : 0666u);
    r.expect(ok, std::string(d.p) + " is a char device with the right mode " + std::to_string(d.maj) + ":" + std::to_string(d.min));
  }
  int zfd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
  char zb[4] = {1, 1, 1, 1};
  r.expect(zfd >= 0 && read(zfd, zb, 4) == 4 && zb[0] == 0 && zb[3] == 0, "/dev/zero reads zeros");
  if (zfd >= 0) close(zfd);
  r.expect(fs::read_symlink("/dev/ptmx") == "pts/ptmx", "/dev/ptmx -> pts/ptmx");
  r.expect(fs::read_symlink("/dev/fd") == "/proc/self/fd", "/dev/fd -> /proc/self/fd");
  r.expect(fs::read_symlink("/dev/stdin") == "/proc/self/fd/0", "/dev/stdin");
  r.expect(fs::read_symlink("/dev/stderr") == "/proc/self/fd/2", "/dev/stderr");
  r.expect(fs_type("/dev/pts") == DEVPTS_SUPER_MAGIC, "/dev/pts is devpts");
  int ptm = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
  r.expect(ptm >= 0, "a pty can be opened through /dev/ptmx");
  if (ptm >= 0) close(ptm);
  r.expect(fs_type("/dev/shm") == TMPFS_MAGIC && (mode_of("/dev/shm") & 07777) == 01777, "/dev/shm tmpfs 1777");
  r.expect(fs_type("/dev/mqueue") == 0x19800202 /* MQUEUE_MAGIC */, "/dev/mqueue is mqueue");
  struct stat st{};
  r.expect(lstat("/dev/fuse", &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(10, 229) &&
               (st.st_mode & 07777) == 0620 && st.st_uid == 1 && st.st_gid == 2,
           "linux.devices /dev/fuse: c 10:229 0620 uid 1 gid 2");
  r.expect(S_ISFIFO(mode_of("/dev/sub/dir/fifo")), "linux.devices fifo with created parent dirs");
}

// tmpfs with size= and mode=, read-only binds
void check_tmpfs_and_binds(Report& r) {
  struct statvfs sv{};
  r.expect(statvfs("/scratch", &sv) == 0 && sv.f_blocks * sv.f_frsize == 1024 * 1024, "tmpfs size=1024k");
  r.expect((mode_of("/scratch") & 07777) == 0700, "tmpfs mode=700");
  r.expect(write_errno("/scratch/f") == 0, "tmpfs is writable");
  r.expect(fs_type("/mnt/deep/nested") == TMPFS_MAGIC, "missing parents of a destination are created");
  r.expect(fs_type("/relative/dest") == TMPFS_MAGIC, "a relative destination is relative to /");

  r.expect(slurp("/data/file.txt") == "host data\n", "bind mount shows the host dir");
  r.expect(write_errno("/data/file.txt") == EROFS, "ro bind mount refuses writes");
  r.expect(statvfs("/data", &sv) == 0 && (sv.f_flag & ST_NOSUID), "nosuid on the bind mount");
  r.expect(slurp("/etc/bound.txt") == "host data\n", "file bind mount");
  r.expect(write_errno("/etc/bound.txt") == EROFS, "ro file bind mount refuses writes");
}

void check_masked_paths(Report& r, const std::vector<std::string>& proc_files) {
  struct stat st{};
  for (const auto& f : proc_files) {
    r.expect(slurp(f).empty(), "masked " + f + " reads empty");
    r.expect(lstat(f.c_str(), &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3), f + " is /dev/null");
  }
  r.expect(slurp("/etc/hostname").empty(), "masked file in the rootfs reads empty");
  r.expect(fs::is_empty("/sys/firmware"), "masked dir is empty");
  r.expect(fs_type("/sys/firmware") == TMPFS_MAGIC && is_ro("/sys/firmware"), "masked dir is a ro tmpfs");
}

void check_readonly_paths(Report& r) {
  r.expect(is_ro("/proc/sys"), "/proc/sys is read-only");
  int hfd = open("/proc/sys/kernel/hostname", O_WRONLY | O_CLOEXEC);
  r.expect(hfd < 0 && errno == EROFS, "writing /proc/sys fails with EROFS");
  if (hfd >= 0) close(hfd);
  r.expect(is_ro("/proc/bus") && is_ro("/proc/irq"), "/proc/bus and /proc/irq are read-only");
  r.expect(write_errno("/proc/irq/default_smp_affinity") == EROFS, "writing /proc/irq fails with EROFS");
  r.expect(fs_type("/proc") == PROC_SUPER_MAGIC && !is_ro("/proc"), "the rest of /proc stays writable");
}

// sysctl (written before /proc/sys went read-only) and hostname
void check_sysctl_and_hostname(Report& r) {
  r.expect(slurp("/proc/sys/net/ipv4/ip_forward") == "1\n", "net.ipv4.ip_forward=1");
  r.expect(slurp("/proc/sys/kernel/shmmni") == "1234\n", "kernel.shmmni=1234");
  r.expect(slurp("/proc/sys/kernel/domainname") == "husk.test\n", "kernel.domainname");
  char hn[64] = {};
  gethostname(hn, sizeof hn);
  r.expect(std::string(hn) == "husk-it", "hostname set");
}

// The container can run busybox and sees the same.
void check_busybox(Report& r) {
  pid_t c = fork();
  if (c == 0) {
    execl("/bin/busybox", "sh", "-c",
          "test -c /dev/null && ! touch /x 2>/dev/null && test \"$(cat /data/file.txt)\" = 'host data'", nullptr);
    _exit(127);
  }
  int ws = 0;
  waitpid(c, &ws, 0);
  r.expect(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "busybox sh checks inside the container");
}

}  // namespace

TEST_CASE("a full container rootfs: mounts, /dev, sysctl, masked and readonly paths, read-only root") {
  std::string rootfs = make_rootfs("full");
  bool unified_host = fs_type("/sys/fs/cgroup") == CGROUP2_SUPER_MAGIC;
  fs::path hostdata = fs::path(g_tmp) / "hostdata";
  fs::create_directories(hostdata);
  std::ofstream(hostdata / "file.txt") << "host data\n";

  spec::Spec s = full_spec(rootfs, hostdata);
  std::vector<std::string> proc_files = existing_proc_files();
  REQUIRE_FALSE(proc_files.empty());

  pid_t host = getpid();
  auto o = in_child(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS, [&](Report& r) {
    ns::RootfsOptions opts = options_for(rootfs);
    base::Fd rootfs_fd = ns::prepare_rootfs(s, opts);
    // Before the pivot (where createContainer hooks run) the host paths are still visible.
    r.expect(fs::exists(fs::path(rootfs) / "etc/bound.txt"), "bind target file created in the rootfs");
    ns::enter_rootfs(opts, rootfs_fd.get());
    ns::set_hostname(s);
    ns::finalize_rootfs(s, opts);

    check_root(r);
    check_proc_sys_cgroup(r, unified_host);
    check_dev(r);
    check_tmpfs_and_binds(r);
    check_masked_paths(r, proc_files);
    check_readonly_paths(r);
    check_sysctl_and_hostname(r);
    check_busybox(r);
    expect_no_leak(r, host, rootfs);
  });
  expect_ok(o);
  // And after the child is gone, our table is untouched as well.
  for (const auto& m : base::read_mountinfo()) CHECK(m.mount_point.rfind(rootfs, 0) != 0);
}
