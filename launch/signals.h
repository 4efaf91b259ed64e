#pragma once

#include <string>

namespace husk::rt {

// "KILL", "SIGKILL", "9", "sigkill", "RTMIN+3" -> signal number, "0" -> 0 (a
// liveness probe); throws on unknown/out of range.
int parse_signal(const std::string& s);

}  // namespace husk::rt
