#include "launch/protocol.h"

#include <limits>

#include "base/error.h"

namespace husk::rt {

std::string pid_payload(pid_t pid) { return std::to_string(pid); }

pid_t parse_pid_payload(const std::string& payload) {
  // No std::stoi: it takes "12abc", " 12" and "+12", and throws its own exceptions.
  if (payload.empty() || payload.size() > 10) throw Error("sync: invalid pid \"" + payload + "\"");
  long long v = 0;
  for (char ch : payload) {
    if (ch < '0' || ch > '9') throw Error("sync: invalid pid \"" + payload + "\"");
    v = v * 10 + (ch - '0');
  }
  if (v <= 0 || v > std::numeric_limits<pid_t>::max()) throw Error("sync: invalid pid \"" + payload + "\"");
  return static_cast<pid_t>(v);
}

std::string msg_name(Msg m) { return std::string("'") + static_cast<char>(m) + "'"; }

}  // namespace husk::rt
