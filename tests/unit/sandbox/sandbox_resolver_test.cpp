// The --allow-host proxy's resolver: resolv.conf and hosts text, DNS
// messages (hostile ones too), and resolve() against a fake name server on
// loopback.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <functional>
#include <thread>

#include "base/error.h"
#include "sandbox/proxy.h"
#include "sandbox/resolver.h"

using namespace husk::rt;
using namespace husk::rt::dns;
using Catch::Contains;

namespace {

std::string text_of(const sockaddr_storage& s) {
  char buf[INET6_ADDRSTRLEN] = "";
  if (s.ss_family == AF_INET) ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&s)->sin_addr, buf, sizeof buf);
  if (s.ss_family == AF_INET6)
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&s)->sin6_addr, buf, sizeof buf);
  return buf;
}
std::vector<std::string> texts(const std::vector<sockaddr_storage>& v) {
  std::vector<std::string> out;
  for (const auto& s : v) out.push_back(text_of(s));
  return out;
}
uint16_t port_of(const sockaddr_storage& s) {
  return ntohs(s.ss_family == AF_INET ? reinterpret_cast<const sockaddr_in*>(&s)->sin_port
                                      : reinterpret_cast<const sockaddr_in6*>(&s)->sin6_port);
}

// The reply to `query`: its header with QR, `rcode`, `answers` records, the question, `records`.
std::string reply_to(const std::string& query, int rcode, int answers, const std::string& records, int more = 0) {
  std::string r = query;
  r[2] = static_cast<char>(0x81 | more);
  r[3] = static_cast<char>(0x80 | rcode);
  r[7] = static_cast<char>(answers);
  return r + records;
}
// A record of `type` named by a pointer to the question's name.
std::string record(uint16_t type, const std::string& data) {
  std::string r = {'\xc0', 12, static_cast<char>(type >> 8), static_cast<char>(type), 0, 1, 0, 0, 0, 60, 0,
                   static_cast<char>(data.size())};
  return r + data;
}
const std::string k127_0_0_2 = {127, 0, 0, 2};

}  // namespace

TEST_CASE("resolver: resolv.conf", "[sandbox][resolver]") {
  ResolvConf c = parse_resolv_conf(
      "# comment\n; another\nnameserver 192.0.2.1\nnameserver  2001:db8::1 # here\nnameserver not-an-address\n"
      "nameserver 192.0.2.2\nnameserver 192.0.2.3\nsearch a.example B.example.\ndomain c.example\n"
      "options ndots:3 timeout:99 attempts:0 rotate\n");
  CHECK(texts(c.servers) == std::vector<std::string>{"192.0.2.1", "2001:db8::1", "192.0.2.2"});  // three at most
  CHECK(port_of(c.servers[1]) == 53);
  CHECK(c.search == std::vector<std::string>{"c.example"});  // the last search/domain line applies
  CHECK(c.timeout == 30);
  CHECK(c.attempts == 1);
  c = parse_resolv_conf("search a.example b.example\n");
  CHECK(texts(c.servers) == std::vector<std::string>{"127.0.0.1"});
  CHECK(c.search == std::vector<std::string>{"a.example", "b.example"});
  CHECK((c.timeout == 5 && c.attempts == 2));
}

TEST_CASE("resolver: hosts file", "[sandbox][resolver]") {
  const std::string hosts =
      "127.0.0.1 localhost\n::1 localhost ip6-localhost\n10.0.0.1 Box box.lan # comment 10.0.0.9 other\n"
      "nonsense allowed.test\n10.0.0.2\tallowed.test.evil\n10.0.0.3 allowed.test # allowed.test\n";
  CHECK(texts(hosts_lookup(hosts, "localhost")) == std::vector<std::string>{"127.0.0.1", "::1"});
  CHECK(texts(hosts_lookup(hosts, "BOX.lan")) == std::vector<std::string>{"10.0.0.1"});
  CHECK(hosts_lookup(hosts, "other").empty());  // in a comment
  CHECK(texts(hosts_lookup(hosts, "allowed.test")) == std::vector<std::string>{"10.0.0.3"});
  CHECK(hosts_lookup(hosts, "nonsense").empty());
}

