// Catch2's implementation, compiled once for every test binary. A
// CATCH_CONFIG_RUNNER in each binary's main compiled all of Catch again:
// some 12 s of a fresh build per binary.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "catch_run.h"

int husk_test::run_catch(int argc, char** argv) { return Catch::Session().run(argc, argv); }
