// Small file and process helpers shared by the runtime commands.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "base/fd.h"
#include "base/file.h"

namespace husk::rt {

using base::read_file;
// Replace `name` in `dirfd` atomically: a new temp file with a random name in
// the same directory (O_EXCL|O_NOFOLLOW, so never written through a planted
// symlink), then rename over the target; the temp is removed on failure.
void write_file_atomic(int dirfd, const std::string& name, const std::string& data, mode_t mode,
                       const std::string& shown);
// The same for a path: the temp goes into its directory.
void write_file_atomic(const std::string& path, const std::string& data, mode_t mode = 0644);
// --pid-file of create, run and exec (nothing when path is empty).
void write_pid_file(const std::string& path, pid_t pid);
// Write without truncating errors into one line: "write <path>: <errno>".
void write_file(const std::string& path, const std::string& data);

// mkdir -p: every missing component of `path` with `mode`.
void mkdir_all(const std::string& path, mode_t mode);

// Field 22 of /proc/<pid>/stat (start time in clock ticks), 0 if the process is gone.
uint64_t process_start_time(pid_t pid);
// True when pid is alive, not a zombie, and (when start_time != 0) still the same process.
bool process_alive(pid_t pid, uint64_t start_time);

std::string now_rfc3339();  // UTC with nanoseconds, as runc's state "created"

using base::Fd;

}  // namespace husk::rt
