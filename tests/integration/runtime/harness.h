// Helpers for the end-to-end runtime tests: spawning the runtime with
// captured stdio, throw-away bundles and leftover checks.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/fd.h"

namespace hit {

using json = nlohmann::json;
using namespace std::chrono_literals;

using husk::base::Fd;

// A memfd that a child writes to as stdout/stderr; re-readable at any time,
// so output of a container started later through the same fd shows up too.
class Capture {
 public:
  Capture();
  int fd() const { return fd_.get(); }
  std::string read() const;

 private:
  Fd fd_;
};

struct SpawnOpts {
  std::string stdin_data;                      // fed from a memfd; empty: /dev/null
  std::vector<std::pair<int, int>> extra_fds;  // {our fd, fd number in the child}, inherited
  std::shared_ptr<Capture> out;                // reuse a capture for stdout
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

// A started child; wait() collects it (killing it after the timeout).
class Child {
 public:
  Child(const std::vector<std::string>& argv, const SpawnOpts& opts = {});
  Child(Child&&) = default;
  ~Child();
  int pid() const { return pid_; }
  Result wait();

 private:
  int pid_ = -1;
  Fd pidfd_;
  std::chrono::milliseconds timeout_;
  std::shared_ptr<Capture> out_, err_;
};

Result run(const std::vector<std::string>& argv, const SpawnOpts& opts = {});

// The runtime under test: $HUSK_RUNTIME or the husk built next to the test.
const std::string& runtime();
bool runtime_is_runc();

std::string make_tempdir(const std::string& prefix);

// A temp dir under /tmp removed on scope exit, also when a REQUIRE throws.
struct TempDir {
  explicit TempDir(const std::string& prefix) : path(make_tempdir(prefix)) {}
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir();
  std::string path;
};
void remove_tree(const std::string& path);  // rm -rf without crossing mounts
std::string read_file(const std::string& path);
void write_file(const std::string& path, const std::string& data, int mode = 0644);
std::string trim(std::string s);
std::vector<std::string> lines(const std::string& s);
bool contains(const std::string& hay, const std::string& needle);

// Unique container id: "hit-<pid>-<n>-<tag>".
std::string unique_id(const std::string& tag);

// Template bundle built once per run by scripts/make-bundle.
void build_template();
void destroy_template();
const std::string& template_dir();

// One entry of /proc/<pid>/mountinfo.
struct MountEntry {
  std::string root, mount_point, mount_opts, fstype, source, super_opts;
  bool has_opt(const std::string& opt) const;  // in mount or super options
};
std::vector<MountEntry> parse_mountinfo(const std::string& text);
const MountEntry* find_mount(const std::vector<MountEntry>& mounts, const std::string& point);

// Alive and not a zombie (this host's pid 1 reaps orphans lazily).
bool alive(int pid);

// A unix socket listening at `path`, for --console-socket; receive_fd accepts
// one connection and returns the fd sent with SCM_RIGHTS (invalid on timeout).
Fd listen_unix(const std::string& path);
Fd receive_fd(int listener, int timeout_ms = 10000);

// Capability name (CAP_CHOWN) -> bit mask.
unsigned long long cap_mask(const std::vector<std::string>& names);
// "CapEff" etc. from /proc/<pid>/status.
std::string status_field(int pid, const std::string& field);

// A container with its own bundle (copied from the template) and its own
// --root directory; the destructor force-deletes it and removes everything.
class Container {
 public:
  // The rootfs is a hard-linked copy of the template's (symlinks are slow to
  // create here); private_rootfs makes a real copy, for tests that chown it.
  explicit Container(const std::string& tag = "c", bool private_rootfs = false);
  Container(const Container&) = delete;
  Container& operator=(const Container&) = delete;
  ~Container();

  std::string id, bundle, rootfs, root;
  json cfg;  // edited by tests, written on create/run

  void args(const std::vector<std::string>& argv) { cfg["process"]["args"] = argv; }
  // Use a --root shared with other containers; the caller owns the
  // directory and must keep it until every container in it is destroyed.
  void share_root(const std::string& dir);
  bool owns_root() const { return owns_root_; }
  void write_config() const;

  // `runtime --root ROOT args...`
  Result rt(const std::vector<std::string>& args, const SpawnOpts& opts = {}) const;
  Result create(const std::vector<std::string>& extra = {}, const SpawnOpts& opts = {});
  Result start() const { return rt({"start", id}); }
  Result run(const std::vector<std::string>& extra = {}, const SpawnOpts& opts = {});
  Result del(bool force = false) const;

  // Parsed `state ID`; fails the test if the runtime fails.
  json state() const;
  std::string status() const;
  int pid() const { return state().at("pid").get<int>(); }
  bool wait_status(const std::string& want, std::chrono::milliseconds timeout = 5s) const;
  // create + start `args`, wait until the container process has exec'd
  // (its comm is the basename of args[0]); returns its host pid.
  int start_process(const std::vector<std::string>& argv);

  // Output the container wrote to the stdout of `create`.
  std::string container_out() const { return create_out_ ? create_out_->read() : ""; }

 private:
  std::shared_ptr<Capture> create_out_;
  bool owns_root_ = true;
};

// True when /sys/fs/cgroup itself is cgroup2 (unified mode); false on v1 and
// hybrid hosts, whose limits live in the v1 controller hierarchies.
bool cgroup2_unified();
// A file of the container cgroup /husk-test/<id>: /sys/fs/cgroup/husk-test/<id>/FILE
// in unified mode, /sys/fs/cgroup/CONTROLLER/husk-test/<id>/FILE otherwise.
std::string cgroup_file(const std::string& id, const std::string& controller, const std::string& file);

// Live (non-zombie) processes in the cgroup /husk-test/<id> of any hierarchy.
std::vector<int> cgroup_pids(const std::string& id);

// Everything a container could leave behind once it was deleted or failed to
// be created: state in --root, mounts naming the bundle, processes in its
// rootfs or cgroup, cgroup directories. Empty when clean.
std::vector<std::string> leftovers(const Container& c);

}  // namespace hit
