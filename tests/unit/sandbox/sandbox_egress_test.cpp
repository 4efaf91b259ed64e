// --allow-host beyond HTTP: the SOCKS5 side's parsing (hostile clients
// included), `husk connect`'s request and messages, the proxy variables,
// the relay between two ends.
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>
#include <thread>

#include "sandbox/connect.h"
#include "sandbox/egress.h"
#include "sandbox/relay.h"
#include "sandbox/socks.h"

using namespace husk::rt;
using namespace std::string_literals;
using Catch::Contains;
using socks::Parse;

namespace {

// A domain-name request: VER CMD RSV ATYP(3) LEN NAME PORT.
std::string named(const std::string& name, uint16_t port = 22, char command = 1) {
  return "\x05"s + command + '\0' + '\x03' + static_cast<char>(name.size()) + name + static_cast<char>(port >> 8) +
         static_cast<char>(port & 0xff);
}

Parse request(const std::string& in, socks::Request& r, size_t& used) { return socks::parse_request(in, used, r); }

}  // namespace

TEST_CASE("socks: the greeting: method 0 or none acceptable; short and bad ones", "[sandbox][socks]") {
  size_t used = 0;
  bool no_auth = false;
  CHECK(socks::parse_greeting("", used, no_auth) == Parse::more);
  CHECK(socks::parse_greeting("\x05", used, no_auth) == Parse::more);
  CHECK(socks::parse_greeting("\x05\x02\x02", used, no_auth) == Parse::more);  // one of two methods
  REQUIRE(socks::parse_greeting("\x05\x02\x02\x00rest"s, used, no_auth) == Parse::done);
  CHECK(used == 4);
  CHECK(no_auth);
  REQUIRE(socks::parse_greeting("\x05\x01\x02", used, no_auth) == Parse::done);  // username/password only
  CHECK_FALSE(no_auth);
  CHECK(socks::method_reply(false) == "\x05\xff"s);
  CHECK(socks::method_reply(true) == "\x05\x00"s);
  CHECK(socks::parse_greeting("\x04\x01\x00\x16"s, used, no_auth) == Parse::bad);  // SOCKS4
  CHECK(socks::parse_greeting("GET / HTTP/1.1\r\n", used, no_auth) == Parse::bad);
  CHECK(socks::parse_greeting("\x05\x00"s, used, no_auth) == Parse::bad);  // no method
  // 255 methods, each byte counted: method 0 last.
  std::string many = "\x05\xff"s + std::string(254, '\x01') + '\0';
  REQUIRE(socks::parse_greeting(many, used, no_auth) == Parse::done);
  CHECK(used == 257);
  CHECK(no_auth);
}

TEST_CASE("socks: CONNECT requests by name, IPv4 and IPv6", "[sandbox][socks]") {
  socks::Request r;
  size_t used = 0;
  REQUIRE(request(named("Git.Example.TEST", 2222) + "early", r, used) == Parse::done);
  CHECK(used == 5 + 16 + 2);
  CHECK(r.refusal == socks::succeeded);
  CHECK(r.host == "git.example.test");  // lower case, as --allow-host is matched
  CHECK(r.port == 2222);
  REQUIRE(request("\x05\x01\x00\x01\x7f\x00\x00\x01\x01\xbb"s, r, used) == Parse::done);
  CHECK(r.host == "127.0.0.1");
  CHECK(r.port == 443);
  std::string six = "\x05\x01\x00\x04"s + std::string(15, '\0') + '\x01' + "\x00\x50"s;
  REQUIRE(request(six, r, used) == Parse::done);
  CHECK(r.host == "::1");  // as the HTTP side has "[::1]:80"
  CHECK(r.port == 80);
  CHECK(socks::reply(socks::not_allowed) == "\x05\x02\x00\x01\x00\x00\x00\x00\x00\x00"s);
}

TEST_CASE("socks: short reads: every prefix of a request asks for more", "[sandbox][socks]") {
  for (const std::string& whole :
       {named("a.test"), named(std::string(255, 'a')), "\x05\x01\x00\x01\x7f\x00\x00\x01\x01\xbb"s}) {
    socks::Request r;
    size_t used = 0;
    for (size_t n = 0; n < whole.size(); ++n) {
      INFO(n);
      CHECK(request(whole.substr(0, n), r, used) == Parse::more);
    }
    CHECK(request(whole, r, used) == Parse::done);
    CHECK(used == whole.size());
  }
}

