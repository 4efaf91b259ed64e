// The container process: capabilities, no_new_privs, rlimits, user, umask,
// cwd, env, oom_score_adj.
#include <catch2/catch.hpp>

#include <cstdio>

#include "harness.h"

using namespace hit;

static unsigned long long hex(const std::string& s) { return std::stoull(s, nullptr, 16); }

TEST_CASE("capability sets of the container process", "[process][caps]") {
  SECTION("root with equal sets (as engines configure them)") {
    Container c("caps-root");
    std::vector<std::string> caps{"CAP_CHOWN", "CAP_KILL", "CAP_NET_BIND_SERVICE"};
    c.cfg["process"]["capabilities"] = {{"bounding", caps}, {"effective", caps}, {"permitted", caps},
                                        {"inheritable", caps}, {"ambient", caps}};
    int pid = c.start_process({"sleep", "60"});
    auto m = cap_mask(caps);
    CHECK(hex(status_field(pid, "CapBnd")) == m);
    CHECK(hex(status_field(pid, "CapEff")) == m);
    CHECK(hex(status_field(pid, "CapPrm")) == m);
    CHECK(hex(status_field(pid, "CapInh")) == m);
    CHECK(hex(status_field(pid, "CapAmb")) == m);
  }
  SECTION("non-root: bounding wider than the others, ambient raised") {
    Container c("caps-user");
    c.cfg["process"]["user"] = {{"uid", 1000}, {"gid", 1000}};
    std::vector<std::string> bnd{"CAP_CHOWN", "CAP_KILL", "CAP_NET_BIND_SERVICE", "CAP_SETUID"};
    std::vector<std::string> some{"CAP_KILL", "CAP_NET_BIND_SERVICE"};
    c.cfg["process"]["capabilities"] = {{"bounding", bnd}, {"effective", some}, {"permitted", some},
                                        {"inheritable", some}, {"ambient", some}};
    int pid = c.start_process({"sleep", "60"});
    CHECK(hex(status_field(pid, "CapBnd")) == cap_mask(bnd));
    CHECK(hex(status_field(pid, "CapEff")) == cap_mask(some));
    CHECK(hex(status_field(pid, "CapPrm")) == cap_mask(some));
    CHECK(hex(status_field(pid, "CapInh")) == cap_mask(some));
    CHECK(hex(status_field(pid, "CapAmb")) == cap_mask(some));
  }
  SECTION("no capabilities at all") {
    Container c("caps-none");
    c.cfg["process"]["capabilities"] = json::object();
    int pid = c.start_process({"sleep", "60"});
    for (auto f : {"CapBnd", "CapEff", "CapPrm", "CapInh", "CapAmb"}) {
      INFO(f);
      CHECK(hex(status_field(pid, f)) == 0);
    }
  }
}

TEST_CASE("noNewPrivileges", "[process]") {
  for (bool nnp : {true, false}) {
    Container c(nnp ? "nnp1" : "nnp0");
    c.cfg["process"]["noNewPrivileges"] = nnp;
    int pid = c.start_process({"sleep", "60"});
    CHECK(status_field(pid, "NoNewPrivs") == (nnp ? "1" : "0"));
  }
}

TEST_CASE("rlimits", "[process]") {
  Container c("rlimit");
  c.cfg["process"]["rlimits"] = json::array({{{"type", "RLIMIT_NOFILE"}, {"soft", 512}, {"hard", 4096}},
                                             {{"type", "RLIMIT_NPROC"}, {"soft", 321}, {"hard", 654}},
                                             {{"type", "RLIMIT_CORE"}, {"soft", 0}, {"hard", 0}}});
  int pid = c.start_process({"sleep", "60"});
  std::string limits = read_file("/proc/" + std::to_string(pid) + "/limits");
  auto row = [&](const std::string& name) {
    for (auto& l : lines(limits))
      if (l.rfind(name, 0) == 0) {
        unsigned long long soft = 0, hard = 0;
        std::sscanf(l.c_str() + name.size(), "%llu %llu", &soft, &hard);
        return std::pair(soft, hard);
      }
    return std::pair(~0ULL, ~0ULL);
  };
  CHECK(row("Max open files") == std::pair(512ULL, 4096ULL));
  CHECK(row("Max processes") == std::pair(321ULL, 654ULL));
  CHECK(row("Max core file size") == std::pair(0ULL, 0ULL));

  Container c2("rlimit-in");
  c2.cfg["process"]["rlimits"] = json::array({{{"type", "RLIMIT_NOFILE"}, {"soft", 777}, {"hard", 888}}});
  c2.args({"sh", "-c", "ulimit -n; ulimit -Hn"});
  auto r = c2.run();
  INFO(r.err);
  CHECK(r.code == 0);
  CHECK(r.out == "777\n888\n");
}

TEST_CASE("user, groups, umask, cwd, env", "[process]") {
  Container c("user");
  c.cfg["process"]["user"] = {{"uid", 1000}, {"gid", 1000}, {"additionalGids", {10, 20}}, {"umask", 027}};
  c.cfg["process"]["cwd"] = "/home/user";
  c.cfg["process"]["env"] = {"PATH=/bin:/sbin", "FOO=bar baz", "EMPTY="};
  c.args({"sh", "-c",
          "id -u; id -g; grep ^Groups: /proc/self/status; umask; pwd; echo \"$FOO\"; "
          "echo ${EMPTY-unset}x; env | grep -c '^HUSK_IT_HOST_ONLY=' ; true"});
  ::setenv("HUSK_IT_HOST_ONLY", "1", 1);
  auto r = c.run();
  ::unsetenv("HUSK_IT_HOST_ONLY");
  INFO(r.err);
  REQUIRE(r.code == 0);
  auto l = lines(r.out);
  REQUIRE(l.size() == 8);
  CHECK(l[0] == "1000");
  CHECK(l[1] == "1000");
  CHECK(trim(l[2].substr(7)) == "10 20");
  CHECK(l[3] == "0027");
  CHECK(l[4] == "/home/user");
  CHECK(l[5] == "bar baz");
  CHECK(l[6] == "x");
  CHECK(l[7] == "0");  // the caller's environment does not leak in
}

TEST_CASE("missing cwd is created", "[process]") {
  Container c("cwd-new");
  c.cfg["process"]["cwd"] = "/new/work/dir";
  c.args({"pwd"});
  auto r = c.run();
  INFO(r.err);
  CHECK(r.code == 0);
  CHECK(r.out == "/new/work/dir\n");
}

TEST_CASE("oomScoreAdj", "[process]") {
  Container c("oom");
  c.cfg["process"]["oomScoreAdj"] = 321;
  int pid = c.start_process({"sleep", "60"});
  CHECK(trim(read_file("/proc/" + std::to_string(pid) + "/oom_score_adj")) == "321");
  CHECK(trim(read_file("/proc/self/oom_score_adj")) != "321");
}
