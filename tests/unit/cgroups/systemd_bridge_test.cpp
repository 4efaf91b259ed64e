// husk-systemd (cgroups/systemd_bridge.cpp) as a black box: a request on its
// stdin, its reply and exit code. Refused requests and unreachable buses need
// no systemd; the calls go to husk-fake-systemd (tests/unit/fake_systemd.cpp)
// on a private dbus-daemon, which logs what reached it.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <optional>

#include "base/file.h"
#include "skip.h"
#include "support.h"
#include "unit/temp_dir.h"

using nlohmann::json;

#if HUSK_SYSTEMD

namespace {

struct Reply {
  int code = -1;
  json body;
  std::string err;
};

constexpr const char* kNoBus = "DBUS_SYSTEM_BUS_ADDRESS=unix:path=/nonexistent";

// Runs the bridge through env(1) with `env` (NAME=VALUE or -u NAME words).
Reply ask(const std::string& request, std::vector<std::string> env = {kNoBus}) {
  std::vector<std::string> argv{"env"};
  argv.insert(argv.end(), env.begin(), env.end());
  argv.push_back(HUSK_SYSTEMD_BRIDGE);
  husk_test::SpawnOpts opts;
  opts.stdin_data = request;
  auto r = husk_test::run(argv, opts);
  INFO("request: " << request << "\nstdout: " << r.out << "\nstderr: " << r.err);
  REQUIRE(!r.timed_out);
  return {r.code, json::parse(r.out), r.err};
}

bool have_dbus_daemon() { return husk_test::run({"sh", "-c", "command -v dbus-daemon"}).ok(); }

// A private bus with husk-fake-systemd owning org.freedesktop.systemd1.
struct FakeSystemd {
  husk_test::TempDir dir{"husk-fake-systemd."};
  std::string address = "unix:path=" + dir.path + "/bus";
  std::optional<husk_test::Child> daemon, fake;

  FakeSystemd() {
    husk_test::write_file(dir.path + "/bus.conf",
                          "<busconfig><type>session</type><listen>" + address +
                              "</listen><auth>EXTERNAL</auth><policy context=\"default\">"
                              "<allow send_destination=\"*\"/><allow receive_sender=\"*\"/><allow own=\"*\"/>"
                              "</policy></busconfig>");
    daemon.emplace(std::vector<std::string>{"dbus-daemon", "--config-file=" + dir.path + "/bus.conf", "--nofork"});
    REQUIRE(husk_test::eventually([&] { return access((dir.path + "/bus").c_str(), F_OK) == 0; }));
    husk_test::SpawnOpts opts;
    opts.out = std::make_shared<husk_test::Capture>();
    fake.emplace(std::vector<std::string>{HUSK_FAKE_SYSTEMD, address, dir.path + "/calls"}, opts);
    REQUIRE(husk_test::eventually([&] { return opts.out->read() == "ready\n"; }));
  }

  Reply ask(const json& request) { return ::ask(request.dump(), {"DBUS_SYSTEM_BUS_ADDRESS=" + address}); }
  std::vector<std::string> calls() const {
    return husk_test::lines(husk::base::try_read_file(dir.path + "/calls").value_or(""));
  }
};

json request(const std::string& method, const std::string& unit, json properties = json::array()) {
  return {{"bus", "system"}, {"method", method}, {"unit", unit}, {"properties", std::move(properties)}};
}

json prop(const std::string& name, const std::string& type, json value) {
  return {{"name", name}, {"type", type}, {"value", std::move(value)}};
}

// [[a, b], ...]: a braced list of pairs would make a JSON object.
json pairs(std::initializer_list<std::pair<std::string, json>> list) {
  json out = json::array();
  for (const auto& [a, b] : list) out.push_back(json::array({a, b}));
  return out;
}

json error(const std::string& msg, const std::string& name, int err) {
  return {{"error", msg}, {"errorName", name}, {"errno", err}};
}

}  // namespace

