// What CRIU is asked to do for a checkpoint or a restore, planned from the
// container's config and runc's flags without touching the host: criu_opts
// as rpc.proto names them, which mounts are external, which fds the
// restored process inherits, and whether an image fits the bundle given to
// restore. Pure, so the unit tests cover it without root or CRIU.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "spec/spec.h"

namespace husk::ckpt {

using nlohmann::json;

// The flags checkpoint and restore share (runc's names).
struct CriuFlags {
  bool tcp_established = false;
  bool ext_unix_sk = false;
  bool shell_job = false;
  bool file_locks = false;
  bool auto_dedup = false;
  bool lazy_pages = false;
  std::string manage_cgroups_mode;  // "", soft, full, strict, ignore
  std::vector<std::string> empty_ns;  // "network" only, as runc
};

struct CheckpointFlags {
  CriuFlags criu;
  std::string image_path, work_path, parent_path;
  bool leave_running = false;
  bool pre_dump = false;
  std::string page_server;  // ADDRESS:PORT
  int status_fd = -1;
};

struct RestoreFlags {
  CriuFlags criu;
  std::string image_path, work_path, bundle = ".", pid_file, console_socket;
  bool detach = false;
  bool no_subreaper = false;
  bool no_pivot = false;
  std::string lsm_profile, lsm_mount_context;
};

// Throws an Error naming the flag for a value runc refuses too.
void check_flags(const CriuFlags& f);

// What the host told us about the running container, for the dump.
struct DumpFacts {
  pid_t pid = 0;
  std::string rootfs;
  int images_fd = -1, work_fd = -1;  // fd numbers in husk, which CRIU opens through /proc
  int status_fd = -1;                // in husk, too (--status-fd)
  // maskedPaths that are files (a bind of /dev/null), not directories (a tmpfs).
  std::set<std::string> masked_files;
  uint64_t netns_inode = 0;  // of a network namespace joined by path (0: none)
  // stdio from outside the container: CRIU's "file[MNT:INODE]" and "tty[RDEV:DEV]" keys.
  std::vector<std::string> external_files;
  std::string freeze_cgroup;  // the freezer cgroup dir of a paused container ("": CRIU freezes the tasks)
};

// criu_opts of a dump (or a pre-dump) of the container `spec` describes.
json dump_opts(const spec::Spec& spec, const CheckpointFlags& f, const DumpFacts& facts);

struct RestoreFacts {
  std::string rootfs;
  int images_fd = -1, work_fd = -1;  // in husk
  // What the init's stdin, stdout and stderr were at the dump (descriptors.json):
  // pipes and external files among them become the caller's stdio.
  std::vector<std::string> descriptors;
  std::set<std::string> masked_files;
  int netns_fd = -1;  // in criu's fd table: the network namespace to join (-1: none)
  // Controller list -> cgroup of criu itself, from /proc/<criu>/cgroup: the
  // container's, where the restored processes are to go.
  std::vector<std::pair<std::string, std::string>> cgroups;
};

// criu_opts of a restore as a sibling of criu (so a child of husk).
json restore_opts(const spec::Spec& spec, const RestoreFlags& f, const RestoreFacts& facts);

// "" when an image whose config was `image` may be restored with the bundle
// config `bundle`; else what differs, naming the field. What the processes
// need to find again must be equal: the process, the mount destinations and
// types, the namespaces; sources, cgroupsPath, hooks and annotations may
// differ (an engine restores into a new bundle of its own).
std::string config_mismatch(const spec::Spec& image, const spec::Spec& bundle);

// The files husk adds to an image directory.
inline constexpr const char* kImageConfig = "config.json";
inline constexpr const char* kDescriptors = "descriptors.json";

// The request of a checkpoint: a pre-dump is CRIU's single pre-dump, which
// ends the connection after it (PRE_DUMP would wait for the next dump).
std::string dump_request(const CheckpointFlags& f);
// The log CRIU writes into the work directory for request `type`.
std::string log_name(const std::string& type);

}  // namespace husk::ckpt