TEST_CASE("resolver: search domains", "[sandbox][resolver]") {
  ResolvConf c = parse_resolv_conf("search a.example b.example\n");
  CHECK(candidates("host", c) == std::vector<std::string>{"host.a.example", "host.b.example", "host"});
  CHECK(candidates("host.", c) == std::vector<std::string>{"host"});
  // A name with a dot is judged as written: never with a search domain,
  // even where ndots (Kubernetes' 5) would try one first.
  CHECK(candidates("pypi.org", c) == std::vector<std::string>{"pypi.org"});
  CHECK(candidates("foo.example.com", c) == std::vector<std::string>{"foo.example.com"});
}

TEST_CASE("resolver: queries", "[sandbox][resolver]") {
  const std::string want = {0x12, 0x34, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 3, 'w', 'w', 'w', 2, 'e', 'x', 0, 0, 28, 0, 1};
  CHECK(build_query(0x1234, "www.ex", kTypeAAAA) == want);
  REQUIRE_THROWS_WITH(build_query(1, "a..b", kTypeA), Contains("a label of 0 bytes"));
  REQUIRE_THROWS_WITH(build_query(1, std::string(64, 'a') + ".b", kTypeA), Contains("a label of 64 bytes"));
  REQUIRE_THROWS_WITH(build_query(1, std::string(254, 'a'), kTypeA), Contains("a name of 254 bytes"));
  REQUIRE_THROWS(build_query(1, "", kTypeA));
}

TEST_CASE("resolver: answers", "[sandbox][resolver]") {
  const std::string q = build_query(7, "dns.test", kTypeA);
  Answer a = parse_answer(reply_to(q, 0, 1, record(kTypeA, k127_0_0_2)), 7, "DNS.test.", kTypeA);
  CHECK(a.rcode == 0);
  CHECK(texts(a.addresses) == std::vector<std::string>{"127.0.0.2"});
  // A CNAME, then the A record named by a pointer into the CNAME's data.
  const std::string target = "\x03www\x02tg";
  std::string cname = record(5, std::string(target.data(), target.size() + 1));
  const char into = static_cast<char>(q.size() + 12);
  std::string chained = std::string{'\xc0', into} + record(kTypeA, k127_0_0_2).substr(2);
  a = parse_answer(reply_to(q, 0, 2, cname + chained), 7, "dns.test", kTypeA);
  CHECK(texts(a.addresses) == std::vector<std::string>{"127.0.0.2"});
  const std::string six = build_query(8, "dns.test", kTypeAAAA);
  a = parse_answer(reply_to(six, 0, 1, record(kTypeAAAA, std::string("\x20\x01\x0d\xb8", 4) + std::string(11, '\0') + "\x01")),
                   8, "dns.test", kTypeAAAA);
  CHECK(texts(a.addresses) == std::vector<std::string>{"2001:db8::1"});
  CHECK(parse_answer(reply_to(q, 3, 0, ""), 7, "dns.test", kTypeA).rcode == 3);
  a = parse_answer(reply_to(q, 0, 0, "", 2), 7, "dns.test", kTypeA);
  CHECK((a.truncated && a.addresses.empty()));
  // An error without the question is taken; an answer without it is not.
  std::string bare = reply_to(q.substr(0, 12), 5, 0, "");
  bare[5] = 0;
  CHECK(parse_answer(bare, 7, "dns.test", kTypeA).rcode == 5);
  bare[3] = static_cast<char>(0x80);
  REQUIRE_THROWS_WITH(parse_answer(bare, 7, "dns.test", kTypeA), Contains("0 questions"));
}

