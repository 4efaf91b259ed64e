// What the sandbox's sources share; not part of the library's interface.
#pragma once

#include <sys/types.h>
#include <termios.h>

#include <cstdint>
#include <ctime>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "base/fd.h"
#include "cgroups/host.h"
#include "landlock/landlock.h"
#include "sandbox/sandbox.h"
#include "seccomp/seccomp.h"

namespace husk::rt {

// As root: the limits `o` asks for can be set in a cgroup of these
// hierarchies: those of their controllers are mounted, and devices' (its
// policy is written in every cgroup), and `writable`. A mount namespace may
// show none (`ip netns exec` mounts a /sys of its own, without the cgroup
// file systems) or show them read-only (a container's).
bool root_has_cgroups(const SandboxOptions& o, const cgroups::Hierarchies& hh,
                      const std::function<bool(const std::string&)>& writable);

// realpath() of `p`, nullopt when it does not exist (probe.cpp).
std::optional<std::string> real_path(const std::string& p);

// The Landlock plan that mirrors `cfg`'s mount view (walls.cpp).
landlock::Plan landlock_plan(const SandboxOptions& o, const SandboxHost& h, const nlohmann::ordered_json& cfg,
                             const std::vector<std::string>& hidden);

// fn as the sandbox's user: husk as root must not make paths in a directory
// that user can write (a symlink swapped in would take root's mkdir or chown
// elsewhere). Unprivileged, husk is that user already.
void as_user(uint32_t uid, uint32_t gid, const std::function<void()>& fn);

// remove_tree with the sandbox user's rights: a tree that user can write may
// hold, renamed in from elsewhere on the same filesystem, what only root
// could delete. Root then removes the emptied directory from its own.
void remove_users_tree(uint32_t uid, uint32_t gid, int parent, const std::string& name);

// Placeholders in a directory the command made read-only (`chmod 555 .`):
// `step` (an *at call in the O_PATH fd `dir`), again with u+w given to
// `dir` for it if it is the user's own (as the user); false, errno set, if
// it still fails. placeholder_write.cpp, with the exit's words for what is left.
bool with_owner_write(int dir, const std::function<int()>& step);
std::string placeholder_path(int dir, const std::string& name);  // escaped for printing
std::string left_reason(int err);

// mkdir -p of `rel` below the directory `at` (as the user the directories
// are for, see as_user), no symlink followed.
void make_dirs_at(int at, const std::string& rel, const std::string& shown);

// The sandbox's files on the host: the root's mount points, the overlay
// layers and a state root of its own (so `husk list` of the user does not
// see it), removed at the end. Each is used through fds opened here, and
// removed fd-relative without following a symlink.
class Workdir {
  // One directory of ours below a base: made, then held by an fd.
  struct Temp {
    base::Fd base, fd;
    std::string path, name;
    void make(std::pair<base::Fd, std::string> where);
    void remove() const;
  };

 public:
  // The init makes the mount points in the root as the sandbox's user (it has
  // no privilege over host files): the root is that user's. `layers`:
  // --overlay's upper and work directories are made too, the user's as well.
  Workdir(uint32_t uid, uint32_t gid, bool layers);
  // What husk and the sandbox's user made here: the mount points in the
  // root, the overlay layers, our state root, the TMPDIR of a sandbox
  // without a user namespace.
  ~Workdir() { remove(); }
  void remove() const;
  const std::string& dir() const { return work_.path; }
  int fd() const { return work_.fd.get(); }
  std::string rootfs() const { return work_.path + "/rootfs"; }
  // An empty read-only file: what a hidden file shows.
  std::string empty_file() const { return work_.path + "/empty"; }
  std::string overlay() const { return (layers_.fd ? layers_.path : work_.path) + "/overlay"; }
  // The directory overlay() is in.
  int layers_fd() const { return layers_.fd ? layers_.fd.get() : work_.fd.get(); }
  std::string state() const { return work_.path + "/state"; }
  uint32_t uid() const { return uid_; }
  uint32_t gid() const { return gid_; }

