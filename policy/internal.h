// What the policy sources share; not part of the library's interface (that
// is policy.h).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "policy/policy.h"

namespace husk::policy::detail {

// seccomp_rules.cpp: the calls of syscall rule `sc` that it lets through
// although Docker's default profile keeps them from a container without
// capabilities, each with why that matters, in the order `sc` names them;
// none when `sc` denies (`architectures` is the profile's: socketcall only
// matters to 32-bit programs).
std::vector<std::pair<std::string, const char*>> risky_calls(const spec::SeccompSyscall& sc,
                                                             const std::vector<std::string>& architectures);

}  // namespace husk::policy::detail