TEST_CASE("socks: hostile requests are refused with their reply code", "[sandbox][socks]") {
  socks::Request r;
  size_t used = 0;
  // A NUL would end the name for the resolver: "allowed.test" asked, "allowed.test\0.evil" judged.
  REQUIRE(request(named("allowed.test\0.evil"s), r, used) == Parse::done);
  CHECK(r.refusal == socks::general_failure);
  for (const char* bad : {"a b", "a\r\nb", "a/b", "a@b", "", "a\xff"}) {
    INFO(bad);
    REQUIRE(request(named(bad), r, used) == Parse::done);
    CHECK(r.refusal == socks::general_failure);
  }
  // The longest name the length byte can say: parsed whole, judged by --allow-host later.
  REQUIRE(request(named(std::string(255, 'a')), r, used) == Parse::done);
  CHECK(r.refusal == socks::succeeded);
  CHECK(r.host.size() == 255);
  CHECK(used == 5 + 255 + 2);
  REQUIRE(request(named("a.test", 0), r, used) == Parse::done);
  CHECK(r.refusal == socks::general_failure);  // port 0
  // BIND and UDP ASSOCIATE: not served, said as such.
  for (char command : {'\x02', '\x03', '\x09'}) {
    REQUIRE(request(named("a.test", 53, command), r, used) == Parse::done);
    CHECK(r.refusal == socks::command_not_supported);
  }
  // An unknown address type: its length unknown, nothing after it is read.
  CHECK(request("\x05\x01\x00\x05\x01\x02\x03"s, r, used) == Parse::bad);
  CHECK(r.refusal == socks::address_type_not_supported);
  CHECK(request("\x04\x01\x00\x16\x7f\x00\x00\x01"s, r, used) == Parse::bad);  // SOCKS4
  CHECK(r.refusal == socks::general_failure);
  CHECK(request("\x05\x01\x01\x01\x7f\x00\x00\x01\x00\x16"s, r, used) == Parse::bad);  // RSV not 0
  CHECK(request("\x06"s, r, used) == Parse::bad);
}

TEST_CASE("connect: the CONNECT request and what a refusal says", "[sandbox][connect]") {
  CHECK(connect_head("git.test", "22") == "CONNECT git.test:22 HTTP/1.1\r\nHost: git.test:22\r\n\r\n");
  CHECK(connect_head("::1", "22") == "CONNECT [::1]:22 HTTP/1.1\r\nHost: [::1]:22\r\n\r\n");
  REQUIRE_THROWS_WITH(connect_head("a\r\nHost: b", "22"), Contains("not a host name"));
  REQUIRE_THROWS_WITH(connect_head("a b", "22"), Contains("husk connect: a b:22: not a host name"));
  REQUIRE_THROWS_WITH(connect_head("", "22"), Contains("not a host name"));
  REQUIRE_THROWS_WITH(connect_head("a", "99999"), Contains("husk connect: a:99999: port"));
  REQUIRE_THROWS_WITH(connect_head("a", "0"), Contains("port 0"));
  REQUIRE_THROWS_WITH(connect_head("a", "x"), Contains("port"));
  CHECK(connect_refusal("a:22", "HTTP/1.1 200 Connection established\r\n\r\n", "") == "");
  CHECK(connect_refusal("evil.test:22", "HTTP/1.1 403 Forbidden\r\n\r\n",
                        "husk sandbox: evil.test:22 is not in --allow-host\n") ==
        "husk connect: evil.test:22: refused by the sandbox's proxy (not an allowed host)");
  CHECK(connect_refusal("no.test:22", "HTTP/1.1 502 Bad Gateway\r\n\r\n",
                        "husk sandbox: cannot resolve no.test:22: no such name (NXDOMAIN)\n") ==
        "husk connect: no.test:22: the sandbox's proxy answered 502 Bad Gateway: cannot resolve no.test:22: no "
        "such name (NXDOMAIN)");
  // What the proxy sends is printed, not obeyed.
  CHECK(connect_refusal("a:22", "HTTP/1.1 502 \x1b[2J\r\n\r\n", "\x1b]0;x\x07\n") ==
        R"(husk connect: a:22: the sandbox's proxy answered 502 \x1b[2J: \x1b]0;x\x07)");
}

