// CVE-2022-29162: runc gave exec'd processes inheritable capabilities, so a
// program with file capabilities (or ambient ones) gained them on execve.
// CapInh of the container process and of exec'd processes must be 0 unless
// process.capabilities.inheritable asks for some.
//
// How they failed: against the mutant (14774f5 with mutant-14774f5.patch,
// which puts the permitted set into the inheritable one) CapInh was
// non-zero for the init and every exec'd process. Pass against 14774f5 and
// later.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>

#include "sec.h"

using namespace hit;
using namespace sec;

namespace {
const std::string kZero = "0000000000000000";

std::string hex(unsigned long long m) {
  char b[17];
  std::snprintf(b, sizeof b, "%016llx", m);
  return b;
}

int exec_detached(Container& c, const std::vector<std::string>& extra, const std::string& tag) {
  std::string pidfile = c.bundle + "/" + tag + ".pid";
  std::vector<std::string> a{"exec", "-d", "--pid-file", pidfile};
  a.insert(a.end(), extra.begin(), extra.end());
  a.push_back(c.id);
  bool process_file = std::find(extra.begin(), extra.end(), "--process") != extra.end();
  if (!process_file)
    for (std::string s : {"sleep", "30"}) a.push_back(s);
  auto r = c.rt(a);
  INFO("exec " << tag << ": " << r.err);
  REQUIRE(r.ok());
  int pid = std::stoi(trim(read_file(pidfile)));
  REQUIRE(eventually([&] { return trim(read_file("/proc/" + std::to_string(pid) + "/comm")) == "sleep"; }));
  return pid;
}
}  // namespace

TEST_CASE("CVE-2022-29162: no inheritable capabilities after run and exec", "[cve-2022-29162][security]") {
  SECTION("default config: CapInh 0 for init and exec'd processes") {
    Container c("29162");
    int init = c.start_process({"sleep", "30"});
    CHECK(status_field(init, "CapInh") == kZero);
    CHECK(status_field(init, "CapAmb") == kZero);
    int e1 = exec_detached(c, {}, "plain");
    CHECK(status_field(e1, "CapInh") == kZero);
    int e2 = exec_detached(c, {"--cap", "CAP_NET_ADMIN"}, "cap");
    CHECK(status_field(e2, "CapInh") == kZero);
    CHECK((std::stoull(status_field(e2, "CapEff"), nullptr, 16) & cap_mask({"CAP_NET_ADMIN"})) != 0);
    int e3 = exec_detached(c, {"-u", "1000:1000"}, "user");
    CHECK(status_field(e3, "CapInh") == kZero);
    CHECK(status_field(e3, "CapEff") == kZero);
  }
  SECTION("inheritable asked for: exactly that, and exec gets the same") {
    Container c("29162-asked");
    add_caps(c.cfg, {"CAP_CHOWN"});  // an inheritable cap must be in the bounding set
    c.cfg["process"]["capabilities"]["inheritable"] = {"CAP_CHOWN"};
    int init = c.start_process({"sleep", "30"});
    CHECK(status_field(init, "CapInh") == hex(cap_mask({"CAP_CHOWN"})));
    int e = exec_detached(c, {}, "asked");
    CHECK(status_field(e, "CapInh") == hex(cap_mask({"CAP_CHOWN"})));
  }
  SECTION("exec --process with no inheritable set") {
    Container c("29162-process");
    c.start_process({"sleep", "30"});
    json p = c.cfg["process"];
    p["args"] = {"sleep", "30"};
    p["capabilities"].erase("inheritable");
    p["capabilities"]["ambient"] = {"CAP_NET_RAW"};
    write_file(c.bundle + "/process.json", p.dump());
    int e = exec_detached(c, {"--process", c.bundle + "/process.json"}, "process");
    CHECK(status_field(e, "CapInh") == kZero);
    CHECK(status_field(e, "CapAmb") == kZero);  // ambient needs inheritable: not raised
  }
}
