#include <catch2/catch.hpp>

#include "base/error.h"
#include "launch/process.h"

using husk::rt::find_executable;

TEST_CASE("args[0] is found on the container's PATH") {
  CHECK(find_executable("sh", {"PATH=/nonexistent:/bin"}) == "/bin/sh");
  CHECK(find_executable("/bin/sh", {}) == "/bin/sh");
  // the default PATH applies when env has none
  CHECK(find_executable("sh", {"HOME=/"}).find("/sh") != std::string::npos);
}

TEST_CASE("a missing executable is an error naming it") {
  REQUIRE_THROWS_WITH(find_executable("no-such-binary-xyz", {"PATH=/bin"}),
                      "exec: \"no-such-binary-xyz\": executable file not found in $PATH");
  REQUIRE_THROWS_WITH(find_executable("/etc/passwd", {}), Catch::Contains("exec: \"/etc/passwd\""));
  // runc's wording, which docker maps to exit status 126.
  REQUIRE_THROWS_WITH(find_executable("/", {}), "exec: \"/\": permission denied");
}
