// Issue 23, section 2: a device node the image carries (here /kmsg, the
// host's kernel log, c 1:11, mode 0666, in the rootfs) is usable by a
// container without capabilities exactly when the cgroup's device rules
// allow it. So the rules are what the policy judges: without a rule the
// node does not open; with `allow c 1:11 rw` in linux.resources.devices,
// `husk check --policy restricted` reports it and create under the
// operator's policy refuses the bundle. The host's kernel log (dmesg) shows
// whether the container's line got there.
//
// How it failed against 7bdf3ce (the husk before issue 23): check listed no
// host-devices finding for the rule, and create under `policy: baseline`
// ran the container, whose line appeared in the host's dmesg.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "sec.h"

using namespace hit;
using namespace sec;

namespace {

bool in_kernel_log(const std::string& marker) { return contains(run({"dmesg"}).out, marker); }

}  // namespace

TEST_CASE("issue 23: a kmsg node in the rootfs opens only through a device rule the policy refuses",
          "[issue-23][devices][security]") {
  if (runtime_is_runc()) return skip("husk check and the operator's policy are husk's");
  const std::string marker = "husk-sec-kmsg-" + unique_id("dev");
  Container c("kmsg");
  REQUIRE(::mknod((c.rootfs + "/kmsg").c_str(), S_IFCHR | 0666, ::makedev(1, 11)) == 0);
  REQUIRE(::chmod((c.rootfs + "/kmsg").c_str(), 0666) == 0);
  c.cfg["process"]["user"] = {{"uid", 1000}, {"gid", 1000}};
  c.cfg["process"]["capabilities"] = json::object();
  c.cfg["process"]["noNewPrivileges"] = true;
  c.args({"sh", "-c", "echo " + marker + " > /kmsg && echo WROTE"});

  // No rule for it: the cgroup refuses the open.
  auto denied = c.run();
  INFO(denied.out << denied.err);
  CHECK_FALSE(contains(denied.out, "WROTE"));
  CHECK_FALSE(in_kernel_log(marker));
  CHECK(c.del(true).code == 0);

  c.cfg["linux"]["resources"]["devices"] = {{{"allow", true}, {"type", "c"}, {"major", 1}, {"minor", 11}, {"access", "rw"}}};
  c.write_config();
  auto checked = run({runtime(), "check", "--policy", "restricted", c.bundle});
  INFO(checked.out << checked.err);
  CHECK(checked.code == 1);
  CHECK(contains(checked.out, "host-devices"));
  CHECK(contains(checked.out, "linux.resources.devices[0]"));
  CHECK(contains(checked.out, "allow c 1:11 rw"));

  TempDir etc("husk-sec-kmsg-etc-");
  write_file(etc.path + "/config.yaml", "policy: baseline\n");
  auto refused = run({"env", "HUSK_CONFIG=" + etc.path + "/config.yaml", runtime(), "--root", c.root, "run", "--bundle",
                      c.bundle, c.id});
  INFO(refused.out << refused.err);
  CHECK(refused.code != 0);
  CHECK(contains(refused.err, "linux.resources.devices[0] = allow c 1:11 rw (host-devices: "));
  CHECK_FALSE(contains(refused.out, "WROTE"));
  CHECK_FALSE(in_kernel_log(marker));
  CHECK(leftovers(c).empty());
}
