// Host-side helpers for the conformance runner: child processes with
// timeouts, file helpers, YAML->JSON conversion and host feature probes.
#pragma once

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace conformance {

namespace fs = std::filesystem;
using json = nlohmann::json;

// A problem with the suite itself (bad case file, unusable host), as opposed
// to a runtime failing a case.
struct SuiteError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct ProcResult {
  int exit_code = -1;  // exit status, or 128+signal when killed by a signal
  bool timed_out = false;
  std::string out;  // captured stdout (read back from the capture file)
  std::string err;  // captured stderr
};

struct SpawnOptions {
  std::vector<std::string> argv;
  fs::path cwd;                       // empty: inherit
  fs::path stdout_file, stderr_file;  // required: capture targets (files, so
                                      // a detached container may keep them)
  std::chrono::milliseconds timeout{20000};
};

// Runs argv to completion (stdin is /dev/null) in its own process group;
// on timeout the whole group is SIGKILLed.
ProcResult run_process(const SpawnOptions& opt);

// Starts argv in the background with stdio on /dev/null; returns its pid.
pid_t spawn_background(const std::vector<std::string>& argv);
// SIGKILLs and reaps a pid returned by spawn_background.
void kill_background(pid_t pid);

std::string read_file(const fs::path& p);
std::optional<std::string> try_read_file(const fs::path& p);
void write_file(const fs::path& p, const std::string& content, mode_t mode = 0644);
std::string trim(const std::string& s);
std::string replace_all(std::string s, const std::string& from, const std::string& to);
std::string readlink_or_empty(const fs::path& p);

// Recursively removes `p` without crossing onto another filesystem and
// without following symlinks; refuses when anything is still mounted below.
void remove_tree(const fs::path& p);

// YAML node -> JSON. Plain scalars are typed (null/bool/int/float),
// quoted scalars stay strings.
json yaml_to_json(const YAML::Node& n);

struct HostInfo {
  bool root = false;
  bool cgroup_v2 = false;  // unified hierarchy at /sys/fs/cgroup
  std::map<std::string, fs::path> v1_mounts;  // controller -> mount point
  std::vector<fs::path> cgroup_mounts;         // every cgroup/cgroup2 mount
  bool userns = false;
  bool timens = false;
  bool apparmor = false;
  bool selinux = false;
  bool resctrl = false;
  bool numa = false;
  bool shared_root = false;  // host "/" is a shared mount
  std::string machine;       // uname -m
  std::string oom_score_adj; // ours, inherited by the runtime

  static HostInfo probe();
  // Empty when `req` holds on this host, else the reason to skip.
  std::string missing(const std::string& req) const;
};

}  // namespace conformance
