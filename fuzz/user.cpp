// The CLI's strict number parsers: `exec --user UID[:GID]` (rt::parse_user)
// and rt::parse_decimal. What they accept must be decimal digits whose value
// is the number written and within range; (uid_t)-1 never.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "base/error.h"
#include "container/args.h"

namespace {

bool decimal(const std::string& s) { return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos; }

// parse_decimal must return exactly the value written (leading zeros aside).
void check_decimal(const std::string& text, uint64_t max) {
  try {
    uint64_t v = husk::rt::parse_decimal(text, max, "n");
    std::string digits = text.substr(std::min(text.find_first_not_of('0'), text.size() - 1));
    if (!decimal(text) || v > max || std::to_string(v) != digits) __builtin_trap();
  } catch (const husk::Error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace husk::rt;
  std::string text(reinterpret_cast<const char*>(data), size);
  try {
    UserArg u = parse_user(text);
    auto colon = text.find(':');
    bool has_gid = colon != std::string::npos;
    if (!decimal(text.substr(0, colon)) || (has_gid && !decimal(text.substr(colon + 1)))) __builtin_trap();
    if (u.uid > kMaxId || u.gid.has_value() != has_gid || (u.gid && *u.gid > kMaxId)) __builtin_trap();
  } catch (const husk::Error&) {
    // Rejected; any other exception escapes and is a finding.
  }
  check_decimal(text, kMaxId);
  check_decimal(text, UINT64_MAX);
  return 0;
}
