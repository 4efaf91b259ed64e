// detail::risky_calls on one syscall rule at a time: the calls it lets
// through, in its own order, and none when its action denies.
#include <catch2/catch.hpp>

#include "policy/internal.h"

using husk::policy::detail::risky_calls;
namespace spec = husk::spec;

namespace {

std::vector<std::string> names(const spec::SeccompSyscall& sc, const std::vector<std::string>& arches = {}) {
  std::vector<std::string> out;
  for (const auto& [name, why] : risky_calls(sc, arches)) {
    CHECK(why != nullptr);
    out.push_back(name);
  }
  return out;
}

}  // namespace

TEST_CASE("risky_calls: the risky names an allowing rule lists, in its order", "[policy][seccomp]") {
  spec::SeccompSyscall sc{{"read", "bpf", "keyctl", "write"}, "SCMP_ACT_ALLOW", std::nullopt, {}};
  CHECK(names(sc) == std::vector<std::string>{"bpf", "keyctl"});
  sc.action = "SCMP_ACT_NOTIFY";  // an agent may let it run
  CHECK(names(sc) == std::vector<std::string>{"bpf", "keyctl"});
  for (const char* deny : {"SCMP_ACT_ERRNO", "SCMP_ACT_KILL", "SCMP_ACT_KILL_PROCESS", "SCMP_ACT_KILL_THREAD",
                           "SCMP_ACT_TRAP"}) {
    sc.action = deny;
    CHECK(names(sc).empty());
  }
}

TEST_CASE("risky_calls: a condition that keeps the risky value out", "[policy][seccomp]") {
  // unshare without CLONE_NEWUSER (0x10000000): flags == 0 only.
  spec::SeccompSyscall sc{{"unshare"}, "SCMP_ACT_ALLOW", std::nullopt, {{0, 0, 0, "SCMP_CMP_EQ"}}};
  CHECK(names(sc).empty());
  sc.args = {{0, 0x10000000, 0, "SCMP_CMP_EQ"}};
  CHECK(names(sc) == std::vector<std::string>{"unshare"});
  // A condition on another argument decides nothing.
  sc.args = {{1, 0, 0, "SCMP_CMP_EQ"}};
  CHECK(names(sc) == std::vector<std::string>{"unshare"});
}

TEST_CASE("risky_calls: socketcall only where 32-bit programs run", "[policy][seccomp]") {
  spec::SeccompSyscall sc{{"socketcall"}, "SCMP_ACT_ALLOW", std::nullopt, {}};
  CHECK(names(sc, {"SCMP_ARCH_X86_64"}).empty());
  CHECK(names(sc, {"SCMP_ARCH_X86_64", "SCMP_ARCH_X86"}) == std::vector<std::string>{"socketcall"});
}