 private:
  uint32_t uid_, gid_;
  Temp work_, layers_;
};

class NewFiles;

// The empty directories and files made on the host for missing protected
// names (SandboxConfig::placeholders), as the user. Each is known by an fd of
// its directory, its name, its inode and change time (an inode number is
// soon reused): removed only while it is that same empty directory or file
// (what the user put in it, or in its place, stays), and no other sandbox
// holds it. A sandbox holds (flock, shared) every protected directory and
// file it mounts over, its placeholders too: one started meanwhile in the
// same directory found ours there, and its mount would go with the name.
class Placeholders {
 public:
  struct One {
    base::Fd dir;
    std::string name;
    uint64_t id[4];  // dev, ino, ctime's seconds and nanoseconds
    base::Fd lock;   // the placeholder, held (husk's side only)
    bool file = false;  // an empty file, else a directory
  };
  Placeholders(uint32_t uid, uint32_t gid) : uid_(uid), gid_(gid) {}
  ~Placeholders() { remove(); }
  // Makes them (their parents exist); `made` is told of each at once (the
  // guardian). Returns those that could not be made (the user may not
  // write there: neither may the command). `found` gets those that are
  // there by now as something else than another sandbox's placeholder of
  // the same kind (`file`: a regular file): to be bound read-only on
  // themselves instead. Each found is held as hold() holds.
  std::vector<std::string> make(const std::vector<MissingName>& names, const std::function<void(const One&)>& made,
                                std::vector<MissingName>& found);
  void remove();
  // Holds the protected directories and files found there (SandboxConfig::guarded)
  // for as long as this object lives.
  void hold(const std::vector<std::string>& paths);
  // One placeholder to the guardian over its socket, its directory's fd with it.
  static void send(int sock, const One& one);
  // The guardian's side: one more placeholder, husk done, or husk gone.
  enum class Heard { placeholder, done, gone };
  // A NewFiles::One is added to `watch`.
  Heard receive(int sock, NewFiles* watch = nullptr);

 private:
  enum class Held { kNothing, kPlaceholderFile, kPlaceholderDir, kOtherFile, kOtherDir };
  // One name held (flock, shared) if it is a directory or a regular file;
  // another sandbox's placeholder adopted.
  Held hold_at(base::Fd parent, const std::string& name);
  uint32_t uid_, gid_;
  std::vector<One> made_;
  std::vector<base::Fd> held_;
};

// The names of SandboxConfig::watched, missing at start: what the command
// made there (a commondir would give git another config and hooks) is
// moved aside at exit, as the user (renamed in the directory held by its
// fd: no symlink followed), and said. By husk, or by the guardian when husk
// was killed.
class NewFiles {
 public:
  struct One {
    int dir;           // its directory (held in dirs_)
    std::string path;  // its real path, for the message
  };
  NewFiles(uint32_t uid, uint32_t gid) : uid_(uid), gid_(gid) {}
  ~NewFiles() { move_aside(); }
  // Opens their directories (no symlink followed); `opened` is told of
  // each still missing (the guardian).
  void watch(const std::vector<std::string>& paths, const std::function<void(const One&)>& opened);
  static void send(int sock, const One& one);
  // The guardian's side of send().
  void add(base::Fd dir, const std::string& path);
  void move_aside();

 private:
  uint32_t uid_, gid_;
  std::vector<base::Fd> dirs_;
  std::vector<One> watched_;
};

// Says at exit each git repository (a .git, or a bare layout) made since
// `start` at the top of a writable directory or one level below it:
// created during the run, its config and hooks are the command's.
void say_new_repositories(uint32_t uid, uint32_t gid, const std::vector<std::string>& writable,
                          const timespec& start);

// A process outside the sandbox that outlives a killed husk: the sandbox's
// pid 1 gets no parent-death signal (the kernel does not force it on a pid
// namespace's init), so when husk dies without saying "done" the guardian
// deletes the container (its processes killed, its cgroup removed) and the
// workdir. In a process group of its own: a signal to husk's group spares it.
// It removes the placeholders husk tells it of, too.
class Guardian {
 public:
  Guardian(const Context& g, const std::string& id, const Workdir& work, int keep_fd);
  ~Guardian();
  void placeholder(const Placeholders::One& one) { Placeholders::send(tell_.get(), one); }
  void watch(const NewFiles::One& one) { NewFiles::send(tell_.get(), one); }

