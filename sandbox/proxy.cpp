#include "sandbox/proxy.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>

#include "base/error.h"
#include "base/fdpass.h"
#include "container/args.h"
#include "sandbox/relay.h"
#include "sandbox/resolver.h"
#include "sandbox/socks.h"

namespace husk::rt {

using base::Fd;

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// "host:port" or "[v6]:port" -> host, port; the port is required unless `optional`.
std::pair<std::string, std::optional<uint16_t>> split_host_port(const std::string& text, bool optional,
                                                                const std::string& what) {
  // Named in errors with its control bytes shown as '?': a message cut at a NUL hides the rest.
  std::string shown = text;
  std::replace_if(shown.begin(), shown.end(), [](unsigned char c) { return c < 0x20 || c == 0x7f; }, '?');
  const std::string at = what + " " + shown;
  std::string host = text, port;
  if (!text.empty() && text[0] == '[') {
    size_t close = text.find(']');
    if (close == std::string::npos) throw Error(at + ": no closing ']'");
    host = text.substr(1, close - 1);
    if (close + 1 < text.size()) {
      if (text[close + 1] != ':') throw Error(at + ": expected ':' after ']'");
      port = text.substr(close + 2);
    }
  } else if (size_t colon = text.rfind(':'); colon != std::string::npos) {
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  if (host.empty()) throw Error(at + ": no host name");
  // strchr finds the terminating NUL too: "a\0.b" must not pass (the resolver would see "a").
  for (char c : host)
    if (!std::isalnum(static_cast<unsigned char>(c)) && (c == '\0' || !std::strchr(".-_*:", c)))
      throw Error(at + ": not a host name");
  if (port.empty()) {
    if (!optional) throw Error(at + ": no port");
    return {lower(host), std::nullopt};
  }
  uint64_t n = parse_decimal(port, 65535, at + ": port");
  if (n == 0) throw Error(at + ": port 0");
  return {lower(host), static_cast<uint16_t>(n)};
}

void reply(int fd, const char* status, const std::string& body) {
  std::string r = std::string("HTTP/1.1 ") + status + "\r\nContent-Type: text/plain\r\nContent-Length: " +
                  std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
  write_all(fd, r.data(), r.size());
}

// The host's interface addresses now (they come and go: read at each dial).
std::vector<sockaddr_storage> host_addresses() {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) throw sys_error("--allow-host: getifaddrs");
  std::vector<sockaddr_storage> out;
  for (ifaddrs* i = list; i; i = i->ifa_next) {
    if (!i->ifa_addr || (i->ifa_addr->sa_family != AF_INET && i->ifa_addr->sa_family != AF_INET6)) continue;
    sockaddr_storage s{};
    std::memcpy(&s, i->ifa_addr, i->ifa_addr->sa_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6));
    out.push_back(s);
  }
  ::freeifaddrs(list);
  return out;
}

// A TCP connection to host:port, or -1 and `why`.
int dial(const std::string& host, uint16_t port, bool local_ok, bool private_ok, DialFailure& why) {
  why.resolved = dns::resolve(host);
  if (why.resolved.failure != dns::Failure::none) {
    why.kind = DialFailure::unresolved;
    return -1;
  }
  std::vector<sockaddr_storage> own;
  try {
    own = host_addresses();
  } catch (const Error&) {
    return -1;  // which addresses are the host's is not known: none is tried
  }
  int fd = -1;
  bool only_refused = true;
  for (sockaddr_storage& a : why.resolved.addresses) {
    if (fd >= 0) break;
    auto* addr = reinterpret_cast<sockaddr*>(&a);
    AddressKind kind = classify_address(addr, own);
    if (!address_allowed(kind, local_ok, private_ok)) {
      why.refused_kind = kind;
      continue;
    }
    only_refused = false;
    if (a.ss_family == AF_INET) reinterpret_cast<sockaddr_in*>(&a)->sin_port = htons(port);
    if (a.ss_family == AF_INET6) reinterpret_cast<sockaddr_in6*>(&a)->sin6_port = htons(port);
    fd = ::socket(a.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    timeval tv{10, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (::connect(fd, addr, a.ss_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6)) != 0) {
      why.error = errno;
      ::close(fd);
      fd = -1;
    }
  }
  if (fd < 0 && only_refused) why.kind = DialFailure::refused;
  return fd;
}

constexpr size_t kMaxOpen = 512;  // sockets (two per tunnel)

}  // namespace

