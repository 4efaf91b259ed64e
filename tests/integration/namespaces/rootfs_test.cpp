// Root-only tests of prepare_rootfs / enter_rootfs / finalize_rootfs.
//
// The test process first moves into a private mount namespace of its own and
// makes its temporary directory a *shared* mount there; each scenario then
// forks a child that unshares again (so its copy of that directory is a peer
// of ours) and builds a container rootfs below it. The child checks the
// result from inside and reports failures over a pipe; it also reads our
// mountinfo to prove none of its mounts propagated back.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <linux/magic.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "namespaces/namespaces.h"
#include "skip.h"

using namespace husk;
namespace fs = std::filesystem;

namespace {

std::string g_tmp;  // shared mount (in our namespace) holding all test rootfs dirs

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct MountEntry {
  std::string mount_point, fstype, options, optional;
};
std::vector<MountEntry> mountinfo(const std::string& file) {
  std::vector<MountEntry> out;
  std::istringstream in(slurp(file));
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string id, parent, dev, root, mp, opts, f, optional;
    ls >> id >> parent >> dev >> root >> mp >> opts;
    while (ls >> f && f != "-") optional += f + " ";
    std::string type;
    ls >> type;
    out.push_back({mp, type, opts, optional});
  }
  return out;
}

// Collects failed expectations inside the child.
struct Report {
  std::string text;
  void fail(const std::string& msg) { text += "FAIL: " + msg + "\n"; }
  void expect(bool ok, const std::string& msg) {
    if (!ok) fail(msg);
  }
};

struct Outcome {
  int status = -1;
  std::string report;
};

// Run `body` in a child in new namespaces; its Report (and any exception) comes back.
Outcome in_child(int unshare_flags, const std::function<void(Report&)>& body) {
  int p[2];
  REQUIRE(pipe2(p, O_CLOEXEC) == 0);
  fflush(nullptr);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    close(p[0]);
    Report r;
    try {
      if (unshare(unshare_flags) < 0) throw sys_error("unshare");
      body(r);
    } catch (const std::exception& e) {
      r.text += std::string("ERROR: ") + e.what() + "\n";
    }
    if (write(p[1], r.text.data(), r.text.size()) < 0) _exit(3);
    _exit(r.text.empty() ? 0 : 1);
  }
  close(p[1]);
  Outcome o;
  char buf[4096];
  ssize_t n;
  while ((n = read(p[0], buf, sizeof buf)) > 0) o.report.append(buf, static_cast<size_t>(n));
  close(p[0]);
  REQUIRE(waitpid(pid, &o.status, 0) == pid);
  return o;
}

void expect_ok(const Outcome& o) {
  INFO(o.report);
  CHECK(o.report.empty());
  CHECK(WIFEXITED(o.status));
  CHECK(WEXITSTATUS(o.status) == 0);
}

// A fresh rootfs with a static busybox, below the shared temp dir.
std::string make_rootfs(const std::string& name) {
  fs::path root = fs::path(g_tmp) / name;
  fs::create_directories(root / "bin");
  fs::create_directories(root / "etc");
  fs::create_directories(root / "proc");
  fs::create_directories(root / "sys");
  fs::copy_file("/bin/busybox", root / "bin/busybox");
  fs::create_symlink("busybox", root / "bin/sh");
  std::ofstream(root / "etc/hostname") << "image\n";
  return root.string();
}

spec::Mount mnt(std::string dest, std::string type, std::string source, std::vector<std::string> opts) {
  spec::Mount m;
  m.destination = std::move(dest);
  m.type = std::move(type);
  m.source = std::move(source);
  m.options = std::move(opts);
  return m;
}

uint32_t mode_of(const std::string& p) {
  struct stat st{};
  return lstat(p.c_str(), &st) == 0 ? st.st_mode : 0;
}

bool is_ro(const std::string& p) {
  struct statvfs sv{};
  return statvfs(p.c_str(), &sv) == 0 && (sv.f_flag & ST_RDONLY);
}

long fs_type(const std::string& p) {
  struct statfs sf{};
  return statfs(p.c_str(), &sf) == 0 ? static_cast<long>(sf.f_type) : -1;
}

int write_errno(const std::string& p) {
  int fd = open(p.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd >= 0) {
    close(fd);
    return 0;
  }
  return errno;
}