 private:
  pid_t pid_ = -1;
  base::Fd tell_;
};

// The caller's terminal, lent to the command as its stdio: its settings,
// line discipline, exclusive mode and output flow are put back whatever the
// command did to them (output stopped with TCOOFF would block the caller's
// shell at its next write; exclusive mode would refuse its next open).
class TerminalGuard {
 public:
  TerminalGuard();
  ~TerminalGuard() { restore(); }
  // Once the command and everything it started are gone.
  void restore();

 private:
  int fd_ = -1;
  termios saved_{};
  int ldisc_ = 0;
  int exclusive_ = 0;
};

// The scratch home (a tmpfs over the user's home where nothing shows it):
// what the command writes there is thrown away at exit, and said then.
class ScratchHome {
 public:
  // From the sandbox's config: whether the home is a scratch tmpfs, and the
  // mount points the runtime makes in it (not the command's writes).
  ScratchHome(const nlohmann::ordered_json& config, const std::string& home);
  // The tmpfs opened through the process's root, so that it can be read
  // after the sandbox is gone. Once the init is created, before the command
  // runs, as root; unprivileged husk may not look into the init (it is not
  // dumpable and was not exec'd in the sandbox's user namespace), so again
  // through the command once it runs: a write in its first moments may go unsaid.
  void open(pid_t pid);
  // At exit: the "husk sandbox: ..." line naming what was written, or "".
  std::string discarded() const;

 private:
  void look(int dir, const std::string& rel, std::vector<std::string>& out) const;
  std::string home_;  // "" when the home is not a scratch tmpfs
  std::set<std::string> made_;
  base::Fd fd_;
};

constexpr double kKillGrace = 2.0;  // seconds between --timeout's SIGTERM and SIGKILL

// Signals go to the sandbox's pid 1, which passes them on to the command
// (launch/reaper.h). With --as-pid-1 the command is pid 1 itself, where the
// kernel drops a signal it has no handler for: a signal whose default is to
// terminate is made to act so, SIGKILL, and the status says the signal sent.
// Writes nothing while the command runs: the terminal may be its to stop
// (TCOOFF), and a blocked write would hold back --timeout's SIGKILL.
// timed_out: --timeout's SIGTERM was sent. `emptied`: the read end of the
// reaper's pipe (InitRequest::emptied_fd), or -1; `on_emptied` is called
// once when pid 1 says nothing else runs in the sandbox any more.
int wait_sandboxed(pid_t pid, int sigfd, double timeout, bool as_pid_1, bool& timed_out, int emptied = -1,
                   const std::function<void()>& on_emptied = {});

// `husk sandbox --session NAME --start`: the sandbox is made as for one
// command, its command a keeper that waits; `ready` is told once it runs,
// with the sandbox's context (its state root), container id, Landlock plan
// and pid 1.
struct SessionReady {
  std::function<void(const Context& g, const std::string& id, const landlock::Plan& plan, pid_t init)> ready;
};
int run_sandbox(const Context& g, const SandboxOptions& o, const SessionReady* session);

// A session's name: refused unless one plain directory entry (session_state.cpp).
constexpr size_t kMaxSessionName = 64;
void check_session_name(const std::string& name);
// The Landlock plan a session's commands build again, kept as JSON.
nlohmann::json plan_to_json(const landlock::Plan& p);
landlock::Plan plan_from_json(const nlohmann::json& j);
// The seccomp program every command of a session loads, kept as bytes (no
// listener: a filter with one keeps its config); a malformed one is an error.
std::string program_to_bytes(const seccomp::Program& p);
seccomp::Program program_from_bytes(const std::string& bytes);

// --session NAME with --start, --stop, --status or a command (session.cpp).
int cmd_session(const Context& g, const SandboxOptions& o);

}  // namespace husk::rt