TEST_CASE("husk-systemd refuses a malformed request before it opens a bus: exit 2", "[systemd-bridge]") {
  struct Case {
    std::string request, error;
  };
  const std::string start = R"("bus":"system","method":"start","unit":"a.scope")";
  auto c = GENERATE_REF(values<Case>({
      {"", "request: not JSON"},
      {"[]", "request: not a JSON object"},
      {R"({"bus":"system","method":"start"})", R"(request: "unit" is missing)"},
      {R"({"bus":"session","method":"stop","unit":"a.scope"})", R"(request.bus: "session" is not one of system, user)"},
      {R"({"bus":"system","method":"restart","unit":"a.scope"})", R"(request.method: "restart" is not one of)"},
      {R"({"bus":"system","method":"start","unit":"a.service"})", "start takes a .scope or .slice unit"},
      {"{" + start + R"(,"timeout":5})", R"(request: unknown key "timeout")"},
      {"{" + start + R"(,"timeoutMs":0})", "request.timeoutMs: 0"},
      {"{" + start + R"~(,"properties":[{"name":"X","type":"a(sv)","value":[]}]})~",
       R"~(request.properties[0] (X).type: "a(sv)" is not one of s b t u au ay a(ss) a(st))~"},
      {"{" + start + R"(,"properties":[{"name":"MemoryMax","type":"t","value":-1}]})",
       "request.properties[0] (MemoryMax).value: not an integer from 0 to 18446744073709551615: -1"},
      {"{" + start + R"(,"properties":[{"name":"AllowedCPUs","type":"ay","value":[1,256]}]})",
       "(AllowedCPUs).value[1]: not an integer from 0 to 255: 256"},
      {"{" + start + R"(,"properties":[{"name":"PIDs","type":"au","value":[4294967296]}]})",
       "(PIDs).value[0]: not an integer from 0 to 4294967295"},
      {"{" + start + R"(,"properties":[{"name":"Delegate","type":"b","value":1}]})",
       "(Delegate).value: not true or false: 1"},
      {"{" + start + R"~(,"properties":[{"name":"DeviceAllow","type":"a(ss)","value":[["/dev/null"]]}]})~",
       "(DeviceAllow).value[0]: not a pair [string, value]"},
      {"{" + start + R"(,"properties":[{"name":"Slice","type":"s","value":"a\u0000b"}]})",
       "(Slice).value: contains a NUL byte"},
      {"{" + start + R"(,"properties":[{"name":"Slice","type":"s","value":"a","flags":1}]})",
       R"(request.properties[0]: unknown key "flags")"},
      {R"({"bus":"system","method":"stop","unit":"a.scope","properties":[{"name":"X","type":"b","value":true}]})",
       "request.properties: stop takes none"},
      {R"({"bus":"system","method":"reset","unit":"a.scope","properties":[{"name":"X","type":"b","value":true}]})",
       "request.properties: reset takes none"},
  }));
  auto r = ask(c.request);
  INFO(r.body.dump());
  CHECK(r.code == 2);
  CHECK(r.body["errno"] == EINVAL);
  CHECK(r.body["errorName"] == "");
  CHECK(husk_test::contains(r.body["error"].get<std::string>(), c.error));
  CHECK(r.err.rfind("husk-systemd: request", 0) == 0);
  CHECK(husk_test::contains(r.err, c.error));
}

TEST_CASE("husk-systemd names the bus it cannot reach: exit 1", "[systemd-bridge]") {
  std::string stop = R"({"bus":"system","method":"stop","unit":"a.scope"})";
  auto r = ask(stop);
  CHECK(r.code == 1);
  CHECK(r.body == error("connect to the systemd system bus at unix:path=/nonexistent: No such file or directory", "",
                        ENOENT));

  r = ask(R"({"bus":"user","method":"start","unit":"a.scope"})",
          {"-u", "XDG_RUNTIME_DIR", "-u", "DBUS_SESSION_BUS_ADDRESS"});
  CHECK(r.code == 1);
  CHECK(r.body == error("connect to the systemd user bus: neither DBUS_SESSION_BUS_ADDRESS nor XDG_RUNTIME_DIR is set",
                        "", ENOMEDIUM));
}

