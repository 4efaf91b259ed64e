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

}  // namespace

Plan plan(const spec::Seccomp& cfg) {
  Plan p;
  if (cfg.default_action.empty()) fail("defaultAction", "required");
  p.default_action =
      action_value("defaultAction", cfg.default_action, cfg.default_errno_ret, "defaultErrnoRet");
  // The agent would have to answer every syscall, including those the
  // runtime still makes before exec (runc refuses it for the same reason).
  if (p.default_action == SCMP_ACT_NOTIFY)
    fail("defaultAction", "SCMP_ACT_NOTIFY cannot be the default action");

  const uint32_t native = seccomp_arch_native();
  for (size_t i = 0; i < cfg.architectures.size(); ++i) {
    uint32_t token = arch_token("architectures[" + std::to_string(i) + "]", cfg.architectures[i]);
    if (token != native && std::find(p.arches.begin(), p.arches.end(), token) == p.arches.end())
      p.arches.push_back(token);
  }

  for (size_t i = 0; i < cfg.flags.size(); ++i) {
    const std::string field = "flags[" + std::to_string(i) + "]";
    const std::string& f = cfg.flags[i];
    auto it = std::find_if(kFlags.begin(), kFlags.end(),
                           [&](const FlagName& k) { return k.name == f; });
    if (it != kFlags.end()) {
      p.flags |= it->bit;
    } else if (f == kWaitKillable) {
      fail(field, f + " not supported (libseccomp " + std::to_string(SCMP_VER_MAJOR) + "." +
                      std::to_string(SCMP_VER_MINOR) + " cannot set it)");
    } else {
      fail(field, "unknown flag " + quoted(f));
    }
  }

  if (!cfg.listener_metadata.empty() && cfg.listener_path.empty())
    fail("listenerMetadata", "must not be set without listenerPath");

  bool uses_notify = false;
  for (size_t i = 0; i < cfg.syscalls.size(); ++i) {
    const auto& sc = cfg.syscalls[i];
    const std::string field = "syscalls[" + std::to_string(i) + "]";
    const uint32_t act = action_value(field + ".action", sc.action, sc.errno_ret, field + ".errnoRet");
    if (sc.names.empty()) fail(field + ".names", "must contain at least one entry");
    for (size_t j = 0; j < sc.names.size(); ++j) {
      if (sc.names[j].empty())
        fail(field + ".names[" + std::to_string(j) + "]", "must not be empty");
      // The listener leaves the container process through these (seccomp.h).
      if (act == SCMP_ACT_NOTIFY && (sc.names[j] == "write" || sc.names[j] == "sendmsg"))
        fail(field + ".names[" + std::to_string(j) + "]",
             "SCMP_ACT_NOTIFY cannot be used for " + sc.names[j]);
    }
    std::vector<ArgCmp> args = translate_args(sc, field);
    if (act == SCMP_ACT_NOTIFY) uses_notify = true;
    // libseccomp refuses a rule that repeats the default action.
    if (act == p.default_action) continue;

    std::array<unsigned, kMaxArgs> per_index{};
    for (const auto& a : args) ++per_index[a.index];
    const bool shared_index =
        std::any_of(per_index.begin(), per_index.end(), [](unsigned n) { return n > 1; });

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
  }

  const uint32_t def = p.default_action;
  const bool lets_through = def == SCMP_ACT_ALLOW || def == SCMP_ACT_LOG ||
                            (def & 0xffff0000u) == SCMP_ACT_TRACE(0) ||
                            def == SCMP_ACT_ERRNO(ENOSYS);
  if (!lets_through) {
    std::vector<uint32_t> arches{native};
    arches.insert(arches.end(), p.arches.begin(), p.arches.end());
    for (uint32_t arch : arches) {
      // Every name counts, also those of rules dropped above: they are
      // still syscalls the profile knows about.
      int max_nr = -1;
      for (const auto& sc : cfg.syscalls)
        for (const auto& name : sc.names)
          max_nr = std::max(max_nr, seccomp_syscall_resolve_name_arch(arch, name.c_str()));
      if (max_nr >= 0) p.enosys.push_back({arch, static_cast<uint32_t>(max_nr)});
    }
  }

  // Checked on the config, even if no NOTIFY rule survived name resolution.
  if (uses_notify && cfg.listener_path.empty())
    fail("listenerPath", "required when an action is SCMP_ACT_NOTIFY");
  return p;
}

std::vector<std::string> known_actions() {
  std::vector<std::string> out;
  for (const auto& a : kActions) out.emplace_back(a.name);
  return out;
}

std::vector<std::string> known_operators() {
  std::vector<std::string> out;
  for (const auto& o : kOperators) out.emplace_back(o.first);
  return out;
}

std::vector<std::string> known_archs() {
  std::vector<std::string> out;
  for (const auto& a : kArchs)
    if (seccomp_arch_resolve_name(libseccomp_arch_name(a).c_str()) != 0) out.emplace_back(a);
  return out;
}

std::vector<std::string> known_flags() {
  std::vector<std::string> out;
  for (const auto& f : kFlags) out.emplace_back(f.name);
  return out;
}

std::vector<std::string> supported_flags() {
  // seccomp_api_get() probes the kernel once and reports what both it and
  // libseccomp can do.
  const unsigned api = seccomp_api_get();
  std::vector<std::string> out;
  for (const auto& f : kFlags)
    if (api >= f.api_level) out.emplace_back(f.name);
  return out;
}

}  // namespace husk::seccomp
