// Name resolution for the --allow-host proxy, without the host's NSS modules:
// husk is static, and glibc's getaddrinfo there loads the host's libnss_*,
// which works only while the host's glibc is the one husk was linked with.
// /etc/hosts, then the name servers of /etc/resolv.conf (UDP, TCP when the
// answer is truncated). Used by the proxy's connection threads only.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <string>
#include <vector>

namespace husk::rt::dns {

constexpr uint16_t kTypeA = 1, kTypeAAAA = 28;

struct ResolvConf {
  std::vector<sockaddr_storage> servers;  // port 53 unless set (tests)
  std::vector<std::string> search;
  int timeout = 5, attempts = 2;  // seconds, tries per server
};
// The nameserver, search/domain and options (timeout, attempts) lines;
// the rest is ignored, as the C library does. No nameserver: 127.0.0.1.
ResolvConf parse_resolv_conf(const std::string& text);
// The addresses a hosts file gives `name` (its canonical name or an alias,
// case-insensitive), IPv4 first, in file order.
std::vector<sockaddr_storage> hosts_lookup(const std::string& text, const std::string& name);
// The names to ask in turn: a single label with each search domain, then as
// it is; a name with a dot as it is only (the allow list judged it so).
std::vector<std::string> candidates(const std::string& name, const ResolvConf& conf);

// A recursive query for name/type (class IN); Error when the name cannot be one.
std::string build_query(uint16_t id, const std::string& name, uint16_t type);
struct Answer {
  int rcode = 0;  // 0 NOERROR, 2 SERVFAIL, 3 NXDOMAIN, 5 REFUSED...
  bool truncated = false;
  std::vector<sockaddr_storage> addresses;  // the answer's records of `type` (CNAMEs followed by the server)
};
// A reply to build_query(id, name, type); Error when it is malformed or not
// that query's (other id, other question).
Answer parse_answer(const std::string& msg, uint16_t id, const std::string& name, uint16_t type);

// Why a name has no address: said to the client and in the exit summary.
enum class Failure { none, not_found, no_address, timeout, server_failure, unreachable };
std::string describe(Failure f, int rcode);

struct Resolved {
  std::vector<sockaddr_storage> addresses;  // IPv4 first
  Failure failure = Failure::none;
  int rcode = 0;  // of the last answer, for server_failure
};
// An address literal as itself; "localhost" and *.localhost as loopback when
// the hosts file does not name them (RFC 6761).
Resolved resolve(const std::string& name, const ResolvConf& conf, const std::string& hosts);
// resolve() with /etc/resolv.conf and /etc/hosts, read at each call (they change).
Resolved resolve(const std::string& name);

}  // namespace husk::rt::dns
