// /dev inside the container.
#include <catch2/catch.hpp>

#include "harness.h"

using namespace hit;

TEST_CASE("default devices with the right numbers", "[dev]") {
  Container c("dev");
  auto r = c.run_ok({"sh", "-c",
                     "for d in null zero full random urandom tty; do echo $d $(stat -c '%F %t:%T %a' /dev/$d); done; "
                     "echo ptmx $(readlink /dev/ptmx || stat -c '%F %t:%T' /dev/ptmx); "
                     "for l in fd stdin stdout stderr; do echo $l $(readlink /dev/$l); done; "
                     "head -c 4 /dev/zero | wc -c; head -c 16 /dev/urandom | wc -c; "
                     "if echo x > /dev/full; then echo full-ok; fi"});
  auto out = r.out;
  CHECK(contains(out, "null character special file 1:3 666\n"));
  CHECK(contains(out, "zero character special file 1:5 666\n"));
  CHECK(contains(out, "full character special file 1:7 666\n"));
  CHECK(contains(out, "random character special file 1:8 666\n"));
  CHECK(contains(out, "urandom character special file 1:9 666\n"));
  CHECK(contains(out, "tty character special file 5:0 666\n"));
  CHECK((contains(out, "ptmx pts/ptmx\n") || contains(out, "ptmx /dev/pts/ptmx\n") ||
         contains(out, "ptmx character special file 5:2\n")));
  CHECK(contains(out, "fd /proc/self/fd\n"));
  CHECK(contains(out, "stdin /proc/self/fd/0\n"));
  CHECK(contains(out, "stdout /proc/self/fd/1\n"));
  CHECK(contains(out, "stderr /proc/self/fd/2\n"));
  CHECK(contains(out, "4\n16\n"));
  CHECK_FALSE(contains(out, "full-ok"));
  CHECK(contains(r.err, "No space left on device"));
}

TEST_CASE("host devices are not visible", "[dev]") {
  Container c("dev-host");
  auto r = c.run_ok({"sh", "-c", "ls /dev"});
  for (auto d : {"sda", "vda", "nvme0", "kmsg", "mem", "port", "loop0"}) {
    INFO(d);
    CHECK_FALSE(contains("\n" + r.out, std::string("\n") + d + "\n"));
  }
}

TEST_CASE("linux.devices entries are created with mode, uid and gid", "[dev]") {
  Container c("dev-extra");
  c.cfg["linux"]["devices"] = json::array(
      {{{"path", "/dev/fuse"}, {"type", "c"}, {"major", 10}, {"minor", 229}, {"fileMode", 0620},
        {"uid", 1000}, {"gid", 65534}},
       {{"path", "/dev/myfifo"}, {"type", "p"}, {"fileMode", 0640}, {"uid", 0}, {"gid", 1000}},
       {{"path", "/dev/sub/blk"}, {"type", "b"}, {"major", 7}, {"minor", 200}, {"fileMode", 0600}}});
  auto r = c.run_ok({"sh", "-c",
                     "stat -c '%F %t:%T %a %u %g' /dev/fuse; stat -c '%F %a %u %g' /dev/myfifo; "
                     "stat -c '%F %t:%T %a' /dev/sub/blk"});
  CHECK(lines(r.out) == std::vector<std::string>{"character special file a:e5 620 1000 65534",
                                                 "fifo 640 0 1000", "block special file 7:c8 600"});
}
