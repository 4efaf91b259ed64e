// --report: the sink, the file opened as the sandbox's user, and the
// cgroup's counts of limits reached.
#include "sandbox/report.h"

#include <fcntl.h>
#include <grp.h>
#include <linux/openat2.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iostream>

#include "base/error.h"
#include "base/fdpass.h"
#include "base/printable.h"
#include "cgroups/host.h"

namespace husk::rt {

using base::Fd;

namespace {

// `path` for writing, no symlink (or magic link) anywhere in it: one
// another user planted (/tmp/report -> ~/.bashrc) would have the user
// clobber their own file. It must then be a regular file of `uid`'s (one
// another user made would let them read the report).
int open_report_here(const std::string& path, uid_t uid) {
  open_how how{};
  // O_NONBLOCK: a FIFO planted there (by an earlier sandbox) must not hold us in open().
  how.flags = O_WRONLY | O_CREAT | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC;
  how.mode = 0600;
  how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  Fd fd(static_cast<int>(::syscall(SYS_openat2, AT_FDCWD, path.c_str(), &how, sizeof how)));
  if (!fd && errno == ELOOP)
    throw Error("--report " + base::printable(path) + ": a symlink in the path is not followed; name the real file");
  if (!fd) throw sys_error("--report: open " + base::printable(path));
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) throw sys_error("--report: stat " + base::printable(path));
  // One link only: a hard link would make us truncate and write another file.
  if (!S_ISREG(st.st_mode) || st.st_uid != uid || st.st_nlink != 1)
    throw Error("--report " + base::printable(path) + ": not a regular file of uid " + std::to_string(uid) +
                " with one link");
  if (::ftruncate(fd.get(), 0) != 0) throw sys_error("--report: truncate " + base::printable(path));
  return fd.release();
}

// As root for a user, the file is opened by a child that is that user (as
// as_user does) and handed back over a socket.
Fd open_report(const std::string& path, uid_t uid, gid_t gid) {
  if (::geteuid() != 0 || uid == 0) return Fd(open_report_here(path, ::geteuid()));
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) throw sys_error("--report: socketpair");
  Fd mine(sv[0]), theirs(sv[1]);
  pid_t child = ::fork();
  if (child < 0) throw sys_error("--report: fork");
  if (child == 0) {
    std::string said;
    int fd = -1;
    try {
      if (::setgroups(0, nullptr) != 0 || ::setresgid(gid, gid, gid) != 0 || ::setresuid(uid, uid, uid) != 0)
        throw sys_error("become uid " + std::to_string(uid));
      fd = open_report_here(path, uid);
    } catch (const std::exception& e) {
      said = e.what();
    }
    said.resize(std::min<size_t>(said.size(), 4000));
    base::send_with_fd(theirs.get(), said.empty() ? "" : said.data(), said.empty() ? 1 : said.size(), fd);
    _exit(0);
  }
  theirs.reset();
  char buf[4096];
  int fd = -1;
  ssize_t n = base::recv_with_fd(mine.get(), buf, sizeof buf, &fd);
  while (::waitpid(child, nullptr, 0) < 0 && errno == EINTR) {
  }
  Fd got(fd);
  if (n > 1 || (n == 1 && buf[0] != '\0')) throw Error(std::string(buf, static_cast<size_t>(n)));
  if (!got) throw Error("--report " + base::printable(path) + ": could not be opened as uid " + std::to_string(uid));
  return got;
}

// A write that cannot raise SIGPIPE in husk: the signal, blocked meanwhile,
// is taken back if the write made one (the wait would pass it to the command).
bool write_line(int fd, const std::string& text) {
  sigset_t pipe, old;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  ::pthread_sigmask(SIG_BLOCK, &pipe, &old);
  const char* p = text.data();
  size_t left = text.size();
  bool ok = true;
  while (left > 0) {
    ssize_t w = ::write(fd, p, left);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      ok = false;
      if (errno == EPIPE) {
        const timespec none{0, 0};
        ::sigtimedwait(&pipe, nullptr, &none);
      }
      break;
    }
    p += w;
    left -= static_cast<size_t>(w);
  }
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return ok;
}

