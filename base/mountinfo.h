// /proc/<pid>/mountinfo, parsed once for every library. Paths come with the
// kernel's octal escapes (\040 for a space, ...) undone.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace husk::base {

struct MountInfo {
  uint64_t id = 0, parent = 0;
  std::string root, mount_point;  // unescaped
  std::string options;            // per-mount: rw,nosuid,...
  std::string optional;           // optional fields: "shared:1 master:2", "" for none
  std::string fstype, source, super_options;
};

// The lines of a mountinfo text; malformed lines are skipped.
std::vector<MountInfo> parse_mountinfo(const std::string& text);

// Read and parse a mountinfo file. Throws husk::Error naming the path.
std::vector<MountInfo> read_mountinfo(const std::string& path = "/proc/self/mountinfo");

}  // namespace husk::base
