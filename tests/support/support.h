// Host-side helpers shared by the root-only integration tests
// (tests/integration/runtime, tests/security) and the conformance runner:
// running a program with captured stdio and a timeout, temp trees, waiting,
// the --console-socket end and the busybox bundle. No test framework here;
// failures throw husk::Error.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/fd.h"

namespace husk_test {

using husk::base::Fd;
using namespace std::chrono_literals;

// What a child writes as stdout/stderr: a memfd, or a file (kept for a
// post-mortem). Re-readable at any time, so the output of a container
// started later through the same fd shows up too.
class Capture {
 public:
  Capture();
  explicit Capture(const std::string& file);
  int fd() const { return fd_.get(); }
  std::string read() const;

 private:
  Fd fd_;
};

struct SpawnOpts {
  std::string stdin_data;                      // fed from a memfd; empty: /dev/null
  std::vector<std::pair<int, int>> extra_fds;  // {our fd, fd number in the child}, inherited
  std::shared_ptr<Capture> out, err;           // unset: a fresh memfd each
  std::string cwd;                             // empty: ours
  bool own_group = false;                      // own process group, all of it killed on timeout
  std::chrono::milliseconds timeout = 30s;
};

struct Result {
  int code = -1;          // exit status, or 128+signal
  bool signaled = false;  // the process itself died of a signal
  bool timed_out = false; // killed by us after the timeout
  std::string out, err;
  std::shared_ptr<Capture> out_cap, err_cap;
  bool ok() const { return code == 0 && !timed_out; }
};

// A started child; wait() collects it (killing it after the timeout), the
// destructor kills and reaps it if nobody did.
class Child {
 public:
  Child(const std::vector<std::string>& argv, const SpawnOpts& opts = {});
  Child(Child&& o) noexcept;
  Child& operator=(Child&&) = delete;
  ~Child();
  int pid() const { return pid_; }
  Result wait();

 private:
  int pid_ = -1;
  Fd pidfd_;
  std::chrono::milliseconds timeout_;
  bool own_group_;
  std::shared_ptr<Capture> out_, err_;
};

Result run(const std::vector<std::string>& argv, const SpawnOpts& opts = {});

// ---- files and text ----

// mkdtemp below $TMPDIR (/tmp).
std::string make_tempdir(const std::string& prefix);
// rm -rf that neither follows symlinks nor crosses a mount; refuses a tree
// with anything still mounted below it.
void remove_tree(const std::string& path);
// Creates or truncates; `mode` is set as given (no umask).
void write_file(const std::string& path, const std::string& data, int mode = 0644);
std::string trim(std::string s);
std::vector<std::string> lines(const std::string& s);
bool contains(const std::string& hay, const std::string& needle);
std::string replace_all(std::string s, const std::string& from, const std::string& to);

// ---- processes and waiting ----

// Polls pred every `interval` until it holds (true) or the timeout (false).
bool eventually(const std::function<bool()>& pred, std::chrono::milliseconds timeout = 5s,
                std::chrono::milliseconds interval = 10ms);
// Alive and not a zombie (this host's pid 1 reaps orphans lazily).
bool alive(int pid);
// /proc/<pid>/comm, "" when gone.
std::string comm(int pid);

// ---- --console-socket ----

// A unix socket listening at `path`; receive_fd accepts one connection and
// returns the fd sent with SCM_RIGHTS (invalid on timeout).
Fd listen_unix(const std::string& path);
Fd receive_fd(int listener, int timeout_ms = 10000);
// poll(POLLIN) for up to timeout_ms.
bool readable(int fd, int timeout_ms);

// What a peer sent on one connection, read to end-of-file (as a seccomp
// agent reads the runtime's state): the bytes, and every SCM_RIGHTS fd
// (the receiver owns them), in order.
struct Received {
  std::string payload;
  std::vector<int> fds;
  int messages_with_fds = 0;  // how many messages carried any
};
Received receive_until_eof(int conn);

// ---- bundles ----

// scripts/make-bundle DIR RUNTIME: DIR/rootfs (static busybox, passwd,
// group) and DIR/config.json from `RUNTIME spec`. The one bundle builder.
void make_bundle(const std::string& dir, const std::string& runtime);
// A copy of a bundle's rootfs; `hardlink` shares the file contents (fast; for
// containers that change no file in place).
void copy_rootfs(const std::string& from, const std::string& to, bool hardlink);

}  // namespace husk_test
