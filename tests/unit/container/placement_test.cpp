// place_cgroup_on: where create puts a container's cgroup, and where delete
// looks for it with only config.json left, for each driver and caller.
#include <catch2/catch.hpp>

#include "container/placement.h"

using namespace husk::rt;
namespace cg = husk::cgroups;

namespace {

// A unified host where the caller sits in /deleg/shell and may write /deleg.
cg::RootlessHost delegated_host() {
  cg::RootlessHost h;
  h.mode = cg::Mode::unified;
  h.own = "/deleg/shell";
  h.uid = 1001;
  h.access = [](const std::string& p) {
    if (p != "/" && p != "/deleg" && p != "/deleg/shell") return cg::Access::missing;
    return p == "/" ? cg::Access::not_writable : cg::Access::writable;
  };
  return h;
}

// The same caller in a cgroup it may not write: no delegated subtree.
cg::RootlessHost undelegated_host() {
  cg::RootlessHost h = delegated_host();
  h.access = [](const std::string& p) {
    return p == "/" || p == "/deleg" || p == "/deleg/shell" ? cg::Access::not_writable : cg::Access::missing;
  };
  return h;
}

Context ctx(bool rootless, bool systemd) {
  Context g;
  g.rootless = rootless;
  g.systemd_cgroup = systemd;
  return g;
}

}  // namespace

TEST_CASE("placement: cgroupfs as root is the resolved cgroupsPath") {
  auto p = place_cgroup_on({}, ctx(false, false), std::string("/pods/c1"), "c1", "");
  CHECK(p.path == "/pods/c1");
  CHECK_FALSE(p.unit);
  CHECK(place_cgroup_on({}, ctx(false, false), std::nullopt, "c1", "").path == "/husk/c1");
}

TEST_CASE("placement: systemd gives the scope, the user's own manager when rootless") {
  auto p = place_cgroup_on({}, ctx(false, true), std::string("system.slice:husk:c1"), "c1", "");
  REQUIRE(p.unit);
  CHECK(p.unit->unit == "husk-c1.scope");
  CHECK(p.path == p.unit->cgroup);
  CHECK(p.unit->slice == "system.slice");
  auto user = place_cgroup_on({}, ctx(true, true), std::nullopt, "c1", "");
  REQUIRE(user.unit);
  CHECK(user.unit->slice == "user.slice");
}

TEST_CASE("placement: rootless cgroupfs takes a delegated subtree, or none with the reason") {
  auto p = place_cgroup_on(delegated_host(), ctx(true, false), std::nullopt, "c1", "");
  CHECK(p.path == "/deleg/c1");
  auto none = place_cgroup_on(undelegated_host(), ctx(true, false), std::nullopt, "c1", "");
  CHECK(none.path.empty());
  CHECK_FALSE(none.none_reason.empty());
  // husk sandbox without limits: none, whatever the host delegates.
  auto sandbox = place_cgroup_on(delegated_host(), ctx(true, false), std::nullopt, "c1", "no limits");
  CHECK(sandbox.path.empty());
  CHECK(sandbox.none_reason == "no limits");
  // Root too: a sandbox without limits needs none, and one inside
  // `ip netns exec` sees no cgroup tree to make it in.
  auto root = place_cgroup_on({}, ctx(false, false), std::nullopt, "c1", "no limits");
  CHECK(root.path.empty());
  CHECK(root.none_reason == "no limits");
  CHECK(place_cgroup_on({}, ctx(false, true), std::nullopt, "c1", "no limits").path.empty());
}