AddressKind classify_address(const sockaddr* a, const std::vector<sockaddr_storage>& own) {
  if (a->sa_family == AF_INET6) {
    const in6_addr& v = reinterpret_cast<const sockaddr_in6*>(a)->sin6_addr;
    // An IPv4 address carried in the IPv6 one is judged as that address.
    auto embedded = [&](size_t at) {
      sockaddr_in four{};
      four.sin_family = AF_INET;
      std::memcpy(&four.sin_addr, &v.s6_addr[at], 4);
      return classify_address(reinterpret_cast<const sockaddr*>(&four), own);
    };
    static const uint8_t kNat64[12] = {0x00, 0x64, 0xff, 0x9b};  // 64:ff9b::/96 (RFC 6052)
    if (IN6_IS_ADDR_V4MAPPED(&v) || std::memcmp(v.s6_addr, kNat64, sizeof kNat64) == 0) return embedded(12);
    if (v.s6_addr[0] == 0x20 && v.s6_addr[1] == 0x02) return embedded(2);  // 6to4, 2002::/16
    if (IN6_IS_ADDR_LOOPBACK(&v) || IN6_IS_ADDR_UNSPECIFIED(&v) || IN6_IS_ADDR_LINKLOCAL(&v) ||
        IN6_IS_ADDR_MULTICAST(&v))
      return AddressKind::host_local;
    if (IN6_IS_ADDR_V4COMPAT(&v)) return embedded(12);  // ::a.b.c.d (deprecated)
    // Local-use NAT64 (64:ff9b:1::/48, any prefix length) and site-local
    // (fec0::/10, deprecated) reach private networks.
    if ((v.s6_addr[0] == 0x00 && v.s6_addr[1] == 0x64 && v.s6_addr[2] == 0xff && v.s6_addr[3] == 0x9b &&
         v.s6_addr[4] == 0x00 && v.s6_addr[5] == 0x01) ||
        IN6_IS_ADDR_SITELOCAL(&v))
      return AddressKind::private_net;
    for (const auto& o : own)
      if (o.ss_family == AF_INET6 &&
          std::memcmp(&reinterpret_cast<const sockaddr_in6*>(&o)->sin6_addr, &v, sizeof v) == 0)
        return AddressKind::host_own;
    return (v.s6_addr[0] & 0xfe) == 0xfc ? AddressKind::private_net : AddressKind::outside;
  }
  if (a->sa_family != AF_INET) return AddressKind::host_local;
  const in_addr_t raw = reinterpret_cast<const sockaddr_in*>(a)->sin_addr.s_addr;
  const uint32_t v = ntohl(raw);
  if ((v >> 24) == 127 || (v >> 16) == 0xa9fe || (v >> 24) == 0 || (v >> 28) == 0xe)
    return AddressKind::host_local;
  for (const auto& o : own)
    if (o.ss_family == AF_INET && reinterpret_cast<const sockaddr_in*>(&o)->sin_addr.s_addr == raw)
      return AddressKind::host_own;
  if ((v & 0xff000000) == 0x0a000000 || (v & 0xfff00000) == 0xac100000 || (v & 0xffff0000) == 0xc0a80000 ||
      (v & 0xffc00000) == 0x64400000)
    return AddressKind::private_net;
  return AddressKind::outside;
}

bool address_allowed(AddressKind k, bool local_ok, bool private_ok) {
  switch (k) {
    case AddressKind::outside: return true;
    case AddressKind::host_local:
    case AddressKind::host_own: return local_ok;
    case AddressKind::private_net: return private_ok;
  }
  return false;
}

AllowedHost parse_allowed_host(const std::string& text) {
  auto [host, port] = split_host_port(text, true, "--allow-host");
  if (host.find('*') != std::string::npos && (host.rfind("*.", 0) != 0 || host.find('*', 1) != std::string::npos))
    throw Error("--allow-host " + text + ": '*' only as a first label (*.example.com)");
  return {host, port};
}

std::string no_proxy_list(const std::vector<std::string>& allow_hosts, bool local_ok) {
  std::string out;
  for (const char* name : {"localhost", "127.0.0.1", "::1"}) {
    bool allowed = false;
    for (const auto& a : allow_hosts) allowed |= local_ok && parse_allowed_host(a).name == name;
    if (!allowed) out += (out.empty() ? "" : ",") + std::string(name);
  }
  return out;
}

