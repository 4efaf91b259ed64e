#include "support.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <thread>

#include "base/error.h"
#include "base/file.h"

namespace husk_test {

using husk::sys_error;

Capture::Capture() : fd_(memfd_create("husk-test-capture", MFD_CLOEXEC)) {
  if (!fd_) throw sys_error("memfd_create capture");
}

// O_APPEND: a container that keeps the fd after its runtime exited adds to
// the end instead of overwriting what the runtime wrote.
Capture::Capture(const std::string& file)
    : fd_(::open(file.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644)) {
  if (!fd_) throw sys_error("open " + file);
}

std::string Capture::read() const {
  // pread: the file offset is shared with the writers.
  std::string s;
  char buf[65536];
  off_t off = 0;
  for (;;) {
    ssize_t n = ::pread(fd_.get(), buf, sizeof buf, off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    s.append(buf, static_cast<size_t>(n));
    off += n;
  }
  return s;
}

namespace {

Fd stdin_for(const std::string& data) {
  if (data.empty()) {
    Fd in(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    if (!in) throw sys_error("open /dev/null");
    return in;
  }
  Fd in(memfd_create("husk-test-stdin", MFD_CLOEXEC));
  if (!in) throw sys_error("memfd_create stdin");
  if (::write(in.get(), data.data(), data.size()) != static_cast<ssize_t>(data.size()))
    throw sys_error("write stdin memfd");
  ::lseek(in.get(), 0, SEEK_SET);
  return in;
}

// After fork: only async-signal-safe calls. Every fd but `fds` is closed on
// exec, including non-CLOEXEC ones of this process.
[[noreturn]] void exec_child(const std::vector<std::pair<int, int>>& fds, const SpawnOpts& opts, char** argv,
                             const std::string& exec_error) {
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  signal(SIGPIPE, SIG_DFL);
  if (opts.own_group) ::setpgid(0, 0);
  int tmp[64];
  size_t n = fds.size() < 64 ? fds.size() : 64;
  for (size_t i = 0; i < n; ++i) {
    tmp[i] = fcntl(fds[i].first, F_DUPFD_CLOEXEC, 1000);
    if (tmp[i] < 0) _exit(126);
  }
  if (syscall(SYS_close_range, 3U, ~0U, 4U /* CLOSE_RANGE_CLOEXEC */) != 0) _exit(126);
  for (size_t i = 0; i < n; ++i)
    if (dup2(tmp[i], fds[i].second) < 0) _exit(126);
  if (!opts.cwd.empty() && ::chdir(opts.cwd.c_str()) != 0) _exit(126);
  execvp(argv[0], argv);
  ssize_t ignored = ::write(2, exec_error.data(), exec_error.size());
  (void)ignored;
  _exit(127);
}

}  // namespace

Child::Child(const std::vector<std::string>& argv, const SpawnOpts& opts)
    : timeout_(opts.timeout),
      own_group_(opts.own_group),
      out_(opts.out ? opts.out : std::make_shared<Capture>()),
      err_(opts.err ? opts.err : std::make_shared<Capture>()) {
  if (argv.empty()) throw husk::Error("spawn: empty argv");
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  Fd in = stdin_for(opts.stdin_data);
  // Fixed before fork, so the child only makes async-signal-safe calls.
  std::vector<std::pair<int, int>> fds = {{in.get(), 0}, {out_->fd(), 1}, {err_->fd(), 2}};
  for (auto& p : opts.extra_fds) fds.push_back(p);
  const std::string exec_error = "cannot exec " + argv[0] + "\n";

  pid_ = ::fork();
  if (pid_ < 0) throw sys_error("fork for " + argv[0]);
  if (pid_ == 0) exec_child(fds, opts, cargv.data(), exec_error);
  if (own_group_) ::setpgid(pid_, pid_);  // also here, so a kill of the group cannot race the child
  pidfd_ = Fd(static_cast<int>(syscall(SYS_pidfd_open, pid_, 0)));
  if (!pidfd_) throw sys_error("pidfd_open " + std::to_string(pid_));
}

// The moved-from child no longer owns the pid: only one of them kills it.
Child::Child(Child&& o) noexcept
    : pid_(std::exchange(o.pid_, -1)),
      pidfd_(std::move(o.pidfd_)),
      timeout_(o.timeout_),
      own_group_(o.own_group_),
      out_(std::move(o.out_)),
      err_(std::move(o.err_)) {}

Child::~Child() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

Result Child::wait() {
  Result r;
  pollfd p{pidfd_.get(), POLLIN, 0};
  int n;
  do {
    n = ::poll(&p, 1, static_cast<int>(timeout_.count()));
  } while (n < 0 && errno == EINTR);
  if (n == 0) {
    r.timed_out = true;
    if (own_group_) ::kill(-pid_, SIGKILL);
    ::kill(pid_, SIGKILL);
  }
  int st = 0;
  while (::waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  if (WIFEXITED(st)) {
    r.code = WEXITSTATUS(st);
  } else if (WIFSIGNALED(st)) {
    r.signaled = true;
    r.code = 128 + WTERMSIG(st);
  }
  r.out_cap = out_;
  r.err_cap = err_;
  r.out = out_->read();
  r.err = err_->read();
  return r;
}

Result run(const std::vector<std::string>& argv, const SpawnOpts& opts) { return Child(argv, opts).wait(); }

bool eventually(const std::function<bool()>& pred, std::chrono::milliseconds timeout,
                std::chrono::milliseconds interval) {
  auto end = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (pred()) return true;
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(interval);
  }
}

bool alive(int pid) {
  try {
    auto st = husk::base::read_file("/proc/" + std::to_string(pid) + "/stat");
    auto rp = st.rfind(')');
    return rp != std::string::npos && rp + 2 < st.size() && st[rp + 2] != 'Z' && st[rp + 2] != 'X';
  } catch (const husk::Error&) {
    return false;
  }
}

std::string comm(int pid) {
  try {
    return trim(husk::base::try_read_file("/proc/" + std::to_string(pid) + "/comm").value_or(""));
  } catch (const husk::Error&) {
    return "";  // ESRCH of a process going away
  }
}

}  // namespace husk_test
