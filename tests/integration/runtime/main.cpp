// Runner of the end-to-end runtime tests (husk-it-runtime): hit::suite_main
// (root, the template bundle, skips).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "harness.h"

int main(int argc, char** argv) {
  return hit::suite_main("husk-it-runtime", [&] { return Catch::Session().run(argc, argv); });
}
