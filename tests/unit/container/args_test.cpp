#include <catch2/catch.hpp>

#include "base/error.h"
#include "container/args.h"

using husk::Error;
using husk::rt::parse_decimal;
using husk::rt::parse_user;

TEST_CASE("parse_decimal takes plain decimal digits within range only") {
  CHECK(parse_decimal("0", 10, "n") == 0);
  CHECK(parse_decimal("10", 10, "n") == 10);
  CHECK(parse_decimal("007", 10, "n") == 7);
  CHECK(parse_decimal("18446744073709551615", UINT64_MAX, "n") == UINT64_MAX);
  for (const char* bad : {"", "11", "-1", "+1", " 1", "1 ", "0x1", "1e1", "1.0", "1a", "99999999999999999999999"}) {
    INFO(bad);
    CHECK_THROWS_AS(parse_decimal(bad, 10, "n"), Error);
  }
  CHECK_THROWS_AS(parse_decimal("18446744073709551616", UINT64_MAX, "n"), Error);
  CHECK_THROWS_WITH(parse_decimal("x", 3, "--preserve-fds"), "--preserve-fds: \"x\" is not a number between 0 and 3");
}

TEST_CASE("parse_user: UID[:GID], never (uid_t)-1, nothing that wraps") {
  auto u = parse_user("1000");
  CHECK(u.uid == 1000);
  CHECK_FALSE(u.gid);
  u = parse_user("1000:100");
  CHECK(u.uid == 1000);
  CHECK(*u.gid == 100);
  CHECK(parse_user("4294967294:0").uid == 4294967294u);
  // Each of these once ran the process as another id, most of them as root.
  for (const char* bad : {"1000x", "1000:1000x", "1000:1000:1000", " 1000", "+1000", "-1", "0x3e8", "1e3",
                          "4294967296", "4294968296", "4294967295", "0:4294967295", "4294967295:0", ":", "1000:",
                          ":1000", ""}) {
    INFO("'" << bad << "'");
    CHECK_THROWS_AS(parse_user(bad), Error);
  }
}
