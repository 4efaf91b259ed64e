// CVE-2024-21626: a cwd (or argv[0]) of /proc/self/fd/N reaching the host
// through an fd the runtime leaked, or one the caller leaked to it.
//
// How they failed: both cases fail against the mutant (14774f5 with
// mutant-14774f5.patch, which drops the getcwd() check of enter_cwd): with
// the caller's leaked fds of host directories, cwd /proc/self/fd/N gave the
// exec'd and the run process a host cwd and they read the marker. The first
// case was moved here from the end-to-end suite's test_cve.cpp. They pass
// against 14774f5 and later.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include "sec.h"

using namespace hit;
using namespace sec;

namespace {
const std::string kUp = "../../../../../../../../..";
}

TEST_CASE("CVE-2024-21626: cwd through a leaked fd", "[cve-2024-21626][security]") {
  // A runtime fd open on a host directory (runc leaked one on
  // /sys/fs/cgroup) plus cwd=/proc/self/fd/N gave a cwd outside the rootfs.
  TempDir marker("husk-it-cve-");
  auto& marker_dir = marker.path;
  write_file(marker_dir + "/marker", "host\n");
  write_file(marker_dir + "/evil.sh", "#!/bin/sh\necho ESCAPED-EXEC\n", 0755);
  for (int n = 3; n <= 10; ++n) {
    std::string fd = "/proc/self/fd/" + std::to_string(n);
    INFO("fd " << n);
    {
      Container c("cve-cwd");
      c.cfg["process"]["cwd"] = fd;
      c.args({"sh", "-c", "cat " + kUp + marker_dir + "/marker && echo ESCAPED-CWD; true"});
      auto r = c.run();
      INFO(r.out << r.err);
      CHECK_FALSE(contains(r.out, "ESCAPED"));
      CHECK(leftovers(c).empty());
    }
    {
      Container c("cve-exe");
      c.args({fd + "/" + kUp + marker_dir + "/evil.sh"});
      auto r = c.run();
      INFO(r.out << r.err);
      CHECK_FALSE(contains(r.out, "ESCAPED"));
      CHECK(leftovers(c).empty());
    }
  }
}

TEST_CASE("CVE-2024-21626: fds of host directories leaked by the caller, run and exec",
          "[cve-2024-21626][security]") {
  // The caller (a careless engine) leaves fds 3..9 open without CLOEXEC on
  // host directories; cwd /proc/self/fd/N and argv /proc/self/fd/N/.. must
  // not reach them, for run and for exec (--cwd, argv).
  TempDir host("husk-sec-21626-");
  std::string token = "HOST-" + unique_id("21626");
  write_file(host.path + "/marker", token + "\n");
  write_file(host.path + "/evil.sh", "#!/bin/sh\necho ESCAPED-EXEC\n", 0755);
  std::string before = tree_state(host.path);
  std::vector<Fd> leaked;
  std::vector<std::pair<int, int>> extra;
  for (int n = 3; n <= 9; ++n) {
    leaked.emplace_back(::open(n % 2 ? host.path.c_str() : "/", O_RDONLY | O_DIRECTORY));
    REQUIRE(leaked.back());
    extra.push_back({leaked.back().get(), n});
  }
  SpawnOpts leak{.extra_fds = extra};
  auto escaped = [&](const Result& r) { return contains(r.out, token) || contains(r.out, "ESCAPED"); };

  Container c("21626-exec");
  c.args({"sleep", "60"});
  c.write_config();
  auto cr = c.rt({"create", "--bundle", c.bundle, c.id}, leak);
  INFO(cr.err);
  REQUIRE(cr.ok());
  REQUIRE(c.rt({"start", c.id}, leak).ok());
  for (int n = 3; n <= 9; ++n) {
    std::string fd = "/proc/self/fd/" + std::to_string(n);
    INFO("fd " << n);
    auto r1 = c.rt({"exec", "--cwd", fd, c.id, "sh", "-c", "cat " + kUp + host.path + "/marker; pwd; true"}, leak);
    INFO(r1.out << r1.err);
    CHECK_FALSE(escaped(r1));
    auto r2 = c.rt({"exec", c.id, fd + "/" + kUp + host.path + "/evil.sh"}, leak);
    INFO(r2.out << r2.err);
    CHECK_FALSE(escaped(r2));
    auto r3 = c.rt({"exec", c.id, "sh", "-c", "cat " + fd + "/" + kUp + host.path + "/marker " + fd + "/marker; true"},
                   leak);
    INFO(r3.out << r3.err);
    CHECK_FALSE(escaped(r3));
    Container d("21626-run");
    d.cfg["process"]["cwd"] = fd;
    d.args({"sh", "-c", "cat " + kUp + host.path + "/marker marker; true"});
    auto r4 = d.run({}, leak);
    INFO(r4.out << r4.err);
    CHECK_FALSE(escaped(r4));
  }
  CHECK(c.rt({"exec", c.id, "true"}).ok());
  CHECK(tree_state(host.path) == before);
}
