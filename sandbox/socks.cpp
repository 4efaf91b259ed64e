#include "sandbox/socks.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>

namespace husk::rt::socks {

namespace {

constexpr uint8_t kVersion = 5;

// The characters split_host_port (proxy.cpp) lets through in a host name,
// and no other: the HTTP side would refuse the rest as "not a host name".
bool name_ok(std::string_view name) {
  if (name.empty()) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_' || c == '*' || c == ':';
  });
}

Parse refuse(Request& out, Reply code, Parse p = Parse::done) {
  out.refusal = code;
  return p;
}

}  // namespace

Parse parse_greeting(std::string_view in, size_t& used, bool& no_auth) {
  if (in.empty()) return Parse::more;
  if (static_cast<uint8_t>(in[0]) != kVersion) return Parse::bad;
  if (in.size() < 2) return Parse::more;
  const size_t n = static_cast<uint8_t>(in[1]);
  if (n == 0) return Parse::bad;  // RFC 1928: at least one method
  if (in.size() < 2 + n) return Parse::more;
  no_auth = in.substr(2, n).find('\0') != std::string_view::npos;
  used = 2 + n;
  return Parse::done;
}

std::string method_reply(bool no_auth) { return {static_cast<char>(kVersion), static_cast<char>(no_auth ? 0 : 0xff)}; }

Parse parse_request(std::string_view in, size_t& used, Request& out) {
  out = Request{};
  if (in.size() < 4) {
    if (!in.empty() && static_cast<uint8_t>(in[0]) != kVersion) return refuse(out, general_failure, Parse::bad);
    return Parse::more;
  }
  if (static_cast<uint8_t>(in[0]) != kVersion || in[2] != 0) return refuse(out, general_failure, Parse::bad);
  out.command = static_cast<uint8_t>(in[1]);
  const uint8_t type = static_cast<uint8_t>(in[3]);
  size_t at = 4, length;
  if (type == 1) {
    length = 4;
  } else if (type == 4) {
    length = 16;
  } else if (type == 3) {
    if (in.size() < 5) return Parse::more;
    length = static_cast<uint8_t>(in[4]);
    ++at;
  } else {
    // Its length is unknown: nothing after it can be read as a request.
    return refuse(out, address_type_not_supported, Parse::bad);
  }
  if (in.size() < at + length + 2) return Parse::more;
  used = at + length + 2;
  const std::string_view address = in.substr(at, length);
  out.port =
      static_cast<uint16_t>(static_cast<uint8_t>(in[at + length]) << 8 | static_cast<uint8_t>(in[at + length + 1]));
  if (type == 3) {
    // A NUL would end the name early for the resolver: "allowed.test\0.evil".
    if (!name_ok(address)) return refuse(out, general_failure);
    out.host.assign(address);
    std::transform(out.host.begin(), out.host.end(), out.host.begin(), [](unsigned char c) { return std::tolower(c); });
  } else {
    char text[INET6_ADDRSTRLEN];
    ::inet_ntop(type == 1 ? AF_INET : AF_INET6, address.data(), text, sizeof text);
    out.host = text;
  }
  // BIND (2) and UDP ASSOCIATE (3) are not served: TCP out, to a judged name, only.
  if (out.command != 1) return refuse(out, command_not_supported);
  if (out.port == 0) return refuse(out, general_failure);
  return Parse::done;
}

std::string reply(Reply code) { return {static_cast<char>(kVersion), static_cast<char>(code), 0, 1, 0, 0, 0, 0, 0, 0}; }

}  // namespace husk::rt::socks
