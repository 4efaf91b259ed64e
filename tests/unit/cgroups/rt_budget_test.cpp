// The v1 realtime budget planner: which ancestors husk raises, and when the
// container's realtimeRuntime cannot fit.
#include <catch2/catch.hpp>

#include "cgroups/internal.h"

using husk::Error;
namespace cg = husk::cgroups;

namespace {

cg::RtAncestor level(const std::string& path, int64_t runtime, uint64_t others = 0) {
  cg::RtAncestor a;
  a.path = path;
  a.runtime = runtime;
  a.others = others;
  a.raisable = path == "/husk" || path.rfind("/husk/", 0) == 0;
  return a;
}

}  // namespace

TEST_CASE("rt budget: husk's default parent is raised to what the container asks") {
  // root 950000/1000000, /husk new (0): the container wants 10000.
  auto w = cg::plan_rt_budget({level("", 950000), level("/husk", 0)}, 10000, 1000000);
  REQUIRE(w.size() == 1);
  CHECK(w[0].first == "/husk");
  CHECK(w[0].second == 10000);
}

TEST_CASE("rt budget: room already there means no write") {
  CHECK(cg::plan_rt_budget({level("", 950000), level("/husk", 50000, cg::rt_share(20000, 1000000))}, 10000, 1000000)
            .empty());
  CHECK(cg::plan_rt_budget({level("", -1)}, 10000, 1000000).empty());
}

TEST_CASE("rt budget: siblings' budgets add up, and raises go top-down") {
  // /husk/a already holds 30000; the new /husk/a/b/c needs 10000 more in /husk.
  auto w = cg::plan_rt_budget({level("", 950000), level("/husk", 30000, cg::rt_share(30000, 1000000)),
                               level("/husk/a", 0), level("/husk/a/b", 0)},
                              10000, 1000000);
  REQUIRE(w.size() == 3);
  CHECK(w[0] == std::make_pair(std::string("/husk"), int64_t{40000}));
  CHECK(w[1] == std::make_pair(std::string("/husk/a"), int64_t{10000}));
  CHECK(w[2] == std::make_pair(std::string("/husk/a/b"), int64_t{10000}));
}

TEST_CASE("rt budget: a different period keeps the share, rounded up") {
  // 5000 per 100000 is 5%; /husk has a 1 s period, so it needs 50000.
  auto w = cg::plan_rt_budget({level("", 950000), level("/husk", 0)}, 5000, 100000);
  REQUIRE(w.size() == 1);
  CHECK(w[0].second >= 50000);
  CHECK(cg::rt_share(w[0].second, 1000000) >= cg::rt_share(5000, 100000));
}

TEST_CASE("rt budget: a host parent without room is an error naming the field and the cgroup") {
  try {
    cg::plan_rt_budget({level("", 950000), level("/kubepods", 0)}, 10000, 1000000);
    FAIL("no error");
  } catch (const Error& e) {
    std::string m = e.what();
    CHECK(m.find("linux.resources.cpu.realtimeRuntime") != std::string::npos);
    CHECK(m.find("/kubepods") != std::string::npos);
  }
  // The root's own budget is never raised.
  CHECK_THROWS_WITH(cg::plan_rt_budget({level("", 950000, cg::rt_share(945000, 1000000)), level("/husk", 0)}, 10000,
                                       1000000),
                    Catch::Contains("the root cgroup"));
}

TEST_CASE("rt budget: runtimes the kernel takes do not overflow the plan") {
  // 2^44 us is the kernel's bound; a period of the same size is a 100% share.
  int64_t big = int64_t{1} << 44;
  CHECK(cg::rt_share(big, static_cast<uint64_t>(big)) == uint64_t{1} << cg::kRtShift);
  CHECK_THROWS_WITH(cg::plan_rt_budget({level("", -1), level("/husk", 0)}, big, 1000000),
                    Catch::Contains("more than the period"));
  auto w = cg::plan_rt_budget({level("", -1), level("/husk", 0)}, big / 2, static_cast<uint64_t>(big));
  REQUIRE(w.size() == 1);
  CHECK(w[0].second == 500000);  // half of /husk's 1 s period
}
