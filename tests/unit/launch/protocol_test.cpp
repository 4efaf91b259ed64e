#include <catch2/catch.hpp>

#include "base/error.h"
#include "launch/protocol.h"

using husk::Error;
using namespace husk::rt;

TEST_CASE("protocol: the pid message round-trips") {
  CHECK(parse_pid_payload(pid_payload(1)) == 1);
  CHECK(parse_pid_payload(pid_payload(4194304)) == 4194304);
  CHECK(parse_pid_payload("2147483647") == 2147483647);
}

TEST_CASE("protocol: a pid message that is not a plain decimal pid is an Error") {
  for (const char* junk : {"", "0", "-1", "+12", " 12", "12 ", "12abc", "0x10", "2147483648", "99999999999"}) {
    INFO("payload \"" << junk << "\"");
    CHECK_THROWS_WITH(parse_pid_payload(junk), Catch::Matchers::Contains("sync: invalid pid"));
    CHECK_THROWS_AS(parse_pid_payload(junk), Error);
  }
}

TEST_CASE("protocol: message names for errors") { CHECK(msg_name(Msg::kReady) == "'R'"); }
