// Many containers at once in one --root, as an engine under load does it.
#include <catch2/catch.hpp>

#include <algorithm>
#include <memory>
#include <thread>

#include "harness.h"

using namespace hit;

TEST_CASE("50 containers created and deleted concurrently", "[concurrency]") {
  constexpr int kCount = 50;
  TempDir shared("husk-it-r-");
  std::vector<std::unique_ptr<Container>> cs;
  for (int i = 0; i < kCount; ++i) {
    cs.push_back(std::make_unique<Container>("conc"));
    cs[i]->share_root(shared.path);
    cs[i]->args({"sleep", "60"});
    cs[i]->write_config();
  }
  auto in_parallel = [&](auto fn) {
    std::vector<Result> results(kCount);
    std::vector<std::thread> ts;
    for (int i = 0; i < kCount; ++i) ts.emplace_back([&, i] { results[i] = fn(*cs[i]); });
    for (auto& t : ts) t.join();
    return results;
  };

  auto created = in_parallel([](Container& c) { return c.rt({"create", "--bundle", c.bundle, c.id}); });
  for (int i = 0; i < kCount; ++i) {
    INFO(cs[i]->id << ": " << created[i].err);
    CHECK(created[i].ok());
  }
  auto l = cs[0]->rt({"list", "-q"});
  REQUIRE(l.ok());
  auto ids = lines(l.out);
  CHECK(ids.size() == kCount);
  for (auto& c : cs) CHECK(std::count(ids.begin(), ids.end(), c->id) == 1);

  auto started = in_parallel([](Container& c) { return c.start(); });
  for (int i = 0; i < kCount; ++i) {
    INFO(cs[i]->id << ": " << started[i].err);
    CHECK(started[i].ok());
  }

  auto deleted = in_parallel([](Container& c) { return c.del(true); });
  for (int i = 0; i < kCount; ++i) {
    INFO(cs[i]->id << ": " << deleted[i].err);
    CHECK(deleted[i].ok());
  }
  for (auto& c : cs) {
    auto left = leftovers(*c);
    for (auto& x : left) INFO(x);
    CHECK(left.empty());
  }
}
