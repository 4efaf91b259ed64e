// base: the mountinfo parser every library shares.
#include <catch2/catch.hpp>

#include "base/mountinfo.h"

namespace base = husk::base;

TEST_CASE("mountinfo: fields, optional fields and escaped paths") {
  auto ms = base::parse_mountinfo(
      "36 35 98:0 /mnt1 /mnt/with\\040space rw,noatime master:1 - ext3 /dev/root rw,errors=continue\n"
      "40 36 0:33 / /sys/fs/cgroup/memory rw shared:7 - cgroup cgroup rw,memory\n"
      "41 36 0:34 / /no-optional rw - tmpfs tmpfs rw\n"
      "garbage line\n"
      "42 36 0:35 / /odd\\\\x rw - tmpfs none\n");
  REQUIRE(ms.size() == 4);
  CHECK(ms[0].id == 36);
  CHECK(ms[0].parent == 35);
  CHECK(ms[0].root == "/mnt1");
  CHECK(ms[0].mount_point == "/mnt/with space");
  CHECK(ms[0].fstype == "ext3");
  CHECK(ms[0].source == "/dev/root");
  CHECK(ms[0].super_options == "rw,errors=continue");
  CHECK(ms[0].options == "rw,noatime");
  CHECK(ms[0].optional == "master:1");
  CHECK(ms[1].optional == "shared:7");
  CHECK(ms[2].options == "rw");
  CHECK(ms[2].optional.empty());
  CHECK(ms[1].fstype == "cgroup");
  CHECK(ms[1].super_options == "rw,memory");
  CHECK(ms[2].mount_point == "/no-optional");
  // A backslash not followed by three octal digits stays as it is.
  CHECK(ms[3].mount_point == "/odd\\\\x");
  CHECK(ms[3].super_options.empty());
}

TEST_CASE("mountinfo: this process's own table has /") {
  bool root = false;
  for (const auto& m : base::read_mountinfo()) root = root || m.mount_point == "/";
  CHECK(root);
  CHECK_THROWS_WITH(base::read_mountinfo("/proc/self/no-such-file"), Catch::Contains("/proc/self/no-such-file"));
}
