// Runner for the end-to-end runtime tests: needs root; builds the template
// bundle once with scripts/make-bundle before any test runs.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <csignal>
#include <cstdio>
#include <exception>

#include <unistd.h>

#include "harness.h"
#include "skip.h"

int main(int argc, char** argv) {
  if (::geteuid() != 0) {
    std::fprintf(stderr, "husk-it-runtime: must run as root\n");
    return 2;
  }
  // Writes to a console whose container already exited must not kill us.
  std::signal(SIGPIPE, SIG_IGN);
  std::fprintf(stderr, "runtime under test: %s\n", hit::runtime().c_str());
  try {
    hit::build_template();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "husk-it-runtime: %s\n", e.what());
    hit::destroy_template();
    return 2;
  }
  int rc = Catch::Session().run(argc, argv);
  hit::destroy_template();
  return husk_test::finish(rc);
}