// Replies from the network are hostile: none reads outside the message or loops.
TEST_CASE("resolver: malformed and foreign answers are refused", "[sandbox][resolver]") {
  const std::string q = build_query(7, "dns.test", kTypeA);
  const std::string good = reply_to(q, 0, 1, record(kTypeA, k127_0_0_2));
  REQUIRE_THROWS_WITH(parse_answer(good, 8, "dns.test", kTypeA), Contains("another query's id"));
  REQUIRE_THROWS_WITH(parse_answer(good, 7, "other.test", kTypeA), Contains("another question"));
  REQUIRE_THROWS_WITH(parse_answer(good, 7, "dns.test", kTypeAAAA), Contains("another question"));
  REQUIRE_THROWS_WITH(parse_answer(q, 7, "dns.test", kTypeA), Contains("not an answer"));  // the query itself
  for (size_t cut = 0; cut < good.size(); ++cut)
    REQUIRE_THROWS_WITH(parse_answer(good.substr(0, cut), 7, "dns.test", kTypeA), Contains("DNS answer"));
  // A pointer to itself, one forwards, a name past the end.
  std::string self = reply_to(q, 0, 1, record(kTypeA, k127_0_0_2));
  self[q.size()] = '\xc0';
  self[q.size() + 1] = static_cast<char>(q.size());
  REQUIRE_THROWS_WITH(parse_answer(self, 7, "dns.test", kTypeA), Contains("does not point back"));
  std::string forward = good;
  forward[q.size() + 1] = static_cast<char>(q.size() + 2);
  REQUIRE_THROWS_WITH(parse_answer(forward, 7, "dns.test", kTypeA), Contains("does not point back"));
  std::string loop = q;  // the question's name: a label, then a pointer back to that label
  loop.resize(12 + 4);
  loop += {'\xc0', 12, 0, 1, 0, 1};
  loop[2] = static_cast<char>(0x81);
  loop[3] = static_cast<char>(0x80);
  REQUIRE_THROWS_WITH(parse_answer(loop, 7, "dns.test", kTypeA), Contains("DNS answer"));
  std::string long_label = good;
  long_label[q.size() + 12 - 1] = 64;  // rdlength past the end
  REQUIRE_THROWS_WITH(parse_answer(long_label, 7, "dns.test", kTypeA), Contains("cut short"));
  REQUIRE_THROWS_WITH(parse_answer(reply_to(q, 0, 1, record(kTypeA, std::string("\x7f\0\0\x02\x05", 5))), 7, "dns.test", kTypeA),
                      Contains("an address record of 5 bytes"));
  std::string label_type = good;
  label_type[q.size()] = '\x40';
  REQUIRE_THROWS_WITH(parse_answer(label_type, 7, "dns.test", kTypeA), Contains("label type"));
}

TEST_CASE("resolver: what each failure says", "[sandbox][resolver]") {
  CHECK(describe(Failure::not_found, 3) == "no such name (NXDOMAIN)");
  CHECK(describe(Failure::server_failure, 2) == "the name server failed (SERVFAIL)");
  CHECK(describe(Failure::server_failure, 5) == "the name server refused the query (REFUSED)");
  CHECK(describe(Failure::server_failure, 4) == "the name server answered with error 4");
  CHECK(describe(Failure::timeout, 0) == "no answer from the name servers of /etc/resolv.conf (timeout)");
}

namespace {

// A name server on 127.0.0.1 (UDP, and TCP on the same port): `answer`
// gives the datagrams for each UDP query, `tcp` the TCP answer.
struct FakeServer {
  int udp = -1, tcp = -1;
  std::function<std::vector<std::string>(const std::string&)> answer;
  std::function<std::string(const std::string&)> over_tcp;
  int stop[2] = {-1, -1};
  std::thread thread;
  ResolvConf conf;

