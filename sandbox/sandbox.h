// `husk sandbox -- COMMAND`: one command from the host in a disposable
// container built from the host's own root, as the calling user. The config
// is pure (sandbox_config), so it unit-tests without root and
// `--print-config` hands the same sandbox to any runtime.
#pragma once

#include <fcntl.h>
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/fd.h"
#include "container/commands.h"
#include "landlock/landlock.h"
#include "sandbox/glob.h"
#include "sandbox/persist.h"

namespace husk::rt {

struct SandboxOptions {
  std::vector<std::string> args;           // the command
  std::vector<std::string> rw, ro, hide;   // --rw, --ro, --hide (as typed)
  std::vector<std::string> env;            // --env K=V, or K: the caller's value
  std::string net = "none";                // none | host
  std::vector<std::string> allow_hosts;    // --allow-host NAME[:PORT]: through husk's proxy only
  bool allow_host_loopback = false;        // allowed names may resolve to the host's own addresses
  bool allow_host_private = false;         // ... and to private networks' addresses
  std::string user;                        // --user UID[:GID] (root only)
  std::string memory, cpus;                // as typed; empty: none
  uint64_t pids = 0;                       // 0: none
  double timeout = 0;                      // seconds; 0: none
  bool allow_nested = false;
  bool print_config = false;
  bool overlay = false;                    // the shown directories writable, changes discarded
  std::string keep_changes;                // --keep-changes DIR: overlay, changes kept in DIR/upper
  bool as_pid_1 = false;                   // the command is pid 1 itself, no reaper in front
  std::vector<std::string> allow_write;    // --allow-write PATH: a protected persistence file writable again
  std::vector<std::string> deny_hosts;     // --deny-host NAME[:PORT]: refused by the proxy even when allowed
  std::vector<std::string> deny_write;     // --deny-write PATH: read-only inside a writable directory
  std::string session;                     // --session NAME: one sandbox, many commands
  bool session_start = false, session_stop = false, session_status = false;  // --start, --stop, --status
  std::string report;                      // --report FILE: events as JSON lines (report_event.h)
  int report_fd = -1;                      // --report-fd N: the same, on the caller's fd
  int control_fd = -1;                     // --control-fd N: hosts allowed while it runs (the proxy runs)

  bool limited() const { return pids || !memory.empty() || !cpus.empty(); }
  bool overlaid() const { return overlay || !keep_changes.empty(); }
  bool proxied() const { return !allow_hosts.empty() || control_fd >= 0; }
};

// What the config is built from, read from the host by probe_sandbox_host().
struct SandboxHost {
  uint32_t uid = 0, gid = 0;     // who the command runs as
  std::string home;              // that user's home directory ("" if none)
  std::string user_name, shell;
  std::string cwd;               // the working directory (made absolute)
  // The entries of the host's "/" that are directories, symlinks followed:
  // each is shown read-only, bound into an empty root.
  std::vector<std::string> root_dirs;
  std::vector<std::string> homes;  // every home directory in /etc/passwd
  // realpath() of an absolute path, nullopt when it does not exist.
  std::function<std::optional<std::string>(const std::string&)> real;
  std::map<std::string, std::string> env;  // the caller's environment
  bool cgroup = false;           // limits can be set in a cgroup of the container's own (probed when one is asked)
  std::vector<std::string> mount_points;  // the host's (an overlay cannot be lower above one)
  bool systemd_scope = false;    // the cgroup is a transient scope of the user's systemd manager
  // Whether a real path is a directory (a hidden one is shown as an empty one).
  std::function<bool(const std::string&)> is_dir;
  // Whether the file's modes give the sandbox's user neither read nor write
  // (root's /etc/shadow): the kernel refuses it without Landlock's help.
  std::function<bool(const std::string&)> closed_to_user;
  // scan_persist (persist.h): the persistence files below a writable directory.
  std::function<std::vector<PersistFound>(const std::string& real, const std::vector<std::string>& skip)> scan;
  // walk_glob (glob.h) with the sandbox user's file access: a --hide pattern's matches below a root.
  std::function<GlobFound(const Glob& g, const std::string& root)> glob;
  std::string husk_binary;  // husk's own binary (its real path), "" when unknown
  // The default settings file's directory (default_settings_dir, settings.h):
  // read-only wherever a writable directory holds it.
  std::string settings_dir;
};

// The OCI config of the sandbox, plus what was asked but could not be
// applied (said on stderr). Errors name the flag: "--rw docs: ...".
// root.path is `rootfs`: any empty directory (husk's run makes one; the
// runtime creates the mount points in it).
// With --overlay each shown directory is an overlay whose upper and work
// directories are overlay_dir/upper/N-NAME and overlay_dir/work/N-NAME,
// listed in overlay_dirs for the caller to make.
struct SandboxConfig {
  nlohmann::ordered_json config;
  std::vector<std::string> notes;
  std::vector<std::string> overlay_dirs;
  landlock::Plan landlock;  // the same walls again, for the init to enforce
  // What is hidden outside the kernel views (credentials, --hide), however
  // each is shown, but what the file modes close to the user: what the
  // Landlock plans deny.
  std::vector<std::string> hidden;
  std::vector<std::pair<std::string, std::string>> uppers;  // each upper directory, the path it stands for
  // Missing protected names (parents first): empty directories or files to
  // make on the host as the user before the sandbox starts (mount points of
  // the read-only ones over them), removed after.
  std::vector<MissingName> placeholders;
  // The protected paths that are there (real paths): held while it runs.
  std::vector<std::string> guarded;
  // Missing names that a placeholder cannot stand for (Protection::kWatch):
  // what is made there is moved aside at exit (NewFiles, internal.h).
  std::vector<std::string> watched;
  // The writable directories walked (real paths): new repositories there are said at exit.
  std::vector<std::string> writable;
};
// `empty_file`: an empty read-only file, shown in place of each hidden file
// ("": the null device, as maskedPaths has it, which takes writes).
SandboxConfig sandbox_config(const SandboxOptions& o, const SandboxHost& host, const std::string& rootfs,
                             const std::string& overlay_dir = "overlay", const std::string& empty_file = "");

// husk's own run of `config`: a tmpfs of the container's own mounted on
// root.path first, so the mount points below it are made there and go with
// the mount namespace instead of being left in root.path to remove on the
// host. Not in --print-config: crun refuses a mount onto "/".
void root_of_its_own(nlohmann::ordered_json& config);

SandboxHost probe_sandbox_host(const SandboxOptions& o);

// A path a flag names: absolute and lexically clean ("a/./b//c/../d" ->
// "CWD/a/b/d"), relative to `cwd`; empty is an error naming the flag.
std::string flag_path(const std::string& flag, const std::string& path, const std::string& cwd);

// Removes `name` below the directory `parent` (an fd, or AT_FDCWD) with
// everything in it, as a sandbox left it: no symlink is followed, a
// directory made unreadable is opened by giving it back to its owner, any
// depth with a bounded number of open fds. What cannot be removed stays.
void remove_tree(int parent, const std::string& name);

// The directory `path` (absolute, or relative to `at`), each missing
// component made with `mode`, opened one by one without following a
// symlink; each (and "/" for an absolute path) must be owner's or root's and
// writable by no group or other, else an Error names it. Where root keeps
// the sandbox's files: nobody else can swap anything below it.
base::Fd private_dir(const std::string& path, uid_t owner, mode_t mode = 0700, int at = AT_FDCWD);

int cmd_sandbox(const Context& g, const SandboxOptions& o);

}  // namespace husk::rt
