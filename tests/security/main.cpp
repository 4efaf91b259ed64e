// Runner of the security regression suite (husk-security): needs root;
// builds the template bundle and the static hostile helper once; skipped
// cases are reported by tests/skip.h.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <csignal>
#include <cstdio>
#include <exception>

#include <unistd.h>

#include "sec.h"
#include "skip.h"

int main(int argc, char** argv) {
  if (::geteuid() != 0) {
    // The only whole-suite skip: scripts/test reads this line.
    std::printf("SKIP: the security regression suite needs root\n");
    return 0;
  }
  std::signal(SIGPIPE, SIG_IGN);
  std::fprintf(stderr, "runtime under test: %s\n", hit::runtime().c_str());
  try {
    hit::build_template();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "husk-security: %s\n", e.what());
    hit::destroy_template();
    return 2;
  }
  sec::build_hostile();
  if (sec::hostile_binary().empty()) std::fprintf(stderr, "husk-security: %s\n", sec::hostile_error().c_str());
  int rc = Catch::Session().run(argc, argv);
  sec::remove_hostile();
  hit::destroy_template();
  return husk_test::finish(rc);
}
