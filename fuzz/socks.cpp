// The --allow-host proxy's SOCKS5 side (sandbox/socks.h): the greeting and
// the request come from the sandboxed command. Any read outside the input,
// a length past it, or a request judged that the HTTP side would refuse as
// a host name is a finding.
#include <cctype>
#include <cstdint>
#include <string>

#include "sandbox/socks.h"

using namespace husk::rt::socks;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string in(reinterpret_cast<const char*>(data), size);
  size_t used = 0;
  bool no_auth = false;
  if (parse_greeting(in, used, no_auth) == Parse::done && (used > in.size() || used < 3)) __builtin_trap();
  Request r;
  used = 0;
  if (parse_request(in, used, r) != Parse::done) return 0;
  if (used > in.size() || used < 7) __builtin_trap();  // the shortest: a name of length 0
  if (r.refusal != succeeded) return 0;
  if (r.command != 1 || r.port == 0 || r.host.empty()) __builtin_trap();
  for (char c : r.host)
    if (!std::islower(static_cast<unsigned char>(c)) && !std::isdigit(static_cast<unsigned char>(c)) &&
        std::string(".-_*:").find(c) == std::string::npos)
      __builtin_trap();
  return 0;
}
