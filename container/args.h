// Strict parsers for numbers and ids given on the command line. Anything a
// caller types is hostile until proven otherwise: "1e3", "0x3e8", " 1000",
// "+1000" and values that wrap around must be errors, never a different id.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace husk::rt {

// Decimal digits only (no sign, no spaces, no base prefix), value <= max.
// Throws Error "<what>: \"<text>\" is not a number between 0 and <max>".
uint64_t parse_decimal(const std::string& text, uint64_t max, const std::string& what);

// `exec --user UID[:GID]`. (uid_t)-1 is refused: setresuid(-1) means
// "unchanged" and would leave the process root.
struct UserArg {
  uint32_t uid;
  std::optional<uint32_t> gid;  // absent: the container's process.user.gid, as runc
};
UserArg parse_user(const std::string& text);

// "64m", "1G", "1024", "-1" -> bytes (runc's RAMInBytes: binary units);
// errors name the flag: "--memory: invalid size \"x\"".
int64_t parse_bytes(const std::string& flag, const std::string& v);

// Largest uid/gid a container process may get: one below (uid_t)-1.
constexpr uint32_t kMaxId = 4294967294u;

}  // namespace husk::rt