// Nothing of the child's appeared in our (the "host's") mount table.
void expect_no_leak(Report& r, pid_t host_pid, const std::string& under) {
  for (const auto& m : mountinfo("/proc/" + std::to_string(host_pid) + "/mountinfo"))
    r.expect(m.mount_point.rfind(under, 0) != 0, "mount leaked to the host: " + m.mount_point);
}

}  // namespace

TEST_CASE("a full container rootfs: mounts, /dev, sysctl, masked and readonly paths, read-only root") {
  std::string rootfs = make_rootfs("full");
  bool unified_host = fs_type("/sys/fs/cgroup") == CGROUP2_SUPER_MAGIC;
  fs::path hostdata = fs::path(g_tmp) / "hostdata";
  fs::create_directories(hostdata);
  std::ofstream(hostdata / "file.txt") << "host data\n";

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
  // Kernels differ in which of these exist (missing ones are skipped): check the ones we have.
  std::vector<std::string> proc_files;
  for (const char* f : {"/proc/kcore", "/proc/keys", "/proc/timer_list", "/proc/sched_debug"})
    if (fs::exists(f)) proc_files.push_back(f);
  REQUIRE_FALSE(proc_files.empty());
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

  pid_t host = getpid();
  auto o = in_child(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS, [&](Report& r) {
    ns::RootfsOptions opts;
    opts.rootfs = rootfs;
    ns::prepare_rootfs(s, opts);
    // Before the pivot (where createContainer hooks run) the host paths are still visible.
    r.expect(fs::exists(fs::path(rootfs) / "etc/bound.txt"), "bind target file created in the rootfs");
    ns::enter_rootfs(opts);
    ns::set_hostname(s);
    ns::finalize_rootfs(s, opts);

    char cwd[256] = {};
    r.expect(getcwd(cwd, sizeof cwd) && std::string(cwd) == "/", "cwd is / after enter_rootfs");
    r.expect(fs::exists("/bin/busybox"), "busybox visible at /bin/busybox");
    r.expect(!fs::exists(std::string(g_tmp)), "the host temp dir is not visible after pivot");
    // The old root is gone from the mount table.
    for (const auto& m : mountinfo("/proc/self/mountinfo"))
      r.expect(m.mount_point.rfind(g_tmp, 0) != 0, "old root mount left: " + m.mount_point);

    // root.readonly
    r.expect(is_ro("/"), "/ is read-only");
    r.expect(write_errno("/etc/newfile") == EROFS, "writing to / fails with EROFS");

    // proc, sysfs, cgroup
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

    // /dev
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

    // tmpfs with size= and mode=
    struct statvfs sv{};
    r.expect(statvfs("/scratch", &sv) == 0 && sv.f_blocks * sv.f_frsize == 1024 * 1024, "tmpfs size=1024k");
    r.expect((mode_of("/scratch") & 07777) == 0700, "tmpfs mode=700");
    r.expect(write_errno("/scratch/f") == 0, "tmpfs is writable");
    r.expect(fs_type("/mnt/deep/nested") == TMPFS_MAGIC, "missing parents of a destination are created");
    r.expect(fs_type("/relative/dest") == TMPFS_MAGIC, "a relative destination is relative to /");

    // read-only binds
    r.expect(slurp("/data/file.txt") == "host data\n", "bind mount shows the host dir");
    r.expect(write_errno("/data/file.txt") == EROFS, "ro bind mount refuses writes");
    r.expect(statvfs("/data", &sv) == 0 && (sv.f_flag & ST_NOSUID), "nosuid on the bind mount");
    r.expect(slurp("/etc/bound.txt") == "host data\n", "file bind mount");
    r.expect(write_errno("/etc/bound.txt") == EROFS, "ro file bind mount refuses writes");

    // maskedPaths
    for (const auto& f : proc_files) {
      r.expect(slurp(f).empty(), "masked " + f + " reads empty");
      r.expect(lstat(f.c_str(), &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3), f + " is /dev/null");
    }
    r.expect(slurp("/etc/hostname").empty(), "masked file in the rootfs reads empty");
    r.expect(fs::is_empty("/sys/firmware"), "masked dir is empty");
    r.expect(fs_type("/sys/firmware") == TMPFS_MAGIC && is_ro("/sys/firmware"), "masked dir is a ro tmpfs");

    // readonlyPaths
    r.expect(is_ro("/proc/sys"), "/proc/sys is read-only");
    int hfd = open("/proc/sys/kernel/hostname", O_WRONLY | O_CLOEXEC);
    r.expect(hfd < 0 && errno == EROFS, "writing /proc/sys fails with EROFS");
    if (hfd >= 0) close(hfd);
    r.expect(is_ro("/proc/bus") && is_ro("/proc/irq"), "/proc/bus and /proc/irq are read-only");
    r.expect(write_errno("/proc/irq/default_smp_affinity") == EROFS, "writing /proc/irq fails with EROFS");
    r.expect(fs_type("/proc") == PROC_SUPER_MAGIC && !is_ro("/proc"), "the rest of /proc stays writable");

    // sysctl (written before /proc/sys went read-only) and hostname
    r.expect(slurp("/proc/sys/net/ipv4/ip_forward") == "1\n", "net.ipv4.ip_forward=1");
    r.expect(slurp("/proc/sys/kernel/shmmni") == "1234\n", "kernel.shmmni=1234");
    r.expect(slurp("/proc/sys/kernel/domainname") == "husk.test\n", "kernel.domainname");
    char hn[64] = {};
    gethostname(hn, sizeof hn);
    r.expect(std::string(hn) == "husk-it", "hostname set");

    // The container can run busybox and sees the same.
    pid_t c = fork();
    if (c == 0) {
      execl("/bin/busybox", "sh", "-c",
            "test -c /dev/null && ! touch /x 2>/dev/null && test \"$(cat /data/file.txt)\" = 'host data'", nullptr);
      _exit(127);
    }
    int ws = 0;
    waitpid(c, &ws, 0);
    r.expect(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "busybox sh checks inside the container");

    expect_no_leak(r, host, rootfs);
  });
  expect_ok(o);
  // And after the child is gone, our table is untouched as well.
  for (const auto& m : mountinfo("/proc/self/mountinfo")) CHECK(m.mount_point.rfind(rootfs, 0) != 0);
}

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
    ns::RootfsOptions opts;
    opts.rootfs = rootfs;
    ns::prepare_rootfs(s, opts);
    auto mi = mountinfo("/proc/self/mountinfo");
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

    ns::enter_rootfs(opts);
    ns::finalize_rootfs(s, opts);
    bool shared = false;
    for (const auto& m : mountinfo("/proc/self/mountinfo"))
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
    ns::RootfsOptions opts;
    opts.rootfs = rootfs;
    try {
      ns::prepare_rootfs(s, opts);
      r.fail("proc mounted through a symlink");
    } catch (const Error& e) {
      r.expect(std::string(e.what()).find("mounts[0] (/proc)") != std::string::npos, e.what());
    }
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
    ns::RootfsOptions opts;
    opts.rootfs = rootfs;
    try {
      ns::prepare_rootfs(s, opts);
      r.fail("bind over /proc/sys/kernel/core_pattern accepted");
    } catch (const Error& e) {
      r.expect(std::string(e.what()).find("inside /proc") != std::string::npos, e.what());
    }
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
    ns::RootfsOptions opts;
    opts.rootfs = rootfs;
    ns::prepare_rootfs(s, opts);
    ns::enter_rootfs(opts);
    // A createContainer hook (or a racing process sharing the rootfs) swaps
    // /dev/null for a file before the masks are applied.
    if (unlink("/dev/null") < 0) throw sys_error("unlink /dev/null");
    std::ofstream("/dev/null") << "not a device\n";
    try {
      ns::finalize_rootfs(s, opts);
      r.fail("masked with a fake /dev/null");
    } catch (const Error& e) {
      r.expect(std::string(e.what()).find("not the null device") != std::string::npos, e.what());
    }
  });
  expect_ok(o);
}

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
  std::istringstream in(slurp("/proc/self/mountinfo"));
  for (std::string line; std::getline(in, line);) {
    std::istringstream ls(line);
    std::string id, parent, dev, root, mp;
    ls >> id >> parent >> dev >> root >> mp;
    if (mp == point) found = root;
  }
  return found;
}

