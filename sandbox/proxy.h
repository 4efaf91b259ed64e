// husk sandbox --allow-host: an HTTP/HTTPS proxy and a SOCKS5 one outside
// the sandbox, whose listening sockets live in the sandbox's network
// namespace (its only way out). CONNECT and absolute-URI requests, and SOCKS5
// CONNECTs, reach the allowed hosts only.
#pragma once

#include <sys/socket.h>
#include <sys/types.h>

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/fd.h"
#include "sandbox/resolver.h"

namespace husk::rt {

// One --allow-host: NAME or *.SUFFIX (case-insensitive), any port when absent.
struct AllowedHost {
  std::string name;
  std::optional<uint16_t> port;
  bool denied = false;  // a --deny-host: refused even where an allowed one matches
};
// "NAME[:PORT]", "[V6]:PORT"; errors name the flag.
AllowedHost parse_allowed_host(const std::string& text);
// An allowed entry matches, no denied one does.
bool host_allowed(const std::vector<AllowedHost>& allowed, const std::string& host, uint16_t port);
// "host:port", "[v6]:port": a destination as messages name it.
std::string host_port(const std::string& host, uint16_t port);

// The request head of a proxy client, parsed. `forward` is what goes to the
// upstream (the request line in origin form, the rest as sent); empty for CONNECT.
struct ProxyRequest {
  bool connect = false;
  std::string host;
  uint16_t port = 0;
  std::string forward;
};
// Connection, Proxy-Connection and Keep-Alive headers are dropped and
// "Connection: close" added; a Host header naming another host is refused.
// Throws Error with the reason (a 400 for the client).
ProxyRequest parse_proxy_request(const std::string& head);

// What a resolved address is to the host the proxy runs on.
enum class AddressKind {
  outside,
  host_local,   // loopback, link-local (cloud metadata), unspecified, multicast
  host_own,     // one of the host's interface addresses (its LAN address, docker0's)
  private_net,  // 10/8, 172.16/12, 192.168/16, 100.64/10 (shared CGN), fc00::/7
};
// `own`: the host's interface addresses; a v4-mapped v6 address counts as its v4 one.
AddressKind classify_address(const sockaddr* a, const std::vector<sockaddr_storage>& own);
// host_local and host_own need --allow-host-loopback (the host's services
// listening on 0.0.0.0 answer on every one), private_net --allow-host-private.
bool address_allowed(AddressKind k, bool local_ok, bool private_ok);

// The port the sandbox's programs find the HTTP proxy on (HTTP_PROXY); the
// SOCKS5 one is on socks::kPort (ALL_PROXY).
constexpr uint16_t kProxyPort = 3128;
// NO_PROXY in the sandbox: its loopback names, reached directly (servers the
// command runs there), but for those --allow-host names with
// --allow-host-loopback: they mean the host's, through the proxy.
std::string no_proxy_list(const std::vector<std::string>& allow_hosts, bool local_ok);

// A listening socket on 127.0.0.1:port for each of `ports`, in the network
// namespace of `init` (joined through its user namespace, from a child: the
// init must still be dumpable, see InitRequest::on_init_open), with lo brought up.
std::vector<base::Fd> listen_in_sandbox(pid_t init, const std::vector<uint16_t>& ports);

// Why Proxy::open_upstream has no connection for the client.
struct DialFailure {
  enum { not_allowed, unresolved, refused, unreachable } kind = unreachable;
  AddressKind refused_kind = AddressKind::outside;  // the last address refused
  dns::Resolved resolved;                           // for unresolved: the resolver's failure
  int error = 0;                                    // for unreachable: connect's errno
};

// A connection the proxy refused, for --report: the name and port asked and
// the rule: "not-allowed" (no allowed host matches), "loopback" or "private"
// (it resolves to the host's own or a private network's addresses only),
// "unresolved" (`detail`: the resolver's error).
struct ProxyRefusal {
  std::string name;
  uint16_t port = 0;
  std::string rule, detail;
};
using RefusalHook = std::function<void(const ProxyRefusal&)>;

class Proxy {
 public:
  // local_ok: allowed names may resolve to the host's own addresses
  // (loopback, link-local, its interfaces'); private_ok: to private
  // networks' (see address_allowed). Else such a destination is refused.
  // `socks`: the SOCKS5 listener; `refused` is told of each refusal, from the connection's thread.
  Proxy(base::Fd listener, base::Fd socks, std::vector<AllowedHost> allowed, bool local_ok, bool private_ok,
        RefusalHook refused = {});
  ~Proxy();  // stops serving; connections in flight are cut
  // One more allowed host while it runs (--control-fd); for connections from now on.
  void allow(AllowedHost host);
  bool allows(const std::string& host, uint16_t port) const;
  // "name:port (n)" for each destination refused, in the order first seen.
  std::vector<std::string> denied() const { return listed(denied_); }
  // "name:port: the resolver's error (n)" for each name not resolved.
  std::vector<std::string> unresolved() const { return listed(unresolved_); }

 private:
  using Tally = std::vector<std::pair<std::string, int>>;
  static constexpr size_t kTallied = 100;  // distinct destinations named in a summary
  static constexpr const char* kOthers = "other destinations";
  void serve();
  void handle(int client);
  void handle_socks(int client);  // socks_serve.cpp
  // The one place both proxies judge a destination and reach it: a socket
  // (tracked in open_), or -1 with `why`, the refusal counted.
  int open_upstream(const std::string& host, uint16_t port, DialFailure& why);
  void fail(int client, const std::string& what, const DialFailure& why);
  // Relays between the client and the upstream, after `to_client` and
  // `to_upstream`; both closed at the end.
  void tunnel(int client, int upstream, const std::string& to_client, const std::string& to_upstream);
  void forget(int fd);  // closes a socket of open_
  std::vector<std::string> listed(const Tally& tally) const;
  void note(Tally& tally, const std::string& what);
  void refuse(Tally& tally, const std::string& what, const ProxyRefusal& r);

  base::Fd listener_, socks_, stop_read_, stop_write_;
  std::vector<AllowedHost> allowed_;  // under mu_: --control-fd adds to it
  bool local_ok_, private_ok_;
  RefusalHook refused_;
  mutable std::mutex mu_;
  std::condition_variable idle_;
  int active_ = 0;  // connection threads (detached) still running
  Tally denied_, unresolved_;
  std::vector<int> open_;  // client and upstream sockets, shut down at stop
  std::thread server_;
};

}  // namespace husk::rt
