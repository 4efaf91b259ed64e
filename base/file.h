// Reading and writing whole files (small files: /proc, cgroup files,
// configs, state), O_CLOEXEC.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

namespace husk::base {

// Throws husk::Error naming the path.
std::string read_file(const std::string& path);

// nullopt when the file does not exist; other failures throw.
std::optional<std::string> try_read_file(const std::string& path);

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

}  // namespace husk::base