TEST_CASE("husk-systemd start: the typed a(sv), the job waited for, the unit's cgroup", "[systemd-bridge]") {
  if (!have_dbus_daemon()) HUSK_SKIP("no dbus-daemon for a private bus (Debian: dbus-daemon)");
  FakeSystemd sd;
  json props = json::array({prop("Slice", "s", "system.slice"), prop("Delegate", "b", true),
                            prop("PIDs", "au", {1234, 5}), prop("MemoryMax", "t", UINT64_MAX), prop("Nice", "u", 7),
                            prop("AllowedCPUs", "ay", {1, 0}), prop("DeviceAllow", "a(ss)", json::array()),
                            prop("DeviceAllow", "a(ss)", pairs({{"/dev/null", "rwm"}, {"/dev/char/5:2", "rw"}})),
                            prop("IODeviceWeight", "a(st)", pairs({{"/dev/vda", 100}}))});
  auto r = sd.ask(request("start", "husk-a.scope", props));
  CHECK(r.code == 0);
  CHECK(r.body == json{{"controlGroup", "/fake.slice/husk-a.scope"}});
  CHECK(sd.calls() == std::vector<std::string>{
                          R"(StartTransientUnit "husk-a.scope" "replace" [("Slice", <s>"system.slice"), )"
                          R"(("Delegate", <b>true), ("PIDs", <au>[1234, 5]), )"
                          R"(("MemoryMax", <t>18446744073709551615), ("Nice", <u>7), ("AllowedCPUs", <ay>[1, 0]), )"
                          R"(("DeviceAllow", <a(ss)>[]), ("DeviceAllow", <a(ss)>[("/dev/null", "rwm"), )"
                          R"(("/dev/char/5:2", "rw")]), ("IODeviceWeight", <a(st)>[("/dev/vda", 100)])] [])",
                          R"(GetUnit "husk-a.scope")"});
}

TEST_CASE("husk-systemd start of a unit that exists: ResetFailedUnit, then once more", "[systemd-bridge]") {
  if (!have_dbus_daemon()) HUSK_SKIP("no dbus-daemon for a private bus (Debian: dbus-daemon)");
  FakeSystemd sd;
  SECTION("a failed leftover: the second start succeeds") {
    auto r = sd.ask(request("start", "exists.scope"));
    CHECK(r.code == 0);
    CHECK(r.body == json{{"controlGroup", "/fake.slice/exists.scope"}});
    CHECK(sd.calls() == std::vector<std::string>{R"(StartTransientUnit "exists.scope" "replace" [] [])",
                                                 R"(ResetFailedUnit "exists.scope")",
                                                 R"(StartTransientUnit "exists.scope" "replace" [] [])",
                                                 R"(GetUnit "exists.scope")"});
  }
  SECTION("still there: systemd's error, its name and errno") {
    auto r = sd.ask(request("start", "stuck.scope"));
    CHECK(r.code == 1);
    CHECK(r.body == error("StartTransientUnit stuck.scope: Unit stuck.scope was already loaded or has a fragment file.",
                          "org.freedesktop.systemd1.UnitExists", EEXIST));
    CHECK(sd.calls().size() == 3);
  }
}

TEST_CASE("husk-systemd start: a job that fails or outlasts timeoutMs is an error; the unit is reset",
          "[systemd-bridge]") {
  if (!have_dbus_daemon()) HUSK_SKIP("no dbus-daemon for a private bus (Debian: dbus-daemon)");
  FakeSystemd sd;
  SECTION("failed") {
    auto r = sd.ask(request("start", "fail.scope"));
    CHECK(r.code == 1);
    CHECK(r.body == error("systemd job for fail.scope: failed", "", 0));
    CHECK(sd.calls() == std::vector<std::string>{R"(StartTransientUnit "fail.scope" "replace" [] [])",
                                                 R"(ResetFailedUnit "fail.scope")"});
  }
  SECTION("no JobRemoved") {
    json rq = request("start", "hang.scope");
    rq["timeoutMs"] = 300;
    auto r = sd.ask(rq);
    CHECK(r.code == 1);
    CHECK(r.body == error("systemd job for hang.scope: timed out after 300 ms", "", ETIMEDOUT));
    CHECK(sd.calls().back() == R"(ResetFailedUnit "hang.scope")");
  }
}

