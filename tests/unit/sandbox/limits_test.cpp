// Where the sandbox's limits go as root: a cgroup when the hierarchies of
// their controllers are mounted, else rlimits (root_has_cgroups).
#include <catch2/catch.hpp>

#include "sandbox/internal.h"

using namespace husk::rt;
namespace cg = husk::cgroups;

namespace {

SandboxOptions limits(uint64_t pids, const std::string& memory, const std::string& cpus) {
  SandboxOptions o;
  o.args = {"make"};
  o.pids = pids;
  o.memory = memory;
  o.cpus = cpus;
  return o;
}

cg::Hierarchies v1(std::initializer_list<const char*> controllers) {
  cg::Hierarchies h;
  h.mode = cg::Mode::hybrid;
  h.unified = "/sys/fs/cgroup/unified";
  for (const char* c : controllers) h.v1[c] = std::string("/sys/fs/cgroup/") + c;
  return h;
}

bool all_writable(const std::string&) { return true; }

}  // namespace

TEST_CASE("sandbox as root: limits in a cgroup only where their hierarchies are mounted", "[sandbox]") {
  cg::Hierarchies unified;
  unified.unified = "/sys/fs/cgroup";
  CHECK(root_has_cgroups(limits(10, "64m", "1"), unified, all_writable));
  CHECK(root_has_cgroups(limits(10, "64m", "1"), v1({"devices", "pids", "memory", "cpu"}), all_writable));
  CHECK(root_has_cgroups(limits(0, "64m", ""), v1({"devices", "memory"}), all_writable));
  // `ip netns exec`: a /sys of its own, no cgroup file system in it.
  cg::Hierarchies none;
  none.mode = cg::Mode::legacy;
  CHECK_FALSE(root_has_cgroups(limits(0, "64m", ""), none, all_writable));
  // One controller missing is enough: the limits go to rlimits together.
  CHECK_FALSE(root_has_cgroups(limits(10, "64m", ""), v1({"devices", "memory"}), all_writable));
  // The device policy is written in every cgroup.
  CHECK_FALSE(root_has_cgroups(limits(10, "", ""), v1({"pids"}), all_writable));
  // Mounted read-only (a container's): no cgroup can be made there.
  auto read_only = [](const std::string& dir) { return dir != "/sys/fs/cgroup/memory"; };
  CHECK_FALSE(root_has_cgroups(limits(0, "64m", ""), v1({"devices", "memory"}), read_only));
  CHECK(root_has_cgroups(limits(10, "", ""), v1({"devices", "pids"}), read_only));
  CHECK_FALSE(root_has_cgroups(limits(10, "", ""), unified, [](const std::string&) { return false; }));
}
