// husk sandbox's proxy parsers (sandbox/proxy.h): the request head
// comes from the sandboxed code, the one input it controls that husk reads
// outside. What parse_proxy_request lets through is forwarded upstream, so
// it must be exactly what was checked: lines split at CRLF only, header
// names that are tokens, every Host naming the target, one request that
// closes the connection. parse_allowed_host is the --allow-host flag.
#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/error.h"
#include "sandbox/proxy.h"

namespace {

using husk::rt::ProxyRequest;

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool host_chars(const std::string& h) {
  if (h.empty()) return false;
  for (char c : h)
    if (!std::isalnum(static_cast<unsigned char>(c)) && std::string(".-_*:").find(c) == std::string::npos) return false;
  return true;
}

void check_forward(const ProxyRequest& r) {
  const std::string& f = r.forward;
  const std::string end = "Connection: close\r\n\r\n";
  if (f.size() < end.size() || f.compare(f.size() - end.size(), end.size(), end) != 0) __builtin_trap();
  std::vector<std::string> lines;
  for (size_t at = 0; at < f.size() - 2;) {
    size_t eol = f.find("\r\n", at);
    lines.push_back(f.substr(at, eol - at));
    at = eol + 2;
  }
  for (const auto& l : lines)
    for (char c : l)
      if (c == '\r' || c == '\n' || c == '\0') __builtin_trap();
  // METHOD SP /path SP VERSION
  const std::string& req = lines.front();
  size_t s1 = req.find(' '), s2 = req.rfind(' ');
  if (s1 == std::string::npos || s1 == s2 || req.find(' ', s1 + 1) != s2 || req[s1 + 1] != '/') __builtin_trap();
  // No tab an upstream could split at: METHOD is a token, the target has none, VERSION is HTTP/d.d.
  if (req.find('\t') != std::string::npos) __builtin_trap();
  std::string version = req.substr(s2 + 1);
  if (version.size() != 8 || version.compare(0, 5, "HTTP/") != 0) __builtin_trap();
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::string& l = lines[i];
    if (l.empty()) __builtin_trap();  // a blank line would end the head early
    size_t colon = l.find(':');
    if (colon == std::string::npos || colon == 0) __builtin_trap();
    std::string name = lower(l.substr(0, colon));
    if (name.find_first_of(" \t") != std::string::npos) __builtin_trap();
    bool last = i + 1 == lines.size();
    if ((name == "connection") != last || name == "proxy-connection" || name == "keep-alive") __builtin_trap();
    if (name == "host") {
      std::string v = l.substr(colon + 1);
      v.erase(0, v.find_first_not_of(" \t"));
      v.erase(v.find_last_not_of(" \t") + 1);
      // NAME or [V6], then ":" and the port (digits, or none: 80) if any.
      std::string want = r.host.find(':') != std::string::npos ? "[" + r.host + "]" : r.host;
      std::string lv = lower(v);
      if (lv.compare(0, want.size(), want) != 0) __builtin_trap();
      std::string port = lv.substr(want.size());
      if (!port.empty()) {
        if (port[0] != ':' || port.find_first_not_of("0123456789", 1) != std::string::npos) __builtin_trap();
        port.erase(0, 1);
      }
      unsigned long n = 80;
      if (!port.empty()) {
        port.erase(0, std::min(port.find_first_not_of('0'), port.size() - 1));  // leading zeros
        n = port.size() > 9 ? 0 : std::stoul(port);
      }
      if (n != r.port) __builtin_trap();
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  try {
    ProxyRequest r = husk::rt::parse_proxy_request(text);
    if (!host_chars(r.host) || r.host != lower(r.host) || r.port == 0) __builtin_trap();
    if (r.connect != r.forward.empty()) __builtin_trap();
    if (!r.connect) check_forward(r);
  } catch (const husk::Error&) {
    // Refused (a 400); any other exception escapes and is a finding.
  }
  try {
    auto a = husk::rt::parse_allowed_host(text);
    if (!host_chars(a.name) || a.name != lower(a.name) || (a.port && *a.port == 0)) __builtin_trap();
    size_t star = a.name.find('*');
    if (star != std::string::npos && (star != 0 || a.name.rfind("*.", 0) != 0 || a.name.find('*', 1) != std::string::npos))
      __builtin_trap();
  } catch (const husk::Error&) {
  }
  return 0;
}