TEST_CASE("egress: the proxy variables the usual clients read", "[sandbox][egress]") {
  SandboxOptions o;
  o.allow_hosts = {"git.test:22"};
  std::map<std::string, std::string> env;
  proxy_environment(env, o, true);
  for (const char* k : {"HTTP_PROXY", "https_proxy", "grpc_proxy", "npm_config_proxy", "npm_config_https_proxy"})
    CHECK(env[k] == "http://127.0.0.1:3128");
  // Not socks5h://: httpx refuses it (or needs socksio) for every client it makes.
  CHECK(env["ALL_PROXY"] == "http://127.0.0.1:3128");
  CHECK(env["all_proxy"] == "http://127.0.0.1:3128");
  CHECK(env["RSYNC_PROXY"] == "127.0.0.1:3128");
  CHECK(env["no_proxy"] == "localhost,127.0.0.1,::1");
  CHECK(env["JAVA_TOOL_OPTIONS"] ==
        "-Dhttp.proxyHost=127.0.0.1 -Dhttp.proxyPort=3128 -Dhttps.proxyHost=127.0.0.1 -Dhttps.proxyPort=3128 "
        "-Dhttp.nonProxyHosts=localhost|127.0.0.1|[::1]");
  CHECK(env["GIT_SSH_COMMAND"] == "ssh -o 'ProxyCommand /run/husk/husk connect %h %p'");

  // The user's own JAVA_TOOL_OPTIONS and ssh command stay; no husk inside, no GIT_SSH_COMMAND.
  env = {{"JAVA_TOOL_OPTIONS", "-Xmx1g"}, {"GIT_SSH", "/usr/bin/my-ssh"}};
  proxy_environment(env, o, true);
  CHECK_THAT(env["JAVA_TOOL_OPTIONS"], Catch::StartsWith("-Xmx1g -Dhttp.proxyHost=127.0.0.1 "));
  CHECK_FALSE(env.count("GIT_SSH_COMMAND"));
  env = {{"GIT_SSH_COMMAND", "ssh -i key"}};
  proxy_environment(env, o, true);
  CHECK(env["GIT_SSH_COMMAND"] == "ssh -i key");
  env.clear();
  proxy_environment(env, o, false);
  CHECK_FALSE(env.count("GIT_SSH_COMMAND"));
  // A loopback name allowed with --allow-host-loopback goes through the proxy, for the JVM too.
  o.allow_hosts = {"localhost:8080"};
  o.allow_host_loopback = true;
  env.clear();
  proxy_environment(env, o, true);
  CHECK_THAT(env["JAVA_TOOL_OPTIONS"], Catch::EndsWith("-Dhttp.nonProxyHosts=127.0.0.1|[::1]"));
  // Every loopback name allowed: an empty list, not the JVM's default (which bypasses them).
  o.allow_hosts = {"localhost", "127.0.0.1", "[::1]"};
  env.clear();
  proxy_environment(env, o, true);
  CHECK_THAT(env["JAVA_TOOL_OPTIONS"], Catch::EndsWith(" -Dhttp.nonProxyHosts="));
}

namespace {

std::string read_to_end(int fd) {
  std::string out;
  char buf[256];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  return out;
}

}  // namespace

// A half close is passed on: the upstream still answers after the client's
// end of the request, as ssh and HTTP/1.0 clients do.
TEST_CASE("relay: half closes pass on, both ways, until both ends close", "[sandbox][egress]") {
  int client[2], upstream[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, client) == 0);
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, upstream) == 0);
  std::thread t([&] { relay(client[1], upstream[1]); });
  REQUIRE(::write(client[0], "request", 7) == 7);
  ::shutdown(client[0], SHUT_WR);
  CHECK(read_to_end(upstream[0]) == "request");  // EOF seen: the half close came through
  REQUIRE(::write(upstream[0], "answer", 6) == 6);
  ::shutdown(upstream[0], SHUT_WR);
  CHECK(read_to_end(client[0]) == "answer");
  t.join();
  for (int fd : {client[0], client[1], upstream[0], upstream[1]}) ::close(fd);
}

// husk connect: the socket's bytes to one pipe (stdout), another's (stdin) to it.
TEST_CASE("relay: a socket against a pair of pipes", "[sandbox][egress]") {
  int sock[2], in[2], out[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sock) == 0);
  REQUIRE(::pipe2(in, O_CLOEXEC) == 0);
  REQUIRE(::pipe2(out, O_CLOEXEC) == 0);
  std::thread t([&] { relay(sock[1], in[0], out[1]); });
  REQUIRE(::write(in[1], "from stdin", 10) == 10);
  ::close(in[1]);
  CHECK(read_to_end(sock[0]) == "from stdin");
  REQUIRE(::write(sock[0], "to stdout", 9) == 9);
  ::shutdown(sock[0], SHUT_WR);
  CHECK(read_to_end(out[0]) == "to stdout");  // EOF: relay closed the write end
  t.join();
  for (int fd : {sock[0], sock[1], in[0], out[0]}) ::close(fd);
}
