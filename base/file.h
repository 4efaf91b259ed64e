// Reading a whole file (small files: /proc, cgroup files, configs), O_CLOEXEC.
#pragma once

#include <optional>
#include <string>

namespace husk::base {

// Throws husk::Error naming the path.
std::string read_file(const std::string& path);

// nullopt when the file does not exist; other failures throw.
std::optional<std::string> try_read_file(const std::string& path);

}  // namespace husk::base
