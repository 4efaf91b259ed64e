// Runner of the security regression suite (husk-security): hit::suite_main
// (root, the template bundle, skips) and the static hostile helper, built
// once.
#include <cstdio>

#include "catch_run.h"
#include "sec.h"

int main(int argc, char** argv) {
  return hit::suite_main("husk-security", [&] {
    sec::build_hostile();
    if (sec::hostile_binary().empty()) std::fprintf(stderr, "husk-security: %s\n", sec::hostile_error().c_str());
    int rc = husk_test::run_catch(argc, argv);
    sec::remove_hostile();
    return rc;
  });
}
