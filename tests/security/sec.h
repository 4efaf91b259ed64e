// Helpers of the security regression suite, on top of the end-to-end harness
// (tests/integration/runtime/harness.h).
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include <sys/types.h>
#include <unistd.h>

#include "harness.h"

namespace sec {

using hit::json;

// Marks the current case as skipped (tests/skip.h: reported, never passed).
void skip(const std::string& reason);

// The static hostile helper (hostile.c), compiled once per run; empty when
// `cc -static` failed (why: hostile_error()).
const std::string& hostile_binary();
const std::string& hostile_error();
void build_hostile();
void remove_hostile();
// Copies the helper into the container's rootfs as /hostile.
void install_hostile(hit::Container& c);

std::string sha256(const std::string& path);

// Every entry below dir (lstat: type, mode, owner, size, content hash,
// mtime), one line each, sorted; to compare a host directory before/after.
std::string tree_state(const std::string& dir);
// What lstat says about one path ("absent" if it does not exist).
std::string file_state(const std::string& path);

// A private copy of the runtime under test, so that an attack that works
// damages only the copy. sha256 is taken at construction.
struct RuntimeCopy {
  RuntimeCopy();
  ~RuntimeCopy();
  RuntimeCopy(const RuntimeCopy&) = delete;
  RuntimeCopy& operator=(const RuntimeCopy&) = delete;
  std::string dir, path, hash;
  unsigned long long dev = 0, ino = 0;
  bool unchanged() const { return sha256(path) == hash; }
};

// `rt --root ROOT args...` with another runtime binary.
hit::Result rt_with(const std::string& runtime, const hit::Container& c, const std::vector<std::string>& args,
                    const hit::SpawnOpts& opts = {});

// Adds capability names to bounding, effective and permitted (and keeps
// inheritable/ambient as they are).
void add_caps(json& cfg, const std::vector<std::string>& caps);
// Removes a mount by destination from cfg.mounts.
void drop_mount(json& cfg, const std::string& destination);
// Sets linux.namespaces[type].path (adds the namespace if missing).
void join_namespace(json& cfg, const std::string& type, const std::string& path);
void remove_namespace(json& cfg, const std::string& type);

// One open fd of a process, as the host sees it.
struct FdInfo {
  int fd;
  std::string target;  // readlink
  bool stat_ok = false;
  mode_t mode = 0;
  dev_t dev = 0, rdev = 0;
  ino_t ino = 0;
};
std::vector<FdInfo> process_fds(int pid);


// Host pid of a process whose argv[0] basename is `comm` and whose root is
// the container's rootfs (for processes started by `exec -d`), or -1.
int find_in_container(const hit::Container& c, const std::string& comm);

}  // namespace sec