// KEY's count in a cgroup's file below the held directory `dir`; 0 when there is none.
uint64_t count(const Fd& dir, const char* file, const char* key) {
  Fd f(dir ? ::openat(dir.get(), file, O_RDONLY | O_CLOEXEC) : -1);
  if (!f) return 0;
  std::string text;
  char buf[1024];
  ssize_t n;
  while (text.size() < 65536 && ((n = ::read(f.get(), buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR)))
    if (n > 0) text.append(buf, static_cast<size_t>(n));
  return report::event_count(text, key);
}

}  // namespace

void claim_fd(const std::string& flag, int fd, bool write) {
  const std::string at = flag + " " + std::to_string(fd);
  if (fd <= STDERR_FILENO) throw Error(at + ": the command's stdio; pass another fd");
  int mode = ::fcntl(fd, F_GETFL);
  if (mode < 0) throw sys_error(at + ": not an open fd");
  mode &= O_ACCMODE;
  if (write ? mode == O_RDONLY : mode == O_WRONLY)
    throw Error(at + ": not open for " + (write ? "writing" : "reading"));
  if (::fcntl(fd, F_SETFD, FD_CLOEXEC) != 0) throw sys_error(at + ": set close-on-exec");
}

Report::Report(const SandboxOptions& o, const SandboxHost& host, std::string sandbox) : sandbox_(std::move(sandbox)) {
  if (o.report.empty() && o.report_fd < 0) return;
  sink_ = std::make_unique<Sink>();
  if (o.report_fd >= 0) {
    claim_fd("--report-fd", o.report_fd, true);
    // Our own copy: the caller's number may be closed or reused meanwhile (--control-fd, the same socket).
    sink_->fd = Fd(::fcntl(o.report_fd, F_DUPFD_CLOEXEC, 3));
    if (!sink_->fd) throw sys_error("--report-fd " + std::to_string(o.report_fd) + ": dup");
  } else {
    sink_->fd = open_report(flag_path("--report", o.report, host.cwd), host.uid, host.gid);
  }
}

void Report::emit(const std::string& type, const report::ojson& fields) const {
  if (!sink_) return;
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  const std::string text = report::line(type, now, sandbox_, fields);
  std::lock_guard<std::mutex> lock(sink_->mu);
  if (sink_->broken) return;
  if (!write_line(sink_->fd.get(), text)) {
    const int err = errno;
    sink_->broken = true;
    std::cerr << "husk sandbox: --report: write: " << std::strerror(err) << "; the rest goes unreported" << std::endl;
  }
}

void Report::refused(const ProxyRefusal& r) const {
  if (!sink_) return;
  size_t n;
  {
    std::lock_guard<std::mutex> lock(sink_->mu);
    n = ++sink_->refused;
  }
  if (n <= kMaxRefused) emit("refused", report::refused(r));
  if (n == kMaxRefused + 1)
    emit("dropped", {{"what", "refused"}, {"detail", "past " + std::to_string(kMaxRefused) +
                                                        " refusals the rest go unreported (the exit summary on "
                                                        "stderr counts them all)"}});
}

void LimitWatch::open(pid_t init, const SandboxOptions& o) {
  const cgroups::Hierarchies& h = cgroups::host_hierarchies();
  const std::string cg = cgroups::cgroup_of(init, h);
  if (cg.empty()) return;
  unified_ = h.mode == cgroups::Mode::unified;
  auto dir = [&](const char* controller) {
    auto it = h.v1.find(controller);
    const std::string base = unified_ ? h.unified : it == h.v1.end() ? "" : it->second;
    return Fd(base.empty() ? -1 : ::open((base + cg).c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  };
  if (o.pids) pids_ = dir("pids");
  if (!o.memory.empty()) memory_ = dir("memory");
  forks_ = count(pids_, "pids.events", "max");
  kills_ = count(memory_, unified_ ? "memory.events" : "memory.oom_control", "oom_kill");
}

void LimitWatch::say(const Report& report) const {
  if (uint64_t forks = count(pids_, "pids.events", "max"); forks > forks_)
    report.emit("limit", report::limit("pids", forks - forks_, "forks refused by the cgroup's pids.max"));
  if (uint64_t kills = count(memory_, unified_ ? "memory.events" : "memory.oom_control", "oom_kill"); kills > kills_)
    report.emit("limit", report::limit("memory", kills - kills_, "processes killed by the cgroup's OOM killer"));
}

}  // namespace husk::rt
