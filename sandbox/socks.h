// husk sandbox --allow-host: the SOCKS5 side of the proxy (RFC 1928), for
// what is not HTTP (ssh, git over ssh, databases). No authentication, CONNECT
// only; the destination is judged and reached as an HTTP CONNECT's is
// (Proxy::open_upstream). The pure parts, apart for the unit tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace husk::rt::socks {

// The port the sandbox's programs find it on (ALL_PROXY).
constexpr uint16_t kPort = 1080;

// RFC 1928 §6.
enum Reply : uint8_t {
  succeeded = 0,
  general_failure = 1,
  not_allowed = 2,  // by the ruleset: not in --allow-host, or an address refused
  network_unreachable = 3,
  host_unreachable = 4,  // also: the name does not resolve
  connection_refused = 5,
  command_not_supported = 7,  // BIND, UDP ASSOCIATE
  address_type_not_supported = 8,
};

enum class Parse { more, done, bad };

// The greeting: VER(5) NMETHODS METHODS. `used`: its length once done;
// `no_auth`: the client offers method 0 (the only one served). bad: not SOCKS5.
Parse parse_greeting(std::string_view in, size_t& used, bool& no_auth);
// The answer to a greeting: method 0, or 0xff (none acceptable).
std::string method_reply(bool no_auth);

struct Request {
  uint8_t command = 0;
  std::string host;  // lower case; an IPv6 address without brackets, as inet_ntop writes it
  uint16_t port = 0;
  Reply refusal = succeeded;  // what to answer instead of serving it
};
// VER(5) CMD RSV ATYP DST.ADDR DST.PORT. done with a refusal: answer it and
// close; bad: the bytes cannot be a request (then `refusal` too).
Parse parse_request(std::string_view in, size_t& used, Request& out);
// VER REP RSV ATYP(1) 0.0.0.0:0: where the proxy is bound tells the sandbox nothing.
std::string reply(Reply code);

}  // namespace husk::rt::socks
