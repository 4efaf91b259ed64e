#include <signal.h>

#include <catch2/catch.hpp>

#include "base/error.h"
#include "launch/signals.h"

using husk::rt::parse_signal;

TEST_CASE("signal names and numbers as kill accepts them") {
  CHECK(parse_signal("KILL") == SIGKILL);
  CHECK(parse_signal("SIGKILL") == SIGKILL);
  CHECK(parse_signal("sigterm") == SIGTERM);
  CHECK(parse_signal("9") == 9);
  CHECK(parse_signal("15") == SIGTERM);
  CHECK(parse_signal("0") == 0);  // a liveness probe
  CHECK(parse_signal("HUP") == SIGHUP);
  CHECK(parse_signal("SIGWINCH") == SIGWINCH);
  CHECK(parse_signal("RTMIN") == SIGRTMIN);
  CHECK(parse_signal("RTMIN+3") == SIGRTMIN + 3);
  CHECK(parse_signal("SIGRTMAX-1") == SIGRTMAX - 1);
}

TEST_CASE("invalid signals are refused with the input named") {
  for (const char* bad : {"", "-1", "65", "FOO", "SIG", "KILLX", "RTMIN+99", "RTMAX+1", "9x"})
    REQUIRE_THROWS_WITH(parse_signal(bad), Catch::Contains("invalid signal \"" + std::string(bad) + "\""));
}
