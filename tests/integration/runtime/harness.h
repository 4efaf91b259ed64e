// Helpers for the end-to-end runtime tests: spawning the runtime with
// captured stdio, throw-away bundles and leftover checks.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/file.h"
#include "base/mountinfo.h"
#include "support.h"

namespace hit {

using json = nlohmann::json;
using namespace std::chrono_literals;

// Running programs, files and waiting: tests/support (shared with the
// conformance runner).
using husk::base::Fd;
using husk::base::read_file;
using husk_test::alive;
using husk_test::Capture;
using husk_test::Child;
using husk_test::contains;
using husk_test::eventually;
using husk_test::lines;
using husk_test::listen_unix;
using husk_test::make_tempdir;
using husk_test::receive_fd;
using husk_test::remove_tree;
using husk_test::Result;
using husk_test::run;
using husk_test::SpawnOpts;
using husk_test::trim;
using husk_test::write_file;

// The runtime under test: $HUSK_RUNTIME or the husk built next to the test.
const std::string& runtime();
bool runtime_is_runc();

// A temp dir removed on scope exit, also when a REQUIRE throws.
struct TempDir {
  explicit TempDir(const std::string& prefix) : path(make_tempdir(prefix)) {}
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir();
  std::string path;
};

// The main() of a root-only suite (husk-it-runtime, husk-security): not
// root is a whole-suite SKIP (exit 77, tests/skip.h); else the template
// bundle exists while `session` runs the Catch2 session, and the exit code
// reports the skipped cases.
int suite_main(const std::string& name, const std::function<int()>& session);

// Unique container id: "hit-<pid>-<n>-<tag>".
std::string unique_id(const std::string& tag);

// Template bundle built once per run by scripts/make-bundle (husk_test::make_bundle).
void build_template();
void destroy_template();
const std::string& template_dir();

// One entry of /proc/<pid>/mountinfo.
struct MountEntry : husk::base::MountInfo {
  bool has_opt(const std::string& opt) const;  // in mount or super options
};
std::vector<MountEntry> parse_mountinfo(const std::string& text);
const MountEntry* find_mount(const std::vector<MountEntry>& mounts, const std::string& point);
// find_mount that fails the test when nothing is mounted at `point`.
const MountEntry& mount_at(const std::vector<MountEntry>& mounts, const std::string& point);

// The process is dead (or a zombie) within the timeout.
bool gone_soon(int pid, std::chrono::milliseconds timeout = 1s);

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
  // run `argv` (args + run), requiring exit 0.
  Result run_ok(const std::vector<std::string>& argv);

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
