// How the maps of a new user namespace get written (direct or through
// newuidmap/newgidmap) and which ranges a caller may map: pure, no root.
#include "namespaces/id_maps.h"

#include <catch2/catch.hpp>

using namespace husk;
using namespace husk::ns;

namespace {

std::vector<spec::IdMapping> maps(std::initializer_list<std::array<uint32_t, 3>> l) {
  std::vector<spec::IdMapping> out;
  for (const auto& [inside, outside, size] : l) {
    spec::IdMapping m;
    m.container_id = inside;
    m.host_id = outside;
    m.size = size;
    out.push_back(m);
  }
  return out;
}

// husk-rl, uid/gid 1001, 100000:65536 in /etc/subuid and /etc/subgid.
MapCaller user() {
  MapCaller c;
  c.euid = c.egid = 1001;
  c.user = "husk-rl";
  c.own_uids = c.own_gids = {{0, 4294967295}};
  c.subuids = c.subgids = {{100000, 65536}};
  return c;
}

MapCaller host_root() {
  MapCaller c;
  c.privileged = true;
  c.own_uids = c.own_gids = {{0, 4294967295}};
  return c;
}

std::string plan_error(const MapCaller& c, const std::vector<spec::IdMapping>& u,
                       const std::vector<spec::IdMapping>& g) {
  try {
    plan_id_maps(c, u, g, "linux");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("parse_subids matches the user by name or uid and skips the rest", "[id_maps]") {
  std::string text =
      "# a comment\n"
      "husk-rl:100000:65536\n"
      "husk-rlx:200000:65536\n"  // another user, a prefix match is none
      "xhusk-rl:210000:10\n"
      "1001:300000:10\n"           // by uid
      "1001:abc:10\n"              // garbage
      "husk-rl:400000\n"           // too few fields
      "husk-rl:500000:0\n"         // empty
      "husk-rl:4294967290:10\n"    // past the 32-bit ids
      "husk-rl:1:2:3\n"            // too many fields
      " husk-rl:600000:10\n"       // shadow does not trim
      ":700000:10\n"
      "\n"
      "husk-rl:800000:5";  // no final newline
  auto r = parse_subids(text, "husk-rl", 1001);
  REQUIRE(r.size() == 3);
  CHECK((r[0].start == 100000 && r[0].count == 65536));
  CHECK((r[1].start == 300000 && r[1].count == 10));
  CHECK((r[2].start == 800000 && r[2].count == 5));
  CHECK(parse_subids(text, "nobody", 65534).empty());
  CHECK(parse_subids(":1:2\n", "", 5).empty());  // a user without a name matches no empty owner
}

TEST_CASE("passwd_name and parse_proc_id_map", "[id_maps]") {
  std::string pw = "root:x:0:0:root:/root:/bin/bash\nbad line\nhusk-rl:x:1001:1001::/home/husk-rl:/bin/sh\n";
  CHECK(passwd_name(pw, 1001) == "husk-rl");
  CHECK(passwd_name(pw, 0) == "root");
  CHECK(passwd_name(pw, 7).empty());
  auto m = parse_proc_id_map("         0       1000          1\n         1     100000      65536\n");
  REQUIRE(m.size() == 2);
  CHECK((m[0].start == 0 && m[0].count == 1));
  CHECK((m[1].start == 1 && m[1].count == 65536));
  CHECK(parse_proc_id_map("garbage\n0 0\n").empty());
}

TEST_CASE("an unprivileged caller's own single id is written directly, gid_map after setgroups deny", "[id_maps]") {
  MapPlan p = plan_id_maps(user(), maps({{0, 1001, 1}}), maps({{0, 1001, 1}}), "linux");
  CHECK(p.uid == MapWay::Direct);
  CHECK(p.gid == MapWay::Direct);
  CHECK(p.deny_setgroups);
}

TEST_CASE("ranges go through the helpers; a direct uid map with helper gids leaves setgroups alone", "[id_maps]") {
  MapPlan p = plan_id_maps(user(), maps({{0, 1001, 1}, {1, 100000, 65536}}), maps({{0, 100000, 1}}), "linux");
  CHECK(p.uid == MapWay::Helper);
  CHECK(p.gid == MapWay::Helper);  // one id, but not the caller's own
  CHECK_FALSE(p.deny_setgroups);
  p = plan_id_maps(user(), maps({{0, 1001, 1}}), maps({{0, 1001, 1}, {1, 100000, 10}}), "linux");
  CHECK(p.uid == MapWay::Direct);
  CHECK(p.gid == MapWay::Helper);
  CHECK_FALSE(p.deny_setgroups);
  p = plan_id_maps(user(), maps({{0, 1001, 1}}), maps({{0, 1001, 1}}), "linux");
  CHECK(p.deny_setgroups);
}

TEST_CASE("a range not delegated to the user is refused naming the field and the range", "[id_maps]") {
  auto own = maps({{0, 1001, 1}});
  CHECK(plan_error(user(), maps({{0, 1001, 1}, {1, 300000, 1000}}), own) ==
        "linux.uidMappings[1]: host ids 300000-300999 are not delegated to user husk-rl (/etc/subuid)");
  CHECK(plan_error(user(), own, maps({{0, 100000, 65537}})) ==
        "linux.gidMappings[0]: host ids 100000-165536 are not delegated to user husk-rl (/etc/subgid)");
  // The caller's own id only as a single id.
  CHECK(plan_error(user(), maps({{0, 1001, 2}}), own) ==
        "linux.uidMappings[0]: host ids 1001-1002 are not delegated to user husk-rl (/etc/subuid)");
  MapCaller anon = user();
  anon.user.clear();
  CHECK(plan_error(anon, maps({{0, 5, 1}}), own) ==
        "linux.uidMappings[0]: host ids 5-5 are not delegated to uid 1001 (/etc/subuid)");
  // Another user's line delegates nothing to this one.
  MapCaller other = user();
  other.subuids = parse_subids("husk-rl2:100000:65536\n", other.user, other.euid);
  CHECK(plan_error(other, maps({{0, 100000, 1}}), own) ==
        "linux.uidMappings[0]: host ids 100000-100000 are not delegated to user husk-rl (/etc/subuid)");
}

TEST_CASE("a range covered by adjacent delegations passes, one across a gap does not", "[id_maps]") {
  MapCaller c = user();
  c.subuids = {{200000, 10}, {100000, 100000}};  // 100000-199999, 200000-200009
  auto own = maps({{0, 1001, 1}});
  CHECK_NOTHROW(plan_id_maps(c, maps({{0, 150000, 50010}}), own, "linux"));
  c.subuids = {{100000, 10}, {100011, 10}};
  CHECK(plan_error(c, maps({{0, 100000, 21}}), own) ==
        "linux.uidMappings[0]: host ids 100000-100020 are not delegated to user husk-rl (/etc/subuid)");
}

TEST_CASE("hostile mappings: count 0, overflow, overlap, none", "[id_maps]") {
  auto own = maps({{0, 1001, 1}});
  CHECK(plan_error(user(), maps({{0, 100000, 0}}), own) == "linux.uidMappings[0].size: must be > 0");
  CHECK(plan_error(user(), maps({{0, 4294967295u, 2}}), own) == "linux.uidMappings[0]: hostID + size overflows uint32");
  CHECK(plan_error(user(), maps({{4294967295u, 100000, 2}}), own) ==
        "linux.uidMappings[0]: containerID + size overflows uint32");
  CHECK(plan_error(user(), maps({{0, 100000, 10}, {10, 100005, 10}}), own) ==
        "linux.uidMappings[1].hostID: range overlaps linux.uidMappings[0]");
  CHECK(plan_error(user(), maps({{0, 100000, 10}, {5, 100010, 10}}), own) ==
        "linux.uidMappings[1].containerID: range overlaps linux.uidMappings[0]");
  CHECK(plan_error(user(), own, {}) == "linux.gidMappings: required when creating a new user namespace");
  // An overflowing delegation is no delegation (parse_subids drops it).
  MapCaller c = user();
  c.subuids = parse_subids("husk-rl:4294967200:1000\n", c.user, c.euid);
  CHECK(c.subuids.empty());
}

TEST_CASE("a privileged caller writes directly what its own user namespace has", "[id_maps]") {
  MapPlan p = plan_id_maps(host_root(), maps({{0, 100000, 65536}}), maps({{0, 100000, 65536}}), "mounts[2]");
  CHECK(p.uid == MapWay::Direct);
  CHECK(p.gid == MapWay::Direct);
  CHECK_FALSE(p.deny_setgroups);
  // Root of rootless podman's namespace: 0 -> 1000, 1-65536 -> 100000...
  MapCaller podman = host_root();
  podman.in_user_ns = true;
  podman.own_uids = podman.own_gids = {{0, 1}, {1, 65536}};
  CHECK_NOTHROW(plan_id_maps(podman, maps({{0, 0, 1}, {1, 1, 65536}}), maps({{0, 0, 65537}}), "linux"));
  CHECK(plan_error(podman, maps({{0, 0, 1}, {1, 65536, 2}}), maps({{0, 0, 1}})) ==
        "linux.uidMappings[1]: ids 65536-65537 are not mapped in husk's own user namespace (/proc/self/uid_map): "
        "the host ids must be mapped there");
}
