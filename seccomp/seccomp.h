// linux.seccomp -> a seccomp filter. The translation to rules is pure and
// unit-tested; load() is called in the container init right before exec.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "spec/spec.h"

namespace husk::seccomp {

struct ArgCmp {
  unsigned index;
  int op;  // scmp_compare
  uint64_t value, value_two;
};

struct Rule {
  int syscall_nr;        // resolved for the native arch via libseccomp
  uint32_t action;       // SCMP_ACT_* (with errno / trace value folded in)
  std::vector<ArgCmp> args;
};

struct Plan {
  uint32_t default_action = 0;
  std::vector<uint32_t> arches;  // SCMP_ARCH_* besides native
  std::vector<Rule> rules;       // unknown syscall names are skipped (as runc does)
  unsigned flags = 0;            // SECCOMP_FILTER_FLAG_* requested
  bool notify = false;           // some action is SCMP_ACT_NOTIFY
};

// Pure: validate and translate; errors name the field,
// e.g. "linux.seccomp.syscalls[3].action: unknown action \"SCMP_ACT_FOO\"".
Plan plan(const spec::Seccomp& cfg);

// Build and load the filter into the calling process (needs no_new_privs or
// CAP_SYS_ADMIN). Returns the notify listener fd (O_CLOEXEC) when
// plan.notify, else -1.
int load(const Plan& plan);

// Names the features.json seccomp section reports.
std::vector<std::string> known_actions();
std::vector<std::string> known_operators();
std::vector<std::string> known_archs();
std::vector<std::string> known_flags();

}  // namespace husk::seccomp
