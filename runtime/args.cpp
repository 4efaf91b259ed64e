#include "runtime/args.h"

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

}  // namespace husk::rt
