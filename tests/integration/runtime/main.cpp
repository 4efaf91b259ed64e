// Runner of the end-to-end runtime tests (husk-it-runtime): hit::suite_main
// (root, the template bundle, skips).
#include "catch_run.h"

#include "harness.h"

int main(int argc, char** argv) {
  return hit::suite_main("husk-it-runtime", [&] { return husk_test::run_catch(argc, argv); });
}