std::string host_port(const std::string& host, uint16_t port) {
  return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

bool host_allowed(const std::vector<AllowedHost>& allowed, const std::string& host, uint16_t port) {
  const std::string h = lower(host);
  bool found = false;
  for (const auto& a : allowed) {
    if (a.port && *a.port != port) continue;
    if (a.name == h || (a.name.rfind("*.", 0) == 0 && h.size() > a.name.size() - 1 &&
                        h.compare(h.size() - (a.name.size() - 1), a.name.size() - 1, a.name, 1) == 0)) {
      if (a.denied) return false;
      found = true;
    }
  }
  return found;
}

namespace {

// A header field name: an RFC 9110 token.
bool is_token(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && !std::strchr("!#$%&'*+-.^_`|~", c)) return false;
  return true;
}

}  // namespace

ProxyRequest parse_proxy_request(const std::string& head) {
  // Lines end with CRLF only. A bare CR or LF (or another control byte)
  // would let an upstream that splits lines at either see headers that were
  // never checked here: a Host naming another site behind the same front end.
  for (size_t i = 0; i < head.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(head[i]);
    if (c == '\r' && i + 1 < head.size() && head[i + 1] == '\n') {
      ++i;
    } else if ((c < 0x20 && c != '\t') || c == 0x7f) {
      throw Error("a control character in the request head (lines end with CRLF only)");
    }
  }
  size_t eol = head.find("\r\n");
  std::string line = head.substr(0, eol);
  size_t s1 = line.find(' '), s2 = line.rfind(' ');
  if (s1 == std::string::npos || s2 == s1 || line.find_first_of(" \t", s1 + 1) != s2)
    throw Error("not an HTTP request line");
  std::string method = line.substr(0, s1), target = line.substr(s1 + 1, s2 - s1 - 1), version = line.substr(s2 + 1);
  // An upstream may split the line at tabs too: "GET\thttp://other/\tHTTP/1.1 http://allowed/ ..."
  // would show it another target. METHOD is a token, VERSION is HTTP/d.d.
  if (!is_token(method) || version.size() != 8 || version.compare(0, 5, "HTTP/") != 0 ||
      !std::isdigit(static_cast<unsigned char>(version[5])) || version[6] != '.' ||
      !std::isdigit(static_cast<unsigned char>(version[7])))
    throw Error("not an HTTP request line");
  ProxyRequest r;
  if (method == "CONNECT") {
    r.connect = true;
    auto [host, port] = split_host_port(target, false, "CONNECT");
    r.host = host;
    r.port = *port;
    return r;
  }
  if (lower(target.substr(0, 7)) != "http://") throw Error("only CONNECT and http:// requests go through the proxy");
  std::string rest = target.substr(7);
  size_t slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  std::string path = slash == std::string::npos ? "/" : rest.substr(slash);
  if (size_t at = authority.rfind('@'); at != std::string::npos) authority = authority.substr(at + 1);
  auto [host, port] = split_host_port(authority, true, "request");
  r.host = host;
  r.port = port.value_or(80);
  // One request per connection (a second one could name another host), and
  // a Host header that is the target's (a shared front end routes by it).
  r.forward = method + " " + path + " " + version + "\r\n";
  size_t at = eol + 2;
  while (at < head.size()) {
    size_t next = head.find("\r\n", at);
    if (next == std::string::npos || next == at) break;
    std::string header = head.substr(at, next - at);
    at = next + 2;
    // "Host : x" or a folded continuation line would reach a lenient
    // upstream as a Host header this loop did not see as one.
    size_t colon = header.find(':');
    if (colon == std::string::npos || !is_token(header.substr(0, colon)))
      throw Error("a header line that is not NAME: VALUE");
    std::string name = lower(header.substr(0, colon));
    if (name == "connection" || name == "proxy-connection" || name == "keep-alive") continue;
    if (name == "host") {
      std::string value = header.substr(colon + 1);
      value.erase(0, value.find_first_not_of(" \t"));
      value.erase(value.find_last_not_of(" \t") + 1);
      auto [h, p] = split_host_port(value, true, "Host");
      if (h != r.host || p.value_or(80) != r.port) throw Error("the Host header names another host than the request");
    }
    r.forward += header + "\r\n";
  }
  r.forward += "Connection: close\r\n\r\n";
  return r;
}

