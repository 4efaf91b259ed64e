// Running the test cases from a test binary's main. Catch2's Session is part
// of its implementation, which only tests/catch_impl.cpp compiles (once for
// every test binary).
#pragma once

namespace husk_test {

// Catch::Session().run(argc, argv)
int run_catch(int argc, char** argv);

}  // namespace husk_test
