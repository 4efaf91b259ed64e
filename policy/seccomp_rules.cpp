// seccomp-syscalls: the system calls a profile lets through that Docker's
// default profile keeps from a container without capabilities.
#include <algorithm>
#include <cstdint>
#include <map>
#include <set>

#include "policy/internal.h"

namespace husk::policy::detail {
namespace {

// Calls Docker's default profile keeps from a container without
// capabilities that the kernel lets a process without any capability make:
// an explicit rule letting one through undoes the profile. Those that need
// a capability (mount, setns, kexec, modules, reboot...) are left to the
// capability rule; ptrace and process_vm_* are not here since Docker allows
// them from kernel 4.8 on.
struct RiskyCall {
  const char* name;
  // The argument that decides (-1: any call is risky) and whether a
  // condition on it still lets a risky value through.
  int index;
  bool (*admits)(const spec::SeccompArg&);
  const char* why;
};

// CLONE_NEWUSER needs no capability and gives all of them in the new user
// namespace: every other namespace, mounts, setns into what it made.
constexpr uint64_t kNewUser = 0x10000000;
// clone's flags are its second argument on s390x, the first elsewhere.
#if defined(__s390x__)
constexpr int kCloneFlags = 1;
#else
constexpr int kCloneFlags = 0;
#endif

bool admits_new_user(const spec::SeccompArg& a) {
  const std::string& op = a.op;
  if (op == "SCMP_CMP_EQ") return a.value & kNewUser;
  if (op == "SCMP_CMP_MASKED_EQ")  // (arg & value) == valueTwo
    return (a.value_two & ~a.value) == 0 && (!(a.value & kNewUser) || (a.value_two & kNewUser));
  if (op == "SCMP_CMP_LT") return a.value > kNewUser;
  if (op == "SCMP_CMP_LE") return a.value >= kNewUser;
  if (op == "SCMP_CMP_GT") return a.value != UINT64_MAX;
  return true;  // NE, GE
}

// Linux, 32-bit Linux and the 2.6 uname, plain or 32-bit, and the query:
// what Docker's and husk's profiles allow. ADDR_NO_RANDOMIZE,
// READ_IMPLIES_EXEC and the rest weaken the mitigations kernel and user
// exploits meet.
bool admits_personality(const spec::SeccompArg& a) {
  if (a.op != "SCMP_CMP_EQ") return true;
  for (uint64_t safe : {0x0ULL, 0x8ULL, 0x20000ULL, 0x20008ULL, 0xffffffffULL})
    if (a.value == safe) return false;
  return true;
}

// socket(2) reads its family as an int: a condition on the 64-bit argument
// lets AF_VSOCK (40) through when some value whose low 32 bits are 40
// meets it ("!= 40" passes (1 << 32) | 40).
constexpr uint64_t kVsock = 40;
bool admits_vsock(const spec::SeccompArg& a) {
  const std::string& op = a.op;
  constexpr uint64_t kLow = 0xffffffff, kHighest = 0xffffffff00000000 | kVsock;
  if (op == "SCMP_CMP_EQ") return (a.value & kLow) == kVsock;
  if (op == "SCMP_CMP_MASKED_EQ") return (a.value_two & ~a.value) == 0 && ((kVsock ^ a.value_two) & a.value & kLow) == 0;
  if (op == "SCMP_CMP_LT") return a.value > kVsock;
  if (op == "SCMP_CMP_LE") return a.value >= kVsock;
  if (op == "SCMP_CMP_GT") return a.value < kHighest;
  if (op == "SCMP_CMP_GE") return a.value <= kHighest;
  return true;  // NE
}

bool admits_any(const spec::SeccompArg&) { return true; }

const char* const kNamespaceWhy =
    "a user namespace without any capability, and with it all capabilities inside: mounts, every namespace";
const RiskyCall kRiskyCalls[] = {
    {"keyctl", -1, admits_any, "the kernel keyring is not namespaced: the keys of the same uid on the host"},
    {"add_key", -1, admits_any, "the kernel keyring is not namespaced: the keys of the same uid on the host"},
    {"request_key", -1, admits_any, "the kernel keyring is not namespaced: the keys of the same uid on the host"},
    {"io_uring_setup", -1, admits_any, "io_uring works past the filter and is a frequent kernel exploit path"},
    {"io_uring_enter", -1, admits_any, "io_uring works past the filter and is a frequent kernel exploit path"},
    {"io_uring_register", -1, admits_any, "io_uring works past the filter and is a frequent kernel exploit path"},
    {"userfaultfd", -1, admits_any, "stalls the kernel in a page fault: the usual tool to win a kernel race"},
    {"perf_event_open", -1, admits_any, "performance counters: kernel attack surface and side channels on the host"},
    {"bpf", -1, admits_any, "eBPF programs where the host allows them unprivileged: the verifier is attack surface"},
    {"syslog", -1, admits_any, "reads the host's kernel log where dmesg_restrict is 0"},
    {"clone3", -1, admits_any, kNamespaceWhy},  // its flags are behind a pointer
    {"clone", kCloneFlags, admits_new_user, kNamespaceWhy},
    {"unshare", 0, admits_new_user, kNamespaceWhy},
    {"personality", 0, admits_personality, "personalities that weaken exploit mitigations (ADDR_NO_RANDOMIZE...)"},
    {"socket", 0, admits_vsock, "AF_VSOCK sockets reach the hypervisor and other VMs past any network namespace"},
    // 32-bit programs' socket(2): the family is behind a pointer the filter cannot read.
    {"socketcall", -1, admits_any, "socket calls of 32-bit programs, AF_VSOCK included: the filter cannot read their arguments"},
    {"uselib", -1, admits_any, "an obsolete loader interface: kernel attack surface nothing needs"},
    {"ustat", -1, admits_any, "an obsolete filesystem interface: kernel attack surface nothing needs"},
    {"sysfs", -1, admits_any, "an obsolete filesystem interface: kernel attack surface nothing needs"},
    {"vm86", -1, admits_any, "32-bit virtual 8086 mode: kernel attack surface nothing in a container needs"},
    {"vm86old", -1, admits_any, "32-bit virtual 8086 mode: kernel attack surface nothing in a container needs"},
    {"mbind", -1, admits_any, "NUMA placement, which Docker leaves to CAP_SYS_NICE: other tenants' memory and the host's"},
    {"set_mempolicy", -1, admits_any, "NUMA placement, which Docker leaves to CAP_SYS_NICE: other tenants' memory and the host's"},
    {"move_pages", -1, admits_any, "NUMA placement, which Docker leaves to CAP_SYS_NICE: other tenants' memory and the host's"},
    {"migrate_pages", -1, admits_any, "NUMA placement, which Docker leaves to CAP_SYS_NICE: other tenants' memory and the host's"},
    {"fanotify_init", -1, admits_any, "filesystem-wide event watches (unprivileged since Linux 5.13), which Docker leaves to CAP_SYS_ADMIN"},
};

// Architectures whose programs call socket(2) through socketcall(2).
bool lists_32bit(const std::vector<std::string>& arches) {
  static const std::set<std::string> k32 = {"SCMP_ARCH_X86", "SCMP_ARCH_ARM", "SCMP_ARCH_MIPS", "SCMP_ARCH_MIPSEL",
                                            "SCMP_ARCH_PPC", "SCMP_ARCH_S390", "SCMP_ARCH_PARISC"};
  return std::any_of(arches.begin(), arches.end(), [](const std::string& a) { return k32.count(a) > 0; });
}

// Actions that keep the call from running; a tracer or agent (TRACE,
// NOTIFY) may let it run.
bool denies(const std::string& action) {
  return action == "SCMP_ACT_ERRNO" || action == "SCMP_ACT_KILL" || action == "SCMP_ACT_KILL_PROCESS" ||
         action == "SCMP_ACT_KILL_THREAD" || action == "SCMP_ACT_TRAP";
}

// Whether a rule's conditions let a risky call through. As the filter is
// built (seccomp/plan.cpp): conditions on distinct arguments all hold;
// two on one argument become one rule each, any of which lets it through.
bool reaches(const spec::SeccompSyscall& sc, const RiskyCall& risky) {
  if (risky.index < 0 || sc.args.empty()) return true;
  std::map<uint32_t, int> per_index;
  for (const auto& a : sc.args) ++per_index[a.index];
  const bool split = std::any_of(per_index.begin(), per_index.end(), [](const auto& kv) { return kv.second > 1; });
  auto lets_through = [&](const spec::SeccompArg& a) {
    return a.index != static_cast<uint32_t>(risky.index) || risky.admits(a);
  };
  return split ? std::any_of(sc.args.begin(), sc.args.end(), lets_through)
               : std::all_of(sc.args.begin(), sc.args.end(), lets_through);
}

}  // namespace

std::vector<std::pair<std::string, const char*>> risky_calls(const spec::SeccompSyscall& sc,
                                                             const std::vector<std::string>& architectures) {
  std::vector<std::pair<std::string, const char*>> out;
  if (denies(sc.action)) return out;
  for (const auto& name : sc.names)
    for (const auto& risky : kRiskyCalls)
      if (name == risky.name && reaches(sc, risky) && (name != "socketcall" || lists_32bit(architectures)))
        out.push_back({name, risky.why});
  return out;
}

}  // namespace husk::policy::detail
