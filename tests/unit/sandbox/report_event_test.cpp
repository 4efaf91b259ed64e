// --report's events and --control-fd's lines (report_event.h, pure), and the report's fd (report.h).
#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "sandbox/report.h"
#include "sandbox/report_event.h"

using namespace husk::rt;
using Catch::Contains;
namespace report = husk::rt::report;

namespace {
const timespec kWhen{1796547296, 123456789};  // 2026-12-06T08:54:56.123Z

report::ojson parsed(const std::string& line) {
  REQUIRE(!line.empty());
  CHECK(line.back() == '\n');
  CHECK(line.find('\n') == line.size() - 1);  // one line, whatever the fields hold
  return report::ojson::parse(line);
}
}  // namespace

TEST_CASE("report: every line carries its type, time and sandbox first", "[sandbox][report]") {
  report::ojson e = parsed(report::line("exit", kWhen, "sandbox-42", report::exit(0, 1.23456)));
  CHECK(e.dump() ==
        R"({"type":"exit","time":"2026-12-06T08:54:56.123Z","sandbox":"sandbox-42","status":0,"seconds":1.234})");
}

TEST_CASE("report: hostile bytes stay one line of valid JSON", "[sandbox][report]") {
  // A path's bytes: a newline, a control character, bytes that are not UTF-8.
  report::ojson f = {{"path", std::string("a\nb\x1b[2J\xff\xfe", 9)}};
  report::ojson e = parsed(report::line("start", kWhen, "sandbox-1", f));
  CHECK(e["path"] == "a\nb\x1b[2J\xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST_CASE("report: a refusal names the host, the port and the rule", "[sandbox][report]") {
  CHECK(report::refused({"denied.test", 443, "not-allowed", ""}).dump() ==
        R"({"name":"denied.test","port":443,"rule":"not-allowed"})");
  CHECK(report::refused({"gone.test", 80, "unresolved", "no such name (NXDOMAIN)"}).dump() ==
        R"J({"name":"gone.test","port":80,"rule":"unresolved","detail":"no such name (NXDOMAIN)"})J");
}

TEST_CASE("report: the exit status says the signal it stands for", "[sandbox][report]") {
  CHECK(report::exit(137, 0.5)["signal"] == "SIGKILL");
  CHECK(report::exit(143, 0.5)["signal"] == "SIGTERM");
  CHECK_FALSE(report::exit(1, 0.5).contains("signal"));
  CHECK_FALSE(report::exit(128, 0.5).contains("signal"));
  CHECK_FALSE(report::exit(255, 0.5).contains("signal"));  // past the last signal
  CHECK(report::timeout(1.5)["limit"] == "timeout");
  CHECK(report::timeout(1.5)["seconds"] == 1.5);
}

TEST_CASE("report: the start event says the limits' mechanism, and what rlimits cannot report", "[sandbox][report]") {
  report::Start s;
  s.command = {"make", "-j4"};
  s.limits = "cgroup";
  s.pids = 50;
  report::ojson e = report::start(s);
  CHECK(e["limits"].dump() == R"({"mechanism":"cgroup","pids":50})");
  CHECK(e["command"] == report::ojson::array({"make", "-j4"}));
  s.limits = "rlimit";
  CHECK_THAT(report::start(s)["limits"]["unreported"].get<std::string>(), Contains("not seen by husk"));
}

TEST_CASE("report: counts from a cgroup's flat-keyed files", "[sandbox][report]") {
  CHECK(report::event_count("max 3\n", "max") == 3);
  CHECK(report::event_count("low 0\nhigh 0\nmax 12\noom 2\noom_kill 1\noom_group_kill 0\n", "oom_kill") == 1);
  CHECK(report::event_count("oom_kill_disable 0\nunder_oom 0\noom_kill 4\n", "oom_kill") == 4);  // v1's oom_control
  CHECK(report::event_count("max 3\n", "oom_kill") == 0);
  CHECK(report::event_count("", "max") == 0);
  CHECK(report::event_count("max x\n", "max") == 0);
}

TEST_CASE("control: a request is checked as --allow-host is", "[sandbox][report]") {
  report::ControlRequest r = report::parse_control(R"({"allow-host": "Example.com:443", "id": 7})");
  CHECK(r.host.name == "example.com");
  CHECK(r.host.port == 443);
  CHECK(r.id == 7);
  CHECK(report::parse_control("{\"allow-host\":\"*.example.org\"}\r").id.is_null());
  CHECK(report::control_answer(7, "a.test", true, "").dump() == R"({"id":7,"allow-host":"a.test","accepted":true})");
  CHECK(report::control_answer(nullptr, "", false, "not JSON").dump() == R"({"accepted":false,"reason":"not JSON"})");
}

TEST_CASE("control: hostile lines are refused with the reason", "[sandbox][report]") {
  // A refused line's id is still answered (the harness waits for it).
  CHECK(report::control_id(R"({"allow-host": "a\nb.com", "id": "x1"})") == "x1");
  CHECK(report::control_id(R"({"exec": "sh", "id": 9})") == 9);
  CHECK(report::control_id("not json").is_null());
  REQUIRE_THROWS_WITH(report::parse_control("allow example.com"), "not JSON");
  REQUIRE_THROWS_WITH(report::parse_control(R"(["allow-host", "a.com"])"), "not a JSON object");
  REQUIRE_THROWS_WITH(report::parse_control(R"({"id": 1})"), R"(no "allow-host")");
  REQUIRE_THROWS_WITH(report::parse_control(R"({"allow-host": 443})"), R"("allow-host" must be a string)");
  REQUIRE_THROWS_WITH(report::parse_control(R"({"allow-host": "a.com", "exec": "sh"})"), Contains("unknown key \"exec\""));
  // A control character in the name (a NUL would cut what the resolver sees), shown as '?'.
  REQUIRE_THROWS_WITH(report::parse_control(R"({"allow-host": "a\u0000.evil.com"})"),
                      "--allow-host a?.evil.com: not a host name");
  REQUIRE_THROWS_WITH(report::parse_control(R"({"allow-host": "a\nb.com"})"), "--allow-host a?b.com: not a host name");
  REQUIRE_THROWS_WITH(report::parse_control(R"({"allow-host": "*a.com"})"), Contains("'*' only as a first label"));
  REQUIRE_THROWS_WITH(report::parse_control(R"({"allow-host": "a.com:0"})"), Contains("port 0"));
  const std::string huge = R"({"allow-host": ")" + std::string(report::kControlLineMax, 'a') + R"("})";
  REQUIRE_THROWS_WITH(report::parse_control(huge), "a line over 4096 bytes");
  // An unknown key's name is quoted: it goes to the caller's stderr.
  REQUIRE_THROWS_WITH(report::parse_control("{\"allow-host\": \"a.com\", \"\\u001b[2J\": 1}"),
                      Contains("unknown key \"\\x1b[2J\""));
}

TEST_CASE("report: --report-fd gets the events; refusals past the cap are one dropped event", "[sandbox][report]") {
  int p[2];
  REQUIRE(::pipe2(p, O_CLOEXEC) == 0);
  husk::base::Fd rd(p[0]), wr(p[1]);
  ::fcntl(rd.get(), F_SETPIPE_SZ, 1 << 20);  // every line fits: nothing reads while they are written
  SandboxOptions o;
  o.report_fd = wr.get();
  SandboxHost host;
  Report r(o, host, "sandbox-9");
  REQUIRE(r);
  for (size_t i = 0; i < Report::kMaxRefused + 5; ++i) r.refused({"denied.test", 443, "not-allowed", ""});
  r.emit("exit", report::exit(0, 0));
  wr.reset();
  r = Report();  // its own copy of the fd closed too
  std::string text;
  char buf[65536];
  for (ssize_t n; (n = ::read(rd.get(), buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
  size_t refused = 0, dropped = 0, lines = 0;
  for (size_t at = 0, eol; (eol = text.find('\n', at)) != std::string::npos; at = eol + 1, ++lines) {
    report::ojson e = report::ojson::parse(text.substr(at, eol - at));
    refused += e["type"] == "refused";
    dropped += e["type"] == "dropped";
  }
  CHECK(refused == Report::kMaxRefused);
  CHECK(dropped == 1);
  CHECK(lines == Report::kMaxRefused + 2);
}

TEST_CASE("report: the fds a caller passes are checked", "[sandbox][report]") {
  REQUIRE_THROWS_WITH(claim_fd("--report-fd", 1, true), "--report-fd 1: the command's stdio; pass another fd");
  REQUIRE_THROWS_WITH(claim_fd("--control-fd", 1000000, false), Contains("--control-fd 1000000: not an open fd"));
  int p[2];
  REQUIRE(::pipe2(p, 0) == 0);
  husk::base::Fd rd(p[0]), wr(p[1]);
  REQUIRE_THROWS_WITH(claim_fd("--report-fd", rd.get(), true), Contains("not open for writing"));
  REQUIRE_THROWS_WITH(claim_fd("--control-fd", wr.get(), false), Contains("not open for reading"));
  claim_fd("--control-fd", rd.get(), false);
  CHECK((::fcntl(rd.get(), F_GETFD) & FD_CLOEXEC) != 0);  // the command never gets it
}
