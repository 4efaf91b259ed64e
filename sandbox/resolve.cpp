// The proxy's resolver on the network: UDP to each name server of
// resolv.conf in turn, TCP when the answer is truncated.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "base/error.h"
#include "base/fd.h"
#include "sandbox/resolver.h"

namespace husk::rt::dns {

namespace {

using base::Fd;
using Clock = std::chrono::steady_clock;

enum class Outcome { answer, timeout, unreachable, malformed };

socklen_t length_of(const sockaddr_storage& s) {
  return s.ss_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
}

uint16_t random_id() {
  uint16_t id;
  if (::getrandom(&id, sizeof id, GRND_NONBLOCK) != sizeof id)
    id = static_cast<uint16_t>(Clock::now().time_since_epoch().count());
  return id;
}

bool read_full(int fd, char* p, size_t n) {
  while (n > 0) {
    ssize_t r = ::recv(fd, p, n, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

// The query again over TCP (a truncated UDP answer), a 2-byte length before each message.
Outcome ask_tcp(const sockaddr_storage& server, const std::string& query, uint16_t id, const std::string& name,
                uint16_t type, int timeout, Answer& out) {
  Fd fd(::socket(server.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return Outcome::unreachable;
  timeval tv{timeout, 0};
  ::setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&server), length_of(server)) != 0)
    return errno == EINPROGRESS || errno == EAGAIN ? Outcome::timeout : Outcome::unreachable;
  std::string framed = {static_cast<char>(query.size() >> 8), static_cast<char>(query.size() & 0xff)};
  framed += query;
  if (::send(fd.get(), framed.data(), framed.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(framed.size()))
    return Outcome::unreachable;
  unsigned char len[2];
  if (!read_full(fd.get(), reinterpret_cast<char*>(len), 2)) return Outcome::timeout;
  std::string msg(static_cast<size_t>(len[0] << 8 | len[1]), '\0');
  if (!read_full(fd.get(), msg.data(), msg.size())) return Outcome::timeout;
  try {
    out = parse_answer(msg, id, name, type);
  } catch (const Error&) {
    return Outcome::malformed;
  }
  return out.truncated ? Outcome::malformed : Outcome::answer;
}

// One question to one server. Datagrams that are not its answer (another
// source: the socket is connected; another id or question) are ignored.
Outcome ask(const sockaddr_storage& server, const std::string& name, uint16_t type, int timeout, Answer& out) {
  const uint16_t id = random_id();
  const std::string query = build_query(id, name, type);
  Fd fd(::socket(server.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!fd || ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&server), length_of(server)) != 0 ||
      ::send(fd.get(), query.data(), query.size(), 0) != static_cast<ssize_t>(query.size()))
    return Outcome::unreachable;
  const auto deadline = Clock::now() + std::chrono::seconds(timeout);
  std::string buf(65535, '\0');
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return Outcome::timeout;
    pollfd p{fd.get(), POLLIN, 0};
    int ready = ::poll(&p, 1, static_cast<int>(left));
    if (ready < 0 && errno != EINTR) return Outcome::unreachable;
    if (ready <= 0) continue;
    ssize_t n = ::recv(fd.get(), buf.data(), buf.size(), 0);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return Outcome::unreachable;  // ECONNREFUSED: nothing listens there
    }
    try {
      out = parse_answer(buf.substr(0, static_cast<size_t>(n)), id, name, type);
    } catch (const Error&) {
      continue;
    }
    return out.truncated ? ask_tcp(server, query, id, name, type, timeout, out) : Outcome::answer;
  }
}

// Each server in turn, `attempts` rounds, until one answers NOERROR or
// NXDOMAIN; else its last answer, or what went wrong: a malformed answer
// before a timeout before no server reached.
Outcome query(const std::string& name, uint16_t type, const ResolvConf& conf, Answer& out) {
  bool answered = false, malformed = false, timed_out = false;
  for (int round = 0; round < conf.attempts; ++round) {
    for (const auto& server : conf.servers) {
      Answer a;
      Outcome o = ask(server, name, type, conf.timeout, a);
      if (o == Outcome::answer) {
        out = a;
        answered = true;
        if (a.rcode == 0 || a.rcode == 3) return o;
      }
      malformed |= o == Outcome::malformed;
      timed_out |= o == Outcome::timeout;
    }
  }
  if (answered) return Outcome::answer;
  return malformed ? Outcome::malformed : timed_out ? Outcome::timeout : Outcome::unreachable;
}

Resolved failed(Failure f, int rcode = 0) {
  Resolved r;
  r.failure = f;
  r.rcode = rcode;
  return r;
}

// A file of the host's configuration, up to 1 MiB; empty when there is none.
std::string read_config(const char* path) {
  Fd fd(::open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY));
  std::string text;
  if (!fd) return text;
  char buf[8192];
  ssize_t n;
  while (text.size() < (1u << 20) && ((n = ::read(fd.get(), buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR)))
    if (n > 0) text.append(buf, static_cast<size_t>(n));
  return text;
}

}  // namespace

Resolved resolve(const std::string& name, const ResolvConf& conf, const std::string& hosts) {
  Resolved r;
  if (sockaddr_storage s{}; ::inet_pton(AF_INET, name.c_str(), &reinterpret_cast<sockaddr_in*>(&s)->sin_addr) == 1) {
    s.ss_family = AF_INET;
    r.addresses = {s};
    return r;
  }
  if (sockaddr_storage s{}; ::inet_pton(AF_INET6, name.c_str(), &reinterpret_cast<sockaddr_in6*>(&s)->sin6_addr) == 1) {
    s.ss_family = AF_INET6;
    r.addresses = {s};
    return r;
  }
  if (r.addresses = hosts_lookup(hosts, name); !r.addresses.empty()) return r;
  std::string bare = name;
  while (!bare.empty() && bare.back() == '.') bare.pop_back();
  if (bare == "localhost" || (bare.size() > 10 && bare.compare(bare.size() - 10, 10, ".localhost") == 0)) {
    r.addresses = hosts_lookup("127.0.0.1 localhost\n::1 localhost\n", "localhost");
    return r;
  }
  // The failure that says most over the candidates: a server's, a name without address, no such name.
  Resolved worst = failed(Failure::not_found);
  for (const auto& c : candidates(name, conf)) {
    Answer a;
    try {
      build_query(0, c, kTypeA);
    } catch (const Error&) {
      continue;  // too long with this search domain: no such name
    }
    Outcome o = query(c, kTypeA, conf, a);
    if (o == Outcome::timeout) return failed(Failure::timeout);
    if (o == Outcome::unreachable) return failed(Failure::unreachable);
    if (o == Outcome::malformed) return failed(Failure::server_failure, -1);
    if (a.rcode == 3) continue;
    if (a.rcode != 0) {
      worst = failed(Failure::server_failure, a.rcode);
      continue;
    }
    r.addresses = a.addresses;
    if (Answer six; query(c, kTypeAAAA, conf, six) == Outcome::answer && six.rcode == 0)
      r.addresses.insert(r.addresses.end(), six.addresses.begin(), six.addresses.end());
    if (!r.addresses.empty()) return r;
    if (worst.failure == Failure::not_found) worst = failed(Failure::no_address);
  }
  return worst;
}

Resolved resolve(const std::string& name) {
  return resolve(name, parse_resolv_conf(read_config("/etc/resolv.conf")), read_config("/etc/hosts"));
}

}  // namespace husk::rt::dns