  FakeServer() {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    udp = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    tcp = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(::bind(udp, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(::getsockname(udp, reinterpret_cast<sockaddr*>(&a), &len) == 0);
    REQUIRE(::bind(tcp, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(::listen(tcp, 4) == 0);
    REQUIRE(::pipe2(stop, O_CLOEXEC) == 0);
    conf.servers.resize(1);
    std::memcpy(&conf.servers[0], &a, sizeof a);
    conf.timeout = 1;
    conf.attempts = 1;
  }
  void start() { thread = std::thread([this] { serve(); }); }
  void serve() {
    for (;;) {
      pollfd p[3] = {{udp, POLLIN, 0}, {tcp, POLLIN, 0}, {stop[0], POLLIN, 0}};
      if (::poll(p, 3, -1) <= 0 || p[2].revents) return;
      char buf[1024];
      if (p[0].revents) {
        sockaddr_in from{};
        socklen_t len = sizeof from;
        ssize_t n = ::recvfrom(udp, buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&from), &len);
        if (n > 0)
          for (const auto& d : answer(std::string(buf, static_cast<size_t>(n))))
            ::sendto(udp, d.data(), d.size(), 0, reinterpret_cast<sockaddr*>(&from), len);
      }
      if (p[1].revents) {
        int c = ::accept4(tcp, nullptr, nullptr, SOCK_CLOEXEC);
        unsigned char l[2];
        if (c >= 0 && ::recv(c, l, 2, MSG_WAITALL) == 2) {
          std::string q(static_cast<size_t>(l[0] << 8 | l[1]), '\0');
          if (::recv(c, q.data(), q.size(), MSG_WAITALL) == static_cast<ssize_t>(q.size())) {
            std::string r = over_tcp(q);
            std::string framed = {static_cast<char>(r.size() >> 8), static_cast<char>(r.size())};
            framed += r;
            ::send(c, framed.data(), framed.size(), MSG_NOSIGNAL);
          }
        }
        if (c >= 0) ::close(c);
      }
    }
  }
  ~FakeServer() {
    if (::write(stop[1], "x", 1) < 0) {
    }
    if (thread.joinable()) thread.join();
    for (int fd : {udp, tcp, stop[0], stop[1]}) ::close(fd);
  }
};

uint16_t type_of(const std::string& query) {
  return static_cast<uint16_t>(static_cast<uint8_t>(query[query.size() - 4]) << 8 | static_cast<uint8_t>(query[query.size() - 3]));
}

}  // namespace

TEST_CASE("resolver: resolve() over UDP, TCP when truncated, spoofed answers ignored", "[sandbox][resolver]") {
  FakeServer s;
  int asked = 0;
  s.answer = [&](const std::string& q) -> std::vector<std::string> {
    ++asked;
    std::string spoofed = reply_to(q, 0, 1, record(kTypeA, std::string{1, 2, 3, 4}));
    spoofed[1] = static_cast<char>(spoofed[1] ^ 1);  // another id: ignored
    if (q.find("\x03""big") != std::string::npos) return {spoofed, reply_to(q, 0, 0, "", 2)};
    if (q.find("\x06nosuch") != std::string::npos) return {reply_to(q, 3, 0, "")};
    if (q.find("\x04slow") != std::string::npos) return {};
    if (type_of(q) == kTypeAAAA) return {reply_to(q, 0, 0, "")};
    return {spoofed, reply_to(q, 0, 1, record(kTypeA, k127_0_0_2))};
  };
  s.over_tcp = [&](const std::string& q) {
    return type_of(q) == kTypeA ? reply_to(q, 0, 1, record(kTypeA, std::string{127, 0, 0, 3})) : reply_to(q, 0, 0, "");
  };
  s.start();
  Resolved r = resolve("dns.test", s.conf, "");
  CHECK(r.failure == Failure::none);
  CHECK(texts(r.addresses) == std::vector<std::string>{"127.0.0.2"});
  CHECK(asked == 2);  // A and AAAA
  r = resolve("big.test", s.conf, "");
  CHECK(texts(r.addresses) == std::vector<std::string>{"127.0.0.3"});
  CHECK(resolve("nosuch.test", s.conf, "").failure == Failure::not_found);
  CHECK(resolve("slow.test", s.conf, "").failure == Failure::timeout);
  // The hosts file first, address literals as they are, localhost without a hosts file.
  asked = 0;
  CHECK(texts(resolve("dns.test", s.conf, "10.0.0.1 dns.test\n").addresses) == std::vector<std::string>{"10.0.0.1"});
  CHECK(texts(resolve("::1", s.conf, "").addresses) == std::vector<std::string>{"::1"});
  CHECK(texts(resolve("a.localhost", s.conf, "").addresses) == std::vector<std::string>{"127.0.0.1", "::1"});
  CHECK(asked == 0);
  // A name that cannot be asked (from the sandbox: "a..b", too long) has no address.
  CHECK(resolve("a..b", s.conf, "").failure == Failure::not_found);
  CHECK(resolve(std::string(300, 'a'), s.conf, "").failure == Failure::not_found);
}

TEST_CASE("resolver: no name server there", "[sandbox][resolver]") {
  ResolvConf conf;
  {
    FakeServer gone;  // its port, closed again: nothing listens there
    conf = gone.conf;
  }
  CHECK(resolve("dns.test", conf, "").failure == Failure::unreachable);
}

TEST_CASE("proxy: NO_PROXY keeps loopback names unless allowed with --allow-host-loopback", "[sandbox][proxy]") {
  CHECK(no_proxy_list({"pypi.org"}, true) == "localhost,127.0.0.1,::1");
  CHECK(no_proxy_list({"LOCALHOST:8080"}, false) == "localhost,127.0.0.1,::1");
  CHECK(no_proxy_list({"localhost:8080", "[::1]:80"}, true) == "127.0.0.1");
  CHECK(no_proxy_list({"localhost", "127.0.0.1", "[::1]"}, true).empty());
}
