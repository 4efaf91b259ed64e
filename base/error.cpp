#include "base/error.h"

#include <cstdio>
#include <cstring>

namespace husk {

Error sys_error(const std::string& what, int err) {
  return Error(what + ": " + std::strerror(err), err);
}

void rethrow_with(const std::string& context, const Error& e) {
  throw Error(context + ": " + e.what(), e.err());
}

std::string quote(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20 || c >= 0x7f) {
          char buf[5];
          std::snprintf(buf, sizeof buf, "\\x%02x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

}  // namespace husk
