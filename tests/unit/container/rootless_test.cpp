#include <catch2/catch.hpp>

#include "base/error.h"
#include "container/rootless.h"

using husk::Error;
using husk::rt::detect_rootless;
using husk::rt::parse_rootless_flag;

TEST_CASE("--rootless takes auto and Go's boolean spellings, as runc's flag does") {
  CHECK(parse_rootless_flag("") == std::nullopt);
  CHECK(parse_rootless_flag("auto") == std::nullopt);
  for (const char* t : {"true", "1", "t", "T", "TRUE", "True"}) CHECK(parse_rootless_flag(t) == true);
  for (const char* f : {"false", "0", "f", "F", "FALSE", "False"}) CHECK(parse_rootless_flag(f) == false);
  for (const char* bad : {"yes", "no", "Auto", "tRUE", " true", "2"}) {
    INFO(bad);
    CHECK_THROWS_WITH(parse_rootless_flag(bad), Catch::Contains("--rootless: \"") && Catch::Contains("auto"));
  }
}

TEST_CASE("an explicit --rootless wins over detection") {
  CHECK(detect_rootless(true));
  CHECK_FALSE(detect_rootless(false));
}
