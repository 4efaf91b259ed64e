#include "sandbox/connect.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <iostream>

#include "base/error.h"
#include "base/fd.h"
#include "base/printable.h"
#include "container/args.h"
#include "sandbox/proxy.h"
#include "sandbox/relay.h"

namespace husk::rt {

namespace {

// A 403 with this text: the name or port is not allowed (see Proxy::fail).
constexpr const char* kNotAllowed = " is not in --allow-host";

std::string target_of(const std::string& host, const std::string& port) { return host + ":" + port; }

// The proxy's answer: its head, then the body its Content-Length gives (a
// refusal is short), or what came after a 200 (the server's first bytes).
bool read_answer(int fd, std::string& head, std::string& rest) {
  std::string in;
  char buf[4096];
  size_t end;
  while ((end = in.find("\r\n\r\n")) == std::string::npos) {
    if (in.size() > 16384) return false;
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    in.append(buf, static_cast<size_t>(n));
  }
  head = in.substr(0, end + 4);
  rest = in.substr(end + 4);
  if (head.compare(0, 12, "HTTP/1.1 200") == 0) return true;
  std::string lower = head;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  size_t at = lower.find("\r\ncontent-length:");
  size_t want = at == std::string::npos ? 0 : std::strtoul(head.c_str() + at + 17, nullptr, 10);
  while (rest.size() < std::min<size_t>(want, 4096)) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    rest.append(buf, static_cast<size_t>(n));
  }
  return true;
}

}  // namespace

std::string connect_head(const std::string& host, const std::string& port) {
  const std::string at = "husk connect: " + base::printable(target_of(host, port));
  // Only what a host name or address literal holds: no byte of it can end the request line.
  if (host.empty() || !std::all_of(host.begin(), host.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_' || c == ':';
      }))
    throw Error(at + ": not a host name");
  uint64_t n = parse_decimal(port, 65535, at + ": port");
  if (n == 0) throw Error(at + ": port 0");
  const std::string target = host_port(host, static_cast<uint16_t>(n));
  return "CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n\r\n";
}

std::string connect_refusal(const std::string& target, const std::string& head, const std::string& body) {
  if (head.compare(0, 12, "HTTP/1.1 200") == 0) return "";
  const std::string at = "husk connect: " + base::printable(target) + ": ";
  if (head.compare(0, 12, "HTTP/1.1 403") == 0 && body.find(kNotAllowed) != std::string::npos)
    return at + "refused by the sandbox's proxy (not an allowed host)";
  std::string said = body.substr(0, body.find('\n'));
  if (said.rfind("husk sandbox: ", 0) == 0) said.erase(0, 14);
  return at + "the sandbox's proxy answered " + base::printable(head.substr(9, head.find('\r') - 9)) +
         (said.empty() ? "" : ": " + base::printable(said));
}

int cmd_connect(const std::string& host, const std::string& port) {
  const std::string target = target_of(host, port);
  const std::string request = connect_head(host, port);
  base::Fd sock(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!sock) throw sys_error("husk connect: " + base::printable(target) + ": socket");
  sockaddr_in proxy{};
  proxy.sin_family = AF_INET;
  proxy.sin_port = htons(kProxyPort);
  proxy.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(sock.get(), reinterpret_cast<sockaddr*>(&proxy), sizeof proxy) != 0)
    throw sys_error("husk connect: " + base::printable(target) + ": no proxy on 127.0.0.1:" +
                    std::to_string(kProxyPort) + " (run inside husk sandbox --allow-host)");
  std::string head, rest;
  if (!write_all(sock.get(), request.data(), request.size()) || !read_answer(sock.get(), head, rest))
    throw Error("husk connect: " + base::printable(target) + ": the sandbox's proxy closed the connection");
  if (std::string refused = connect_refusal(target, head, rest); !refused.empty()) throw Error(refused);
  ::signal(SIGPIPE, SIG_IGN);  // a reader gone is an end, not a death
  if (!write_all(STDOUT_FILENO, rest.data(), rest.size())) return 1;
  relay(sock.get(), STDIN_FILENO, STDOUT_FILENO);
  return 0;
}

}  // namespace husk::rt
