// The SOCKS5 side of the --allow-host proxy: a client's greeting and request
// read, its destination judged and reached by Proxy::open_upstream as an
// HTTP CONNECT's is, then the tunnel.
#include <sys/socket.h>

#include <cerrno>

#include "sandbox/proxy.h"
#include "sandbox/relay.h"
#include "sandbox/socks.h"

namespace husk::rt {

namespace {

// Reads from `client` until `parse` has what it needs: at most 600 bytes (a
// greeting is at most 257, a request 262), within the receive timeout.
template <class Parse>
socks::Parse receive(int client, std::string& in, Parse parse) {
  char buf[512];
  for (;;) {
    socks::Parse p = parse(in);
    if (p != socks::Parse::more) return p;
    if (in.size() > 600) return socks::Parse::bad;
    ssize_t n = ::recv(client, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return socks::Parse::bad;
    in.append(buf, static_cast<size_t>(n));
  }
}

socks::Reply refusal(const DialFailure& why) {
  switch (why.kind) {
    case DialFailure::not_allowed:
    case DialFailure::refused: return socks::not_allowed;
    case DialFailure::unresolved: return socks::host_unreachable;
    case DialFailure::unreachable: break;
  }
  switch (why.error) {
    case ECONNREFUSED: return socks::connection_refused;
    case ENETUNREACH: return socks::network_unreachable;
    case EHOSTUNREACH:
    case ETIMEDOUT:
    case EINPROGRESS: return socks::host_unreachable;  // SO_SNDTIMEO's connect timeout
    default: return socks::general_failure;
  }
}

void send_reply(int client, socks::Reply code) {
  const std::string r = socks::reply(code);
  write_all(client, r.data(), r.size());
}

}  // namespace

void Proxy::handle_socks(int client) {
  // The greeting and the request within 10 s, as an HTTP request head.
  timeval tv{10, 0};
  ::setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string in;
  size_t used = 0;
  bool no_auth = false;
  if (receive(client, in, [&](const std::string& s) { return socks::parse_greeting(s, used, no_auth); }) !=
      socks::Parse::done)
    return forget(client);
  const std::string method = socks::method_reply(no_auth);
  if (!write_all(client, method.data(), method.size()) || !no_auth) return forget(client);
  in.erase(0, used);
  socks::Request req;
  socks::Parse p = receive(client, in, [&](const std::string& s) { return socks::parse_request(s, used, req); });
  if (p == socks::Parse::more || (p == socks::Parse::bad && req.refusal == socks::succeeded)) return forget(client);
  if (req.refusal != socks::succeeded) {
    send_reply(client, req.refusal);
    return forget(client);
  }
  tv = {0, 0};
  ::setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  DialFailure why;
  int upstream = open_upstream(req.host, req.port, why);
  if (upstream < 0) {
    send_reply(client, refusal(why));
    return forget(client);
  }
  tunnel(client, upstream, socks::reply(socks::succeeded), in.substr(used));
}

}  // namespace husk::rt