TEST_CASE("cgroup mount on a v1/hybrid host: tmpfs with the host's hierarchies, bound or through a cgroup namespace") {
  if (fs_type("/sys/fs/cgroup") != TMPFS_MAGIC || fs_type("/sys/fs/cgroup/memory") != CGROUP_SUPER_MAGIC) HUSK_SKIP("not a cgroup v1/hybrid host with a memory hierarchy");
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
        ns::RootfsOptions opts;
        opts.rootfs = rootfs;
        ns::prepare_rootfs(s, opts);
        ns::enter_rootfs(opts);
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
    ns::RootfsOptions opts;
    opts.rootfs = rootfs;
    ns::prepare_rootfs(s, opts);
    ns::enter_rootfs(opts);
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
  spec::Device d;
  d.type = "c";
  d.path = "/dev/fuse";
  d.major = 10;
  d.minor = 229;
  s.linux_->devices = {d};
  auto o = in_child(CLONE_NEWNS, [&](Report& r) {
    ns::RootfsOptions opts;
    opts.rootfs = rootfs;
    ns::prepare_rootfs(s, opts);
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
    ns::RootfsOptions opts;
    opts.rootfs = rootfs;
    ns::prepare_rootfs(s, opts);
    ns::enter_rootfs(opts);
    ns::finalize_rootfs(s, opts);
    struct stat st{};
    r.expect(lstat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode), "devices created before /dev went ro");
    r.expect(is_ro("/dev"), "/dev is read-only as asked");
  });
  expect_ok(o);

  ns::RootfsOptions shared;
  shared.rootfs = rootfs;
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
    ns::RootfsOptions opts;
    opts.rootfs = rootfs;
    opts.no_pivot = true;
    ns::prepare_rootfs(s, opts);
    ns::enter_rootfs(opts);
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
    ns::RootfsOptions opts;
    opts.rootfs = rootfs;
    opts.own_mount_ns = false;
    auto before = mountinfo("/proc/self/mountinfo").size();
    ns::prepare_rootfs(bare, opts);
    r.expect(mountinfo("/proc/self/mountinfo").size() == before, "nothing mounted in a shared namespace");
    ns::enter_rootfs(opts);
    ns::finalize_rootfs(bare, opts);
    r.expect(fs::exists("/bin/busybox") && !fs::exists(g_tmp), "chrooted into the rootfs");
  });
  expect_ok(o2);
}

