#include "support.h"

#include "base/file.h"
#include "base/mountinfo.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <sched.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <sstream>

using namespace husk;

namespace nstest {

std::string g_tmp;

std::string slurp(const std::string& path) { return base::try_read_file(path).value_or(""); }

Outcome in_child(int unshare_flags, const std::function<void(Report&)>& body,
                 const std::function<void(pid_t)>& parent) {
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
  if (parent) parent(pid);
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

void expect_error(Report& r, const std::function<void()>& f, const std::string& needle,
                  const std::string& accepted) {
  try {
    f();
    r.fail(accepted);
  } catch (const Error& e) {
    r.expect(std::string(e.what()).find(needle) != std::string::npos, e.what());
  }
}

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

ns::RootfsOptions options_for(const std::string& rootfs) {
  ns::RootfsOptions opts;
  opts.rootfs = base::judge(rootfs, O_PATH | O_DIRECTORY, "root.path").id;
  return opts;
}

spec::Mount mnt(std::string dest, std::string type, std::string source, std::vector<std::string> opts) {
  return spec::Mount{std::move(dest), std::move(source), std::move(type), std::move(opts), {}, {}};
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

void write_file(const std::string& path, const std::string& text) {
  int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) throw sys_error("open " + path);
  ssize_t n = write(fd, text.data(), text.size());
  int err = errno;
  close(fd);
  if (n < 0) throw sys_error("write " + path, err);
}

void expect_no_leak(Report& r, pid_t host_pid, const std::string& under) {
  for (const auto& m : base::read_mountinfo("/proc/" + std::to_string(host_pid) + "/mountinfo"))
    r.expect(m.mount_point.rfind(under, 0) != 0, "mount leaked to the host: " + m.mount_point);
}

}  // namespace nstest
