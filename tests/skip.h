// Skipped test cases. Catch2 v2 has no skip: a case that returns early counts
// as passed. HUSK_SKIP records the case and its reason; the runner's main
// prints them as "SKIP: <case>: <reason>" lines after the run and exits with
// kSkipExit when everything else passed, which ctest (SKIP_RETURN_CODE) and
// scripts/test report as skips, never as passes.
#pragma once

#include <catch2/catch.hpp>
#include <cstdio>
#include <string>
#include <vector>

namespace husk_test {

constexpr int kSkipExit = 77;

inline std::vector<std::string>& skipped() {
  static std::vector<std::string> list;
  return list;
}

inline void record_skip(const std::string& reason) {
  skipped().push_back(Catch::getResultCapture().getCurrentTestName() + ": " + reason);
  WARN("SKIP: " << reason);
}

// The runner's exit code: a failure wins, then a skip.
inline int finish(int catch_rc) {
  for (const auto& s : skipped()) std::printf("SKIP: %s\n", s.c_str());
  std::fflush(stdout);
  if (catch_rc != 0) return catch_rc;
  return skipped().empty() ? 0 : kSkipExit;
}

}  // namespace husk_test

#define HUSK_SKIP(reason)                \
  do {                                   \
    ::husk_test::record_skip(reason);    \
    return;                              \
  } while (0)
