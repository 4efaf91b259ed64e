// linux.seccomp validation and translation to libseccomp values. Pure: only
// libseccomp's name tables are consulted, nothing touches the kernel.
#include <linux/seccomp.h>
#include <seccomp.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <optional>
#include <string_view>

#include "seccomp/seccomp.h"

namespace husk::seccomp {
namespace {

constexpr unsigned kMaxArgs = 6;  // a syscall has at most six arguments
constexpr uint32_t kMaxErrno = 0xffff;  // SECCOMP_RET_DATA is 16 bits

struct ActionName {
  std::string_view name;
  uint32_t base;      // for ERRNO/TRACE the errno goes in the low 16 bits
  bool takes_errno;
};

constexpr std::array<ActionName, 9> kActions{{
    {"SCMP_ACT_KILL", SCMP_ACT_KILL, false},
    {"SCMP_ACT_KILL_PROCESS", SCMP_ACT_KILL_PROCESS, false},
    {"SCMP_ACT_KILL_THREAD", SCMP_ACT_KILL_THREAD, false},
    {"SCMP_ACT_TRAP", SCMP_ACT_TRAP, false},
    {"SCMP_ACT_ERRNO", SCMP_ACT_ERRNO(0), true},
    {"SCMP_ACT_TRACE", SCMP_ACT_TRACE(0), true},
    {"SCMP_ACT_ALLOW", SCMP_ACT_ALLOW, false},
    {"SCMP_ACT_LOG", SCMP_ACT_LOG, false},
    {"SCMP_ACT_NOTIFY", SCMP_ACT_NOTIFY, false},
}};

constexpr std::array<std::pair<std::string_view, scmp_compare>, 7> kOperators{{
    {"SCMP_CMP_NE", SCMP_CMP_NE},
    {"SCMP_CMP_LT", SCMP_CMP_LT},
    {"SCMP_CMP_LE", SCMP_CMP_LE},
    {"SCMP_CMP_EQ", SCMP_CMP_EQ},
    {"SCMP_CMP_GE", SCMP_CMP_GE},
    {"SCMP_CMP_GT", SCMP_CMP_GT},
    {"SCMP_CMP_MASKED_EQ", SCMP_CMP_MASKED_EQ},
}};

// The runtime-spec list (libseccomp 2.5 names).
constexpr std::array<std::string_view, 19> kArchs{
    "SCMP_ARCH_X86",       "SCMP_ARCH_X86_64",    "SCMP_ARCH_X32",
    "SCMP_ARCH_ARM",       "SCMP_ARCH_AARCH64",   "SCMP_ARCH_MIPS",
    "SCMP_ARCH_MIPS64",    "SCMP_ARCH_MIPS64N32", "SCMP_ARCH_MIPSEL",
    "SCMP_ARCH_MIPSEL64",  "SCMP_ARCH_MIPSEL64N32", "SCMP_ARCH_PPC",
    "SCMP_ARCH_PPC64",     "SCMP_ARCH_PPC64LE",   "SCMP_ARCH_S390",
    "SCMP_ARCH_S390X",     "SCMP_ARCH_PARISC",    "SCMP_ARCH_PARISC64",
    "SCMP_ARCH_RISCV64",
};

constexpr std::string_view kWaitKillable = "SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV";

// Flags husk can apply, with the libseccomp API level that carries them.
struct FlagName {
  std::string_view name;
  unsigned bit;
  unsigned api_level;
};
constexpr std::array<FlagName, 3> kFlags{{
    {"SECCOMP_FILTER_FLAG_TSYNC", SECCOMP_FILTER_FLAG_TSYNC, 2},
    {"SECCOMP_FILTER_FLAG_LOG", SECCOMP_FILTER_FLAG_LOG, 3},
    {"SECCOMP_FILTER_FLAG_SPEC_ALLOW", SECCOMP_FILTER_FLAG_SPEC_ALLOW, 4},
}};

std::string quoted(const std::string& s) { return "\"" + s + "\""; }

[[noreturn]] void fail(const std::string& field, const std::string& what) {
  throw Error("linux.seccomp." + field + ": " + what);
}

uint32_t action_value(const std::string& field, const std::string& name,
                      const std::optional<uint32_t>& errno_ret,
                      const std::string& errno_field) {
  auto it = std::find_if(kActions.begin(), kActions.end(),
                         [&](const ActionName& a) { return a.name == name; });
  if (it == kActions.end()) fail(field, "unknown action " + quoted(name));
  if (!it->takes_errno) {
    if (errno_ret) fail(errno_field, "not supported with " + name);
    return it->base;
  }
  uint32_t e = errno_ret.value_or(EPERM);
  if (e > kMaxErrno) fail(errno_field, "must be at most 65535, got " + std::to_string(e));
  return it->base | e;
}

// "SCMP_ARCH_X86_64" -> "x86_64", the name libseccomp's own table uses.
std::string libseccomp_arch_name(std::string_view spec_name) {
  std::string lower(spec_name.substr(std::string_view("SCMP_ARCH_").size()));
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower;
}

uint32_t arch_token(const std::string& field, const std::string& name) {
  if (std::find(kArchs.begin(), kArchs.end(), name) == kArchs.end())
    fail(field, "unknown architecture " + quoted(name));
  uint32_t token = seccomp_arch_resolve_name(libseccomp_arch_name(name).c_str());
  if (token == 0) fail(field, name + " not supported by this libseccomp");
  return token;
}

std::vector<ArgCmp> translate_args(const spec::SeccompSyscall& sc, const std::string& field) {
  std::vector<ArgCmp> out;
  for (size_t j = 0; j < sc.args.size(); ++j) {
    const auto& a = sc.args[j];
    const std::string af = field + ".args[" + std::to_string(j) + "]";
    if (a.index >= kMaxArgs)
      fail(af + ".index", "must be less than 6, got " + std::to_string(a.index));
    auto op = std::find_if(kOperators.begin(), kOperators.end(),
                           [&](const auto& o) { return o.first == a.op; });
    if (op == kOperators.end()) fail(af + ".op", "unknown operator " + quoted(a.op));
    out.push_back({a.index, op->second, a.value, a.value_two});
  }
  return out;
}

// Filter arches besides the native one, each once.
std::vector<uint32_t> extra_arches(const std::vector<std::string>& names) {
  const uint32_t native = seccomp_arch_native();
  std::vector<uint32_t> out;
  for (size_t i = 0; i < names.size(); ++i) {
    uint32_t token = arch_token("architectures[" + std::to_string(i) + "]", names[i]);
    if (token != native && std::find(out.begin(), out.end(), token) == out.end()) out.push_back(token);
  }
  return out;
}

unsigned flag_bits(const std::vector<std::string>& flags) {
  unsigned bits = 0;
  for (size_t i = 0; i < flags.size(); ++i) {
    const std::string field = "flags[" + std::to_string(i) + "]";
    const std::string& f = flags[i];
    auto it = std::find_if(kFlags.begin(), kFlags.end(), [&](const FlagName& k) { return k.name == f; });
    if (it != kFlags.end()) {
      bits |= it->bit;
    } else if (f == kWaitKillable) {
      fail(field, f + " not supported (libseccomp " + std::to_string(SCMP_VER_MAJOR) + "." +
                      std::to_string(SCMP_VER_MINOR) + " cannot set it)");
    } else {
      fail(field, "unknown flag " + quoted(f));
    }
  }
  return bits;
}

// syscalls[i] checked and turned into p.rules; returns its action.
uint32_t add_rules(const spec::SeccompSyscall& sc, size_t i, Plan& p) {
  const std::string field = "syscalls[" + std::to_string(i) + "]";
  const uint32_t act = action_value(field + ".action", sc.action, sc.errno_ret, field + ".errnoRet");
  if (sc.names.empty()) fail(field + ".names", "must contain at least one entry");
  for (size_t j = 0; j < sc.names.size(); ++j) {
    if (sc.names[j].empty()) fail(field + ".names[" + std::to_string(j) + "]", "must not be empty");
    // The listener leaves the container process through these (seccomp.h).
    if (act == SCMP_ACT_NOTIFY && (sc.names[j] == "write" || sc.names[j] == "sendmsg"))
      fail(field + ".names[" + std::to_string(j) + "]", "SCMP_ACT_NOTIFY cannot be used for " + sc.names[j]);
  }
  std::vector<ArgCmp> args = translate_args(sc, field);
  // libseccomp refuses a rule that repeats the default action.
  if (act == p.default_action) return act;

  std::array<unsigned, kMaxArgs> per_index{};
  for (const auto& a : args) ++per_index[a.index];
  const bool shared_index = std::any_of(per_index.begin(), per_index.end(), [](unsigned n) { return n > 1; });

  for (const auto& name : sc.names) {
    const int nr = seccomp_syscall_resolve_name(name.c_str());
    if (nr == __NR_SCMP_ERROR) continue;  // not a syscall libseccomp knows: skip, as runc
    if (shared_index) {
      // libseccomp cannot hold two conditions on one argument in a rule;
      // like runc, fall back to one rule per condition.
      for (const auto& a : args) p.rules.push_back({nr, act, {a}, name, i});
    } else {
      p.rules.push_back({nr, act, args, name, i});
    }
    // Only a NOTIFY rule in the filter makes the kernel produce a listener.
    if (act == SCMP_ACT_NOTIFY) p.notify = true;
  }
  return act;
}

// Plan::enosys: the newest syscall the profile names, per filter arch.
std::vector<EnosysLimit> enosys_limits(const spec::Seccomp& cfg, const Plan& p) {
  const uint32_t def = p.default_action;
  const bool lets_through = def == SCMP_ACT_ALLOW || def == SCMP_ACT_LOG ||
                            (def & 0xffff0000u) == SCMP_ACT_TRACE(0) || def == SCMP_ACT_ERRNO(ENOSYS);
  std::vector<EnosysLimit> out;
  if (lets_through) return out;
  std::vector<uint32_t> arches{seccomp_arch_native()};
  arches.insert(arches.end(), p.arches.begin(), p.arches.end());
  for (uint32_t arch : arches) {
    // Every name counts, also those of rules dropped by add_rules: they are
    // still syscalls the profile knows about.
    int max_nr = -1;
    for (const auto& sc : cfg.syscalls)
      for (const auto& name : sc.names)
        max_nr = std::max(max_nr, seccomp_syscall_resolve_name_arch(arch, name.c_str()));
    if (max_nr >= 0) out.push_back({arch, static_cast<uint32_t>(max_nr)});
  }
  return out;
}

// The names of a table's entries for which keep(entry) holds.
template <class Table, class Name, class Keep>
std::vector<std::string> names_of(const Table& table, Name name, Keep keep) {
  std::vector<std::string> out;
  for (const auto& e : table)
    if (keep(e)) out.emplace_back(name(e));
  return out;
}

template <class Table, class Name>
std::vector<std::string> names_of(const Table& table, Name name) {
  return names_of(table, name, [](const auto&) { return true; });
}

}  // namespace

Plan plan(const spec::Seccomp& cfg) {
  Plan p;
  if (cfg.default_action.empty()) fail("defaultAction", "required");
  p.default_action = action_value("defaultAction", cfg.default_action, cfg.default_errno_ret, "defaultErrnoRet");
  // The agent would have to answer every syscall, including those the
  // runtime still makes before exec (runc refuses it for the same reason).
  if (p.default_action == SCMP_ACT_NOTIFY) fail("defaultAction", "SCMP_ACT_NOTIFY cannot be the default action");
  p.arches = extra_arches(cfg.architectures);
  p.flags = flag_bits(cfg.flags);
  if (!cfg.listener_metadata.empty() && cfg.listener_path.empty())
    fail("listenerMetadata", "must not be set without listenerPath");

  bool uses_notify = false;
  for (size_t i = 0; i < cfg.syscalls.size(); ++i)
    uses_notify |= add_rules(cfg.syscalls[i], i, p) == SCMP_ACT_NOTIFY;
  p.enosys = enosys_limits(cfg, p);

  // Checked on the config, even if no NOTIFY rule survived name resolution.
  if (uses_notify && cfg.listener_path.empty()) fail("listenerPath", "required when an action is SCMP_ACT_NOTIFY");
  return p;
}

std::vector<std::string> known_actions() {
  return names_of(kActions, [](const ActionName& a) { return a.name; });
}

std::vector<std::string> known_operators() {
  return names_of(kOperators, [](const auto& o) { return o.first; });
}

std::vector<std::string> known_archs() {
  return names_of(kArchs, [](std::string_view a) { return a; },
                  [](std::string_view a) { return seccomp_arch_resolve_name(libseccomp_arch_name(a).c_str()) != 0; });
}

std::vector<std::string> known_flags() {
  return names_of(kFlags, [](const FlagName& f) { return f.name; });
}

std::vector<std::string> supported_flags() {
  // seccomp_api_get() probes the kernel once and reports what both it and
  // libseccomp can do.
  const unsigned api = seccomp_api_get();
  return names_of(kFlags, [](const FlagName& f) { return f.name; },
                  [api](const FlagName& f) { return api >= f.api_level; });
}

}  // namespace husk::seccomp
