// husk sandbox --report FILE / --report-fd N: the events of report_event.h
// written as they happen, and --control-fd N: hosts allowed while the
// sandbox runs. The caller's fds are the sandbox's never: close-on-exec, and
// the container's init closes every fd it was not given.
#pragma once

#include <sys/types.h>

#include <ctime>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "base/fd.h"
#include "sandbox/report_event.h"
#include "sandbox/sandbox.h"

namespace husk::rt {

// The fd of --report-fd or --control-fd: open, not the command's stdio,
// readable or writable as `write` says; made close-on-exec. Errors name the flag.
void claim_fd(const std::string& flag, int fd, bool write);

class Report {
 public:
  Report() = default;
  // --report FILE (opened as the sandbox's user: a regular file of theirs,
  // no symlink anywhere in the path; truncated) or --report-fd N; none
  // without either. `sandbox`: the id every event carries.
  Report(const SandboxOptions& o, const SandboxHost& host, std::string sandbox);
  explicit operator bool() const { return sink_ != nullptr; }
  // One event, from any thread. A write that fails (the reader went away) is
  // said once on stderr, and the report ends there: the sandbox runs on.
  void emit(const std::string& type, const report::ojson& fields) const;
  // A proxy refusal; past kMaxRefused of them one "dropped" event says the
  // rest go unreported (a command looping on a refused host would fill a disk).
  void refused(const ProxyRefusal& r) const;
  static constexpr size_t kMaxRefused = 1000;

 private:
  struct Sink {
    std::mutex mu;
    base::Fd fd;
    bool broken = false;
    size_t refused = 0;
  };
  std::unique_ptr<Sink> sink_;
  std::string sandbox_;
};

// The limits the sandbox's cgroup counts: forks refused (pids.events
// "max") and processes OOM-killed (memory.events or v1's
// memory.oom_control "oom_kill"). Its directories are held from the init's
// creation; read at the command's end, before the cgroup goes.
class LimitWatch {
 public:
  void open(pid_t init, const SandboxOptions& o);
  void say(const Report& report) const;

 private:
  base::Fd pids_, memory_;
  bool unified_ = true;
  uint64_t forks_ = 0, kills_ = 0;  // at start
};

class Proxy;

// --control-fd: each line read is a request (report::parse_control),
// applied to the proxy and answered on the report (and on stderr when
// refused). The thread ends at end of file, at a read error, or with this object.
class Control {
 public:
  Control(int fd, Proxy& proxy, const Report& report);
  ~Control();

 private:
  void serve();
  void answer(const std::string& line);
  base::Fd fd_;
  Proxy& proxy_;
  const Report& report_;
  base::Fd stop_read_, stop_write_;
  std::thread thread_;
};

}  // namespace husk::rt
