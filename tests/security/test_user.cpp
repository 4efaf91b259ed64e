// `exec -u` parsing (crun CVE-2026-30892 class) and uid/gid (uid_t)-1
// (setresuid(-1) means "unchanged": the process stays root).
//
// A refused value must fail with a non-zero exit and the process must not
// run: the command would create /ran-<n> in the rootfs, which the host checks.
//
// How they failed: against the husk before 06ed4be (and the mutant, based on
// 14774f5) `-1`, `0x3e8` and `4294967296` ran as uid 0, `1e3` as 1,
// `4294968296` as 1000, `1000x`, `+1000`, ` 1000`, `1000:1000:1000` ... as
// 1000, and process.user.uid/gid 4294967295 (config.json and exec
// --process) ran as root (issue 7 items 2 and 3). Pass since 06ed4be.
#include <catch2/catch.hpp>

#include <filesystem>

#include "sec.h"

using namespace hit;
using namespace sec;
namespace fs = std::filesystem;

TEST_CASE("exec -u: only UID[:GID] of decimal digits within range", "[exec-user][security]") {
  Container c("exec-user");
  c.start_process({"sleep", "60"});
  int n = 0;
  for (std::string bad : {"1000x", "1000:1000x", "1000:1000:1000", " 1000", "+1000", "-1", "0x3e8", "1e3",
                          "4294967296", "4294968296", "4294967295", "4294967295:4294967295", "0:4294967295",
                          "1000:-1", ":1000", "1000:", "٣"}) {
    std::string marker = "/tmp/ran-" + std::to_string(++n);  // writable for any uid
    INFO("exec -u '" << bad << "'");
    auto r = c.rt({"exec", "-u", bad, c.id, "sh", "-c", "touch " + marker + "; id"});
    INFO(r.out << r.err);
    CHECK(r.code != 0);
    CHECK_FALSE(r.err.empty());
    CHECK_FALSE(contains(r.out, "uid="));
    CHECK_FALSE(fs::exists(c.rootfs + marker));
  }
  // `-u UID` alone keeps process.user.gid of config.json (0 here), as runc does.
  for (auto [good, uid, gid] : {std::tuple{"1000", 1000, 0}, {"1000:1000", 1000, 1000}, {"0:0", 0, 0},
                                {"1000:0", 1000, 0}, {"65534:65534", 65534, 65534}}) {
    INFO("exec -u '" << good << "'");
    // The exec'd process reads its own ids from the kernel.
    auto r = c.rt({"exec", "-u", good, c.id, "sh", "-c", "grep -E '^(Uid|Gid):' /proc/self/status; id -u; id -g"});
    INFO(r.out << r.err);
    REQUIRE(r.ok());
    auto u = std::to_string(uid), g = std::to_string(gid);
    CHECK(contains(r.out, "Uid:\t" + u + "\t" + u + "\t" + u + "\t" + u));
    CHECK(contains(r.out, "Gid:\t" + g + "\t" + g + "\t" + g + "\t" + g));
  }
  CHECK(c.rt({"exec", c.id, "true"}).ok());
}

TEST_CASE("uid/gid 4294967295 in config.json and exec --process are refused", "[exec-user][security]") {
  for (auto [uid, gid] : {std::pair{4294967295ULL, 0ULL}, {0ULL, 4294967295ULL}, {4294967295ULL, 4294967295ULL}}) {
    INFO("process.user " << uid << ":" << gid);
    {
      Container c("user-config");
      c.cfg["process"]["user"] = {{"uid", uid}, {"gid", gid}};
      c.args({"sh", "-c", "touch /tmp/ran; id"});
      auto r = c.run();
      INFO(r.out << r.err);
      CHECK(r.code != 0);
      CHECK_FALSE(contains(r.out, "uid="));
      CHECK_FALSE(fs::exists(c.rootfs + "/tmp/ran"));
      CHECK(leftovers(c).empty());
    }
    {
      Container c("user-process");
      c.start_process({"sleep", "60"});
      json p = c.cfg["process"];
      p["args"] = {"sh", "-c", "touch /tmp/ran-exec; id"};
      p["user"] = {{"uid", uid}, {"gid", gid}};
      write_file(c.bundle + "/process.json", p.dump());
      auto r = c.rt({"exec", "--process", c.bundle + "/process.json", c.id});
      INFO(r.out << r.err);
      CHECK(r.code != 0);
      CHECK_FALSE(contains(r.out, "uid="));
      CHECK_FALSE(fs::exists(c.rootfs + "/tmp/ran-exec"));
    }
  }
}
