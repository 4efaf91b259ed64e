// File names in husk's messages, their control bytes escaped (printable.h).
#include "base/printable.h"

#include <cstdint>

namespace husk::base {
namespace {

// The length of the valid UTF-8 sequence at s[i] (2-4), or 0: overlong
// forms, surrogates and code points past U+10FFFF are not valid.
size_t utf8_length(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<uint8_t>(s[i + k]); };
  const uint8_t lead = b(0);
  size_t n = lead >= 0xc2 && lead <= 0xdf ? 2 : lead >= 0xe0 && lead <= 0xef ? 3 : lead >= 0xf0 && lead <= 0xf4 ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k)
    if ((b(k) & 0xc0) != 0x80) return 0;
  // The second byte's range where the lead alone does not settle it.
  if ((lead == 0xe0 && b(1) < 0xa0) || (lead == 0xed && b(1) > 0x9f) || (lead == 0xf0 && b(1) < 0x90) ||
      (lead == 0xf4 && b(1) > 0x8f))
    return 0;
  // C1 controls: U+0080-U+009F are C2 80 - C2 9F.
  if (lead == 0xc2 && b(1) <= 0x9f) return 0;
  return n;
}

}  // namespace

std::string printable(std::string_view name) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(name.size());
  for (size_t i = 0; i < name.size();) {
    const auto c = static_cast<uint8_t>(name[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += name[i++];
      continue;
    }
    if (size_t n = c >= 0x80 ? utf8_length(name, i) : 0) {
      out.append(name.substr(i, n));
      i += n;
      continue;
    }
    out += "\\x";
    out += kHex[c >> 4];
    out += kHex[c & 0xf];
    ++i;
  }
  return out;
}

}  // namespace husk::base