TEST_CASE("husk-systemd set: SetUnitProperties, runtime only", "[systemd-bridge]") {
  if (!have_dbus_daemon()) HUSK_SKIP("no dbus-daemon for a private bus (Debian: dbus-daemon)");
  FakeSystemd sd;
  auto r = sd.ask(request("set", "husk-a.scope", json::array({prop("MemoryMax", "t", 33554432)})));
  CHECK(r.code == 0);
  CHECK(r.body == json::object());
  CHECK(sd.calls() ==
        std::vector<std::string>{R"(SetUnitProperties "husk-a.scope" true [("MemoryMax", <t>33554432)])"});
}

TEST_CASE("husk-systemd stop: NoSuchUnit is done already; a failed job a warning; a timeout an error",
          "[systemd-bridge]") {
  if (!have_dbus_daemon()) HUSK_SKIP("no dbus-daemon for a private bus (Debian: dbus-daemon)");
  FakeSystemd sd;
  SECTION("stopped, then collected (ResetFailedUnit's NoSuchUnit ignored)") {
    auto r = sd.ask(request("stop", "husk-a.scope"));
    CHECK(r.code == 0);
    CHECK(r.body == json::object());
    CHECK(sd.calls() ==
          std::vector<std::string>{R"(StopUnit "husk-a.scope" "replace")", R"(ResetFailedUnit "husk-a.scope")"});
  }
  SECTION("gone with its processes") {
    auto r = sd.ask(request("stop", "gone.scope"));
    CHECK(r.code == 0);
    CHECK(r.body == json::object());
    CHECK(sd.calls() == std::vector<std::string>{R"(StopUnit "gone.scope" "replace")"});
  }
  SECTION("failed") {
    auto r = sd.ask(request("stop", "fail.scope"));
    CHECK(r.code == 0);
    CHECK(r.body == json{{"warning", "systemd job for fail.scope: failed"}});
  }
  SECTION("no JobRemoved") {
    json rq = request("stop", "hang.scope");
    rq["timeoutMs"] = 300;
    auto r = sd.ask(rq);
    CHECK(r.code == 1);
    CHECK(r.body == error("systemd job for hang.scope: timed out after 300 ms", "", ETIMEDOUT));
  }
  SECTION("on the user bus") {
    json rq = request("stop", "husk-a.scope");
    rq["bus"] = "user";
    auto r = ::ask(rq.dump(), {kNoBus, "DBUS_SESSION_BUS_ADDRESS=" + sd.address});
    CHECK(r.code == 0);
    CHECK(sd.calls().front() == R"(StopUnit "husk-a.scope" "replace")");
  }
}

TEST_CASE("husk-systemd reset: ResetFailedUnit; a unit gone already counts as reset", "[systemd-bridge]") {
  if (!have_dbus_daemon()) HUSK_SKIP("no dbus-daemon for a private bus (Debian: dbus-daemon)");
  FakeSystemd sd;
  auto r = sd.ask(request("reset", "exists.scope"));
  CHECK(r.code == 0);
  CHECK(r.body == json::object());
  r = sd.ask(request("reset", "gone.scope"));
  CHECK(r.code == 0);
  CHECK(r.body == json::object());
  CHECK(sd.calls() == std::vector<std::string>{R"(ResetFailedUnit "exists.scope")", R"(ResetFailedUnit "gone.scope")"});
}

#else

TEST_CASE("husk-systemd", "[systemd-bridge]") { HUSK_SKIP("built with -DHUSK_SYSTEMD=OFF: no husk-systemd"); }

#endif