namespace {

void write_file(const std::string& path, const std::string& text) {
  int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) throw sys_error("open " + path);
  ssize_t n = write(fd, text.data(), text.size());
  int err = errno;
  close(fd);
  if (n < 0) throw sys_error("write " + path, err);
}

}  // namespace

TEST_CASE("inside a user namespace: devices are bind mounts of the host's, sysfs falls back to a bind") {
  std::string rootfs = make_rootfs("userns");
  spec::Spec s;
  s.root = spec::Root{rootfs, true};
  s.mounts = {mnt("/dev", "tmpfs", "tmpfs", {"nosuid", "mode=755"}),
              mnt("/sys", "sysfs", "sysfs", {"nosuid", "noexec", "nodev", "ro"})};
  s.linux_ = spec::Linux{};
  spec::Device tun;
  tun.type = "c";
  tun.path = "/dev/net/tun";
  tun.major = 10;
  tun.minor = 200;
  if (fs::exists("/dev/net/tun")) s.linux_->devices = {tun};
  // No network namespace of its own: the user namespace may not mount sysfs.
  auto o = in_child(CLONE_NEWUSER | CLONE_NEWNS, [&](Report& r) {
    // We created the user namespace: map our own root (uid/gid 0) into it.
    write_file("/proc/self/setgroups", "deny");
    write_file("/proc/self/uid_map", "0 0 1");
    write_file("/proc/self/gid_map", "0 0 1");
    ns::RootfsOptions opts;
    opts.rootfs = rootfs;
    opts.user_ns = true;
    ns::prepare_rootfs(s, opts);
    ns::enter_rootfs(opts);
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
    ns::RootfsOptions opts;
    opts.rootfs = rootfs;
    ns::prepare_rootfs(s, opts);
    ns::enter_rootfs(opts);
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

namespace {

void send_fd(int sock, int fd) {
  char byte = 'f';
  iovec iov{&byte, 1};
  alignas(cmsghdr) char ctrl[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = ctrl;
  msg.msg_controllen = sizeof ctrl;
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
  REQUIRE(sendmsg(sock, &msg, 0) == 1);
}

int recv_fd(int sock) {
  char byte;
  iovec iov{&byte, 1};
  alignas(cmsghdr) char ctrl[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = ctrl;
  msg.msg_controllen = sizeof ctrl;
  if (recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) != 1) throw sys_error("recvmsg");
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  if (!c || c->cmsg_type != SCM_RIGHTS) throw Error("no fd received");
  int fd;
  std::memcpy(&fd, CMSG_DATA(c), sizeof fd);
  return fd;
}

}  // namespace

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
  int p[2];
  REQUIRE(pipe2(p, O_CLOEXEC) == 0);
  fflush(nullptr);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    // The "container init": a new user namespace, then its mount namespace.
    close(sv[0]);
    close(p[0]);
    Report r;
    try {
      if (unshare(CLONE_NEWUSER) < 0) throw sys_error("unshare user");
      if (write(sv[1], "u", 1) != 1) throw sys_error("signal");
      int fd = recv_fd(sv[1]);  // after the host wrote our maps and built the mount
      if (unshare(CLONE_NEWNS) < 0) throw sys_error("unshare mount");
      ns::RootfsOptions opts;
      opts.rootfs = rootfs;
      opts.user_ns = true;
      ns::RootfsOptions without = opts;
      try {
        ns::prepare_rootfs(s, without);
        r.fail("idmap inside a user namespace without a prepared fd was accepted");
      } catch (const Error& e) {
        r.expect(std::string(e.what()).find("make_idmapped_mount") != std::string::npos, e.what());
      }
      opts.idmapped[0] = fd;
      ns::prepare_rootfs(s, opts);
      ns::enter_rootfs(opts);
      struct stat st{};
      r.expect(stat("/data/user-owned", &st) == 0 && st.st_uid == 1000 && st.st_gid == 1000,
               "the container sees the on-disk owner 1000, got " + std::to_string(st.st_uid));
      r.expect(stat("/bin/busybox", &st) == 0 && st.st_uid == 65534, "unmapped rootfs files show as nobody");
    } catch (const std::exception& e) {
      r.text += std::string("ERROR: ") + e.what() + "\n";
    }
    if (write(p[1], r.text.data(), r.text.size()) < 0) _exit(3);
    _exit(r.text.empty() ? 0 : 1);
  }
  close(sv[1]);
  close(p[1]);
  char c;
  REQUIRE(read(sv[0], &c, 1) == 1);
  std::string dir = "/proc/" + std::to_string(pid) + "/";
  std::ofstream(dir + "uid_map") << "0 100000 65536\n";
  std::ofstream(dir + "gid_map") << "0 100000 65536\n";
  int nsfd = open((dir + "ns/user").c_str(), O_RDONLY | O_CLOEXEC);
  REQUIRE(nsfd >= 0);
  int tree = ns::make_idmapped_mount(s.mounts[0], nsfd);
  CHECK(tree >= 0);
  send_fd(sv[0], tree);
  close(tree);
  close(nsfd);
  close(sv[0]);
  std::string report;
  char buf[1024];
  ssize_t n;
  while ((n = read(p[0], buf, sizeof buf)) > 0) report.append(buf, static_cast<size_t>(n));
  close(p[0]);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  expect_ok({status, report});
}

int main(int argc, char** argv) {
  if (geteuid() != 0) {
    std::printf("SKIP: husk-it-namespaces needs root (mounts, mknod, pivot_root)\n");
    return 0;
  }
  if (!fs::exists("/bin/busybox")) {
    std::printf("SKIP: /bin/busybox (busybox-static) is not installed\n");
    return 0;
  }
  // Our own mount namespace, so nothing here can touch the machine's mounts.
  if (unshare(CLONE_NEWNS) < 0 || mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) < 0) {
    std::perror("husk-it-namespaces: private mount namespace");
    return 2;
  }
  char tmpl[] = "/tmp/husk-it-ns-XXXXXX";
  if (!mkdtemp(tmpl)) {
    std::perror("mkdtemp");
    return 2;
  }
  g_tmp = tmpl;
  // A shared mount, so a leak from a child's namespace would show up in ours.
  if (mount(tmpl, tmpl, nullptr, MS_BIND, nullptr) < 0 || mount(nullptr, tmpl, nullptr, MS_SHARED, nullptr) < 0) {
    std::perror("husk-it-namespaces: shared bind of the temp dir");
    return 2;
  }
  int rc = Catch::Session().run(argc, argv);
  umount2(tmpl, MNT_DETACH);
  fs::remove_all(tmpl);
  return husk_test::finish(rc);
}
