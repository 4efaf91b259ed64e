// The --allow-host proxy's resolver (sandbox/resolver.h): DNS answers come
// from the network, resolv.conf and hosts from the host. Any read outside a
// message, loop or exception other than Error is a finding.
#include <sys/socket.h>

#include <cstdint>
#include <string>

#include "base/error.h"
#include "sandbox/resolver.h"

using namespace husk::rt::dns;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  // The id is the input's own: the parser gets past the first check.
  const uint16_t id = size >= 2 ? static_cast<uint16_t>(data[0] << 8 | data[1]) : 0;
  for (uint16_t type : {kTypeA, kTypeAAAA}) {
    try {
      Answer a = parse_answer(text, id, "dns.test", type);
      if (a.truncated && !a.addresses.empty()) __builtin_trap();
      for (const auto& s : a.addresses)
        if (s.ss_family != (type == kTypeA ? AF_INET : AF_INET6)) __builtin_trap();
    } catch (const husk::Error&) {
    }
  }
  ResolvConf c = parse_resolv_conf(text);
  if (c.servers.empty() || c.servers.size() > 3 || c.search.size() > 6 || c.timeout < 1 || c.attempts < 1)
    __builtin_trap();
  for (const auto& s : hosts_lookup(text, "dns.test"))
    if (s.ss_family != AF_INET && s.ss_family != AF_INET6) __builtin_trap();
  try {
    std::string q = build_query(id, text, kTypeA);
    if (q.size() > 12 + 255 + 4) __builtin_trap();
  } catch (const husk::Error&) {
  }
  return 0;
}