std::vector<Fd> listen_in_sandbox(pid_t init, const std::vector<uint16_t>& ports) {
  const std::string proc = "/proc/" + std::to_string(init) + "/ns/";
  Fd userns(::open((proc + "user").c_str(), O_RDONLY | O_CLOEXEC));
  Fd netns(::open((proc + "net").c_str(), O_RDONLY | O_CLOEXEC));
  if (!userns || !netns) throw sys_error("--allow-host: open the sandbox's namespaces (" + proc + ")");
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) throw sys_error("--allow-host: socketpair");
  Fd mine(sv[0]), theirs(sv[1]);
  pid_t child = ::fork();
  if (child < 0) throw sys_error("--allow-host: fork");
  if (child == 0) {
    // A process with threads cannot join a user namespace; this one has none.
    // One message per port: its step (0: listening, else where it failed) and its socket.
    char step = 1;
    if (::setns(userns.get(), CLONE_NEWUSER) == 0 && ++step && ::setns(netns.get(), CLONE_NEWNET) == 0 && ++step) {
      int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      ifreq lo{};
      std::strncpy(lo.ifr_name, "lo", IFNAMSIZ - 1);
      if (s >= 0 && ++step && ::ioctl(s, SIOCGIFFLAGS, &lo) == 0 && (lo.ifr_flags |= IFF_UP) &&
          ::ioctl(s, SIOCSIFFLAGS, &lo) == 0 && ++step)
        ::close(s);
    }
    for (uint16_t port : ports) {
      int s = -1;
      char at = step;
      if (step == 5 && (s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) >= 0) {
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_port = htons(port);
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        at = ::bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 && ::listen(s, 128) == 0 ? 0 : 5;
      }
      base::send_with_fd(theirs.get(), &at, 1, at == 0 ? s : -1);
    }
    _exit(0);
  }
  theirs.reset();
  std::vector<Fd> out;
  for (uint16_t port : ports) {
    char step = 99;
    int fd = -1;
    ssize_t n = base::recv_with_fd(mine.get(), &step, 1, &fd);
    Fd listener(fd);
    if (n != 1 || step != 0 || !listener) {
      while (::waitpid(child, nullptr, 0) < 0 && errno == EINTR) {
      }
      throw Error("--allow-host: could not listen on 127.0.0.1:" + std::to_string(port) +
                  " in the sandbox's network namespace (step " + std::to_string(step) + ")");
    }
    out.push_back(std::move(listener));
  }
  while (::waitpid(child, nullptr, 0) < 0 && errno == EINTR) {
  }
  return out;
}

Proxy::Proxy(Fd listener, Fd socks, std::vector<AllowedHost> allowed, bool local_ok, bool private_ok,
             RefusalHook refused)
    : listener_(std::move(listener)),
      socks_(std::move(socks)),
      allowed_(std::move(allowed)),
      local_ok_(local_ok),
      private_ok_(private_ok),
      refused_(std::move(refused)) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) throw sys_error("--allow-host: pipe");
  stop_read_ = Fd(p[0]);
  stop_write_ = Fd(p[1]);
  server_ = std::thread([this] { serve(); });
}

Proxy::~Proxy() {
  char x = 1;
  if (::write(stop_write_.get(), &x, 1) < 0) {
  }
  server_.join();
  std::unique_lock<std::mutex> lock(mu_);
  for (int fd : open_) ::shutdown(fd, SHUT_RDWR);
  idle_.wait(lock, [this] { return active_ == 0; });
}

std::vector<std::string> Proxy::listed(const Tally& tally) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  for (const auto& [what, n] : tally) out.push_back(what + " (" + std::to_string(n) + ")");
  return out;
}

void Proxy::note(Tally& tally, const std::string& what) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [w, n] : tally)
    if (w == what) {
      ++n;
      return;
    }
  // The command picks the names: past kTallied the rest are one count, so
  // neither the exit summary nor this search grows with them.
  if (tally.size() < kTallied) {
    tally.emplace_back(what, 1);
  } else if (tally.size() == kTallied) {
    tally.emplace_back(kOthers, 1);
  } else {
    ++tally.back().second;
  }
}

void Proxy::allow(AllowedHost host) {
  std::lock_guard<std::mutex> lock(mu_);
  allowed_.push_back(std::move(host));
}

bool Proxy::allows(const std::string& host, uint16_t port) const {
  std::lock_guard<std::mutex> lock(mu_);
  return host_allowed(allowed_, host, port);
}

// Tallied for the exit summary and told to the hook (outside the lock: it writes).
void Proxy::refuse(Tally& tally, const std::string& what, const ProxyRefusal& r) {
  note(tally, what);
  if (refused_) refused_(r);
}

int Proxy::open_upstream(const std::string& host, uint16_t port, DialFailure& why) {
  const std::string what = host_port(host, port);
  if (!allows(host, port)) {
    why.kind = DialFailure::not_allowed;
    refuse(denied_, what, {host, port, "not-allowed", ""});
    return -1;
  }
  int upstream = dial(host, port, local_ok_, private_ok_, why);
  if (upstream >= 0) {
    std::lock_guard<std::mutex> lock(mu_);
    open_.push_back(upstream);
  } else if (why.kind == DialFailure::unresolved) {
    const std::string error = dns::describe(why.resolved.failure, why.resolved.rcode);
    refuse(unresolved_, what + ": " + error, {host, port, "unresolved", error});
  } else if (why.kind == DialFailure::refused) {
    const bool priv = why.refused_kind == AddressKind::private_net;
    refuse(denied_, what + (priv ? " (a private network's address)" : " (a host-local address)"),
           {host, port, priv ? "private" : "loopback", ""});
  }
  return upstream;
}

