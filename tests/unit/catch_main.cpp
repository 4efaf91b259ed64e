#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "skip.h"

int main(int argc, char** argv) { return husk_test::finish(Catch::Session().run(argc, argv)); }
