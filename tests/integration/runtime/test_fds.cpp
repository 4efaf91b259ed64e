// File descriptors of the caller do not leak into the container, except
// the ones --preserve-fds asks for.
#include <catch2/catch.hpp>

#include <map>

#include <fcntl.h>
#include <unistd.h>

#include "harness.h"

using namespace hit;

namespace {

// fd number -> link target, from `ls -l /proc/self/fd` inside.
std::map<int, std::string> parse_fd_listing(const std::string& out) {
  std::map<int, std::string> m;
  for (auto& l : lines(out)) {
    if (l.empty() || l[0] != 'l') continue;
    auto arrow = l.find(" -> ");
    if (arrow == std::string::npos) {
      // ls's own directory fd is closed again by the time ls reads the link.
      m[std::stoi(l.substr(l.rfind(' ') + 1))] = "";
      continue;
    }
    auto sp = l.rfind(' ', arrow - 1);
    m[std::stoi(l.substr(sp + 1, arrow - sp - 1))] = l.substr(arrow + 4);
  }
  return m;
}

// The fd ls itself holds for reading /proc/self/fd.
bool is_ls_own(const std::string& target) { return target.empty() || target.rfind("/proc/", 0) == 0; }

}  // namespace

TEST_CASE("stray fds of the caller are closed", "[fds]") {
  Container c("fds");
  write_file(c.bundle + "/leak-a", "a");
  write_file(c.bundle + "/leak-b", "b");
  // Deliberately without O_CLOEXEC, as a careless engine would leave them.
  Fd a(::open((c.bundle + "/leak-a").c_str(), O_RDONLY));
  Fd b(::open((c.bundle + "/leak-b").c_str(), O_RDONLY));
  REQUIRE(a);
  REQUIRE(b);
  c.args({"ls", "-l", "/proc/self/fd"});
  auto r = c.run({}, SpawnOpts{.extra_fds = {{a.get(), 3}, {b.get(), 7}, {b.get(), b.get()}}});
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  auto fds = parse_fd_listing(r.out);
  REQUIRE(fds.count(0));
  REQUIRE(fds.count(1));
  REQUIRE(fds.count(2));
  for (auto& [n, target] : fds) {
    if (n <= 2) continue;
    INFO("fd " << n << " -> " << target);
    CHECK(is_ls_own(target));
  }
  CHECK(fds.size() == 4);
}

TEST_CASE("--preserve-fds passes fds from 3 on", "[fds]") {
  Container c("fds-keep");
  write_file(c.bundle + "/keep-3", "kept\n");
  write_file(c.bundle + "/drop-4", "dropped\n");
  Fd k(::open((c.bundle + "/keep-3").c_str(), O_RDONLY));
  Fd d(::open((c.bundle + "/drop-4").c_str(), O_RDONLY));
  c.args({"sh", "-c", "cat <&3; ls -l /proc/self/fd"});
  auto r = c.create({"--preserve-fds", "1"}, SpawnOpts{.extra_fds = {{k.get(), 3}, {d.get(), 4}}});
  INFO(r.err);
  REQUIRE(r.ok());
  REQUIRE(c.start().ok());
  REQUIRE(c.wait_status("stopped"));
  auto out = c.container_out();
  INFO(out);
  CHECK(out.rfind("kept\n", 0) == 0);
  auto fds = parse_fd_listing(out);
  REQUIRE(fds.count(3));
  CHECK(contains(fds[3], "keep-3"));
  for (auto& [n, target] : fds) {
    if (n <= 3) continue;
    INFO("fd " << n << " -> " << target);
    CHECK(is_ls_own(target));
    CHECK_FALSE(contains(target, "drop-4"));
  }
}
