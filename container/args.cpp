#include "container/args.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "base/error.h"

namespace husk::rt {

uint64_t parse_decimal(const std::string& text, uint64_t max, const std::string& what) {
  auto bad = [&] {
    return Error(what + ": \"" + text + "\" is not a number between 0 and " + std::to_string(max));
  };
  // 20 digits hold any uint64_t; longer input cannot be in range.
  if (text.empty() || text.size() > 20) throw bad();
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') throw bad();
    uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > max / 10 || v * 10 > max - d) throw bad();
    v = v * 10 + d;
  }
  return v;
}

UserArg parse_user(const std::string& text) {
  auto colon = text.find(':');
  std::string what = "--user " + text;
  UserArg u{static_cast<uint32_t>(parse_decimal(text.substr(0, colon), kMaxId, what + ": uid")), std::nullopt};
  if (colon != std::string::npos)
    u.gid = static_cast<uint32_t>(parse_decimal(text.substr(colon + 1), kMaxId, what + ": gid"));
  return u;
}

// "64m", "1G", "1024", "-1" -> bytes (runc's RAMInBytes: binary units).
int64_t parse_bytes(const std::string& flag, const std::string& v) {
  if (v == "-1") return -1;
  char* end;
  errno = 0;
  double n = strtod(v.c_str(), &end);
  std::string unit(end);
  std::transform(unit.begin(), unit.end(), unit.begin(), ::tolower);
  if (!unit.empty() && unit.back() == 'b') unit.pop_back();
  if (!unit.empty() && unit.back() == 'i') unit.pop_back();
  static const std::pair<const char*, double> kUnits[] = {
      {"", 1}, {"k", 1024.0}, {"m", 1024.0 * 1024}, {"g", 1024.0 * 1024 * 1024}, {"t", 1024.0 * 1024 * 1024 * 1024}};
  for (auto& [u, mult] : kUnits)
    if (unit == u && errno == 0 && end != v.c_str() && n >= 0) return static_cast<int64_t>(n * mult);
  throw Error("--" + flag + ": invalid size \"" + v + "\"");
}

}  // namespace husk::rt