void Proxy::fail(int client, const std::string& what, const DialFailure& why) {
  if (why.kind == DialFailure::not_allowed) {
    reply(client, "403 Forbidden", "husk sandbox: " + what + " is not in --allow-host\n");
  } else if (why.kind == DialFailure::unresolved) {
    const std::string error = dns::describe(why.resolved.failure, why.resolved.rcode);
    reply(client, why.resolved.failure == dns::Failure::timeout ? "504 Gateway Timeout" : "502 Bad Gateway",
          "husk sandbox: cannot resolve " + what + ": " + error + "\n");
  } else if (why.kind == DialFailure::refused) {
    const bool priv = why.refused_kind == AddressKind::private_net;
    reply(client, "403 Forbidden",
          "husk sandbox: " + what +
              (priv ? " resolves to a private network's address (--allow-host-private)\n"
                    : " resolves to an address of the host itself (--allow-host-loopback)\n"));
  } else {
    reply(client, "502 Bad Gateway", "husk sandbox: cannot connect to " + what + "\n");
  }
}

void Proxy::serve() {
  for (;;) {
    pollfd fds[3] = {{stop_read_.get(), POLLIN, 0}, {listener_.get(), POLLIN, 0}, {socks_.get(), POLLIN, 0}};
    if (::poll(fds, 3, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[0].revents) return;
    const bool socks = !fds[1].revents;
    int client = ::accept4(socks ? socks_.get() : listener_.get(), nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) {
      if (errno == EMFILE || errno == ENFILE) {  // out of fds: wait instead of spinning on the listener
        pollfd stop{stop_read_.get(), POLLIN, 0};
        ::poll(&stop, 1, 100);
      }
      continue;
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (open_.size() >= kMaxOpen) {  // a sandbox opening connections without end gets no more threads
      ::close(client);
      continue;
    }
    try {
      std::thread([this, client, socks] {
        socks ? handle_socks(client) : handle(client);
        std::lock_guard<std::mutex> done(mu_);
        if (--active_ == 0) idle_.notify_all();
      }).detach();
      open_.push_back(client);
      ++active_;
    } catch (const std::system_error&) {
      ::close(client);
    }
  }
}

void Proxy::forget(int fd) {
  std::lock_guard<std::mutex> lock(mu_);
  open_.erase(std::remove(open_.begin(), open_.end(), fd), open_.end());
  ::close(fd);
}

void Proxy::tunnel(int client, int upstream, const std::string& to_client, const std::string& to_upstream) {
  if (write_all(client, to_client.data(), to_client.size()) &&
      write_all(upstream, to_upstream.data(), to_upstream.size()))
    relay(client, upstream);
  forget(upstream);
  forget(client);
}

void Proxy::handle(int client) {
  // The request head, at most 16 KiB, within 10 s.
  timeval tv{10, 0};
  ::setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string head;
  char buf[4096];
  size_t end;
  while ((end = head.find("\r\n\r\n")) == std::string::npos && head.size() < 16384) {
    ssize_t n = ::recv(client, buf, sizeof buf, 0);
    if (n <= 0) return forget(client);
    head.append(buf, static_cast<size_t>(n));
  }
  if (end == std::string::npos) {
    reply(client, "431 Request Header Fields Too Large", "husk sandbox: request head over 16 KiB\n");
    return forget(client);
  }
  std::string early = head.substr(end + 4);  // bytes after the head: the body, or the tunnel's start
  head.resize(end + 4);
  tv = {0, 0};
  ::setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ProxyRequest req;
  try {
    req = parse_proxy_request(head);
  } catch (const Error& e) {
    reply(client, "400 Bad Request", std::string("husk sandbox: ") + e.what() + "\n");
    return forget(client);
  }
  DialFailure why;
  int upstream = open_upstream(req.host, req.port, why);
  if (upstream < 0) {
    fail(client, host_port(req.host, req.port), why);
    return forget(client);
  }
  if (req.connect)
    tunnel(client, upstream, "HTTP/1.1 200 Connection established\r\n\r\n", early);
  else
    tunnel(client, upstream, "", req.forward + early);
}

}  // namespace husk::rt
