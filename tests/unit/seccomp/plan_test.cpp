// seccomp::plan(): the config -> rules translation and its error messages.
#include <linux/seccomp.h>
#include <seccomp.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cerrno>

#include "helpers.h"
#include "seccomp/seccomp.h"

using namespace husk;
using husk::seccomp::plan;
using seccomp_test::call;
using seccomp_test::config;

namespace {

int nr(const char* name) { return seccomp_syscall_resolve_name(name); }

// The exact message plan() throws, or "" when it does not throw.
std::string error_of(const spec::Seccomp& c) {
  try {
    plan(c);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("plan: every action maps to its libseccomp value", "[seccomp][plan]") {
  struct Case {
    const char* name;
    uint32_t value;
  } cases[] = {
      {"SCMP_ACT_KILL", SCMP_ACT_KILL_THREAD},
      {"SCMP_ACT_KILL_THREAD", SCMP_ACT_KILL_THREAD},
      {"SCMP_ACT_KILL_PROCESS", SCMP_ACT_KILL_PROCESS},
      {"SCMP_ACT_TRAP", SCMP_ACT_TRAP},
      {"SCMP_ACT_ERRNO", SCMP_ACT_ERRNO(EPERM)},
      {"SCMP_ACT_TRACE", SCMP_ACT_TRACE(EPERM)},
      {"SCMP_ACT_LOG", SCMP_ACT_LOG},
      {"SCMP_ACT_NOTIFY", SCMP_ACT_NOTIFY},
  };
  for (const auto& c : cases) {
    INFO(c.name);
    auto cfg = config("SCMP_ACT_ALLOW", {call({"mkdir"}, c.name)});
    cfg.listener_path = "/run/agent.sock";
    auto p = plan(cfg);
    CHECK(p.default_action == SCMP_ACT_ALLOW);
    REQUIRE(p.rules.size() == 1);
    CHECK(p.rules[0].action == c.value);
    CHECK(p.rules[0].syscall_nr == nr("mkdir"));
    CHECK(p.rules[0].name == "mkdir");
    CHECK(p.rules[0].args.empty());
    CHECK(p.notify == (c.value == SCMP_ACT_NOTIFY));
  }
  CHECK(plan(config("SCMP_ACT_ERRNO")).default_action == SCMP_ACT_ERRNO(EPERM));
  CHECK(plan(config("SCMP_ACT_KILL_PROCESS")).default_action == SCMP_ACT_KILL_PROCESS);
  auto allow = plan(config("SCMP_ACT_KILL", {call({"read"}, "SCMP_ACT_ALLOW")}));
  CHECK(allow.rules.at(0).action == SCMP_ACT_ALLOW);
}

TEST_CASE("plan: errnoRet is folded into ERRNO and TRACE, EPERM by default", "[seccomp][plan]") {
  auto p = plan(config("SCMP_ACT_ALLOW", {call({"mkdir"}, "SCMP_ACT_ERRNO", ENOSYS),
                                          call({"rmdir"}, "SCMP_ACT_TRACE", 42),
                                          call({"chmod"}, "SCMP_ACT_ERRNO", 0)}));
  REQUIRE(p.rules.size() == 3);
  CHECK(p.rules[0].action == SCMP_ACT_ERRNO(ENOSYS));
  CHECK(p.rules[1].action == SCMP_ACT_TRACE(42));
  // errnoRet 0 is a legal (if odd) choice: the syscall "succeeds" with 0.
  CHECK(p.rules[2].action == SCMP_ACT_ERRNO(0));

  auto d = config("SCMP_ACT_ERRNO");
  d.default_errno_ret = ENOSYS;
  CHECK(plan(d).default_action == SCMP_ACT_ERRNO(ENOSYS));
}

TEST_CASE("plan: notify is set only when a NOTIFY rule is emitted", "[seccomp][plan]") {
  auto c = config("SCMP_ACT_ALLOW", {call({"husk_fake"}, "SCMP_ACT_NOTIFY"),
                                     call({"mkdir"}, "SCMP_ACT_ERRNO")});
  c.listener_path = "/run/agent.sock";
  CHECK_FALSE(plan(c).notify);
  c.syscalls[0].names.push_back("getppid");
  CHECK(plan(c).notify);
}

TEST_CASE("plan: every name of an entry becomes a rule, in order", "[seccomp][plan]") {
  auto p = plan(config("SCMP_ACT_ERRNO", {call({"read", "write"}, "SCMP_ACT_ALLOW"),
                                          call({"exit_group"}, "SCMP_ACT_ALLOW")}));
  REQUIRE(p.rules.size() == 3);
  CHECK(p.rules[0].syscall_nr == nr("read"));
  CHECK(p.rules[1].syscall_nr == nr("write"));
  CHECK(p.rules[2].syscall_nr == nr("exit_group"));
  CHECK(p.rules[0].origin == 0);
  CHECK(p.rules[2].origin == 1);
}

TEST_CASE("plan: unknown syscall names are skipped", "[seccomp][plan]") {
  auto p = plan(config("SCMP_ACT_ERRNO",
                       {call({"husk_no_such_syscall", "getpid", "another_fake"}, "SCMP_ACT_ALLOW")}));
  REQUIRE(p.rules.size() == 1);
  CHECK(p.rules[0].syscall_nr == nr("getpid"));
  // An entry of only unknown names leaves no rule but is not an error.
  CHECK(plan(config("SCMP_ACT_ERRNO", {call({"nope"}, "SCMP_ACT_ALLOW")})).rules.empty());
}

TEST_CASE("plan: a rule repeating the default action is dropped", "[seccomp][plan]") {
  auto p = plan(config("SCMP_ACT_ERRNO", {call({"getpid"}, "SCMP_ACT_ERRNO"),
                                          call({"mkdir"}, "SCMP_ACT_ERRNO", ENOSYS),
                                          call({"read"}, "SCMP_ACT_ALLOW")}));
  // ERRNO(EPERM) == default; ERRNO(ENOSYS) differs and stays.
  REQUIRE(p.rules.size() == 2);
  CHECK(p.rules[0].syscall_nr == nr("mkdir"));
  CHECK(p.rules[0].action == SCMP_ACT_ERRNO(ENOSYS));
  CHECK(p.rules[1].syscall_nr == nr("read"));
  // KILL and KILL_THREAD are the same action.
  CHECK(plan(config("SCMP_ACT_KILL_THREAD", {call({"read"}, "SCMP_ACT_KILL")})).rules.empty());
}

TEST_CASE("plan: args with distinct indexes are ANDed in one rule", "[seccomp][plan]") {
  auto p = plan(config("SCMP_ACT_ALLOW",
                       {call({"socket", "husk_fake"}, "SCMP_ACT_ERRNO", EAFNOSUPPORT,
                             {{0, 40, 0, "SCMP_CMP_EQ"}, {2, 0xff, 0x3, "SCMP_CMP_MASKED_EQ"}})}));
  REQUIRE(p.rules.size() == 1);
  const auto& r = p.rules[0];
  REQUIRE(r.args.size() == 2);
  CHECK(r.args[0].index == 0);
  CHECK(r.args[0].op == SCMP_CMP_EQ);
  CHECK(r.args[0].value == 40);
  CHECK(r.args[1].index == 2);
  CHECK(r.args[1].op == SCMP_CMP_MASKED_EQ);
  CHECK(r.args[1].value == 0xff);
  CHECK(r.args[1].value_two == 0x3);
}

TEST_CASE("plan: args sharing an index become one rule each (OR)", "[seccomp][plan]") {
  auto p = plan(config("SCMP_ACT_ALLOW",
                       {call({"personality", "clone"}, "SCMP_ACT_ERRNO", std::nullopt,
                             {{0, 8, 0, "SCMP_CMP_EQ"},
                              {0, 0x20000, 0, "SCMP_CMP_EQ"},
                              {1, 5, 0, "SCMP_CMP_GT"}})}));
  REQUIRE(p.rules.size() == 6);
  for (size_t i = 0; i < 6; ++i) {
    INFO(i);
    CHECK(p.rules[i].syscall_nr == nr(i < 3 ? "personality" : "clone"));
    REQUIRE(p.rules[i].args.size() == 1);
  }
  CHECK(p.rules[0].args[0].value == 8);
  CHECK(p.rules[1].args[0].value == 0x20000);
  CHECK(p.rules[2].args[0].index == 1);
  CHECK(p.rules[2].args[0].op == SCMP_CMP_GT);
}

TEST_CASE("plan: every operator is known", "[seccomp][plan]") {
  const std::pair<const char*, int> ops[] = {
      {"SCMP_CMP_NE", SCMP_CMP_NE}, {"SCMP_CMP_LT", SCMP_CMP_LT}, {"SCMP_CMP_LE", SCMP_CMP_LE},
      {"SCMP_CMP_EQ", SCMP_CMP_EQ}, {"SCMP_CMP_GE", SCMP_CMP_GE}, {"SCMP_CMP_GT", SCMP_CMP_GT},
      {"SCMP_CMP_MASKED_EQ", SCMP_CMP_MASKED_EQ}};
  for (const auto& [name, value] : ops) {
    INFO(name);
    auto p = plan(config("SCMP_ACT_ALLOW",
                         {call({"kill"}, "SCMP_ACT_ERRNO", std::nullopt, {{1, 9, 0, name}})}));
    CHECK(p.rules.at(0).args.at(0).op == value);
  }
  CHECK(seccomp::known_operators().size() == 7);
}

TEST_CASE("plan: architectures map to libseccomp tokens, native left out", "[seccomp][plan]") {
  auto c = config("SCMP_ACT_ALLOW");
  c.architectures = {"SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32", "SCMP_ARCH_AARCH64",
                     "SCMP_ARCH_X86", "SCMP_ARCH_RISCV64", "SCMP_ARCH_S390X"};
  std::vector<uint32_t> want;
  for (uint32_t a : std::initializer_list<uint32_t>{SCMP_ARCH_X86_64, SCMP_ARCH_X86, SCMP_ARCH_X32, SCMP_ARCH_AARCH64,
                     SCMP_ARCH_RISCV64, SCMP_ARCH_S390X})
    if (a != seccomp_arch_native()) want.push_back(a);
  CHECK(plan(c).arches == want);
  // Every name the features report must be accepted.
  c.architectures = seccomp::known_archs();
  CHECK(c.architectures.size() == 19);
  CHECK_NOTHROW(plan(c));
}

TEST_CASE("plan: syscalls newer than the profile get ENOSYS (runc's stub)", "[seccomp][plan]") {
  auto c = config("SCMP_ACT_ERRNO", {call({"read", "openat2"}, "SCMP_ACT_ALLOW"),
                                     call({"husk_fake"}, "SCMP_ACT_KILL")});
  c.architectures = {"SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"};
  auto p = plan(c);
  const uint32_t native = seccomp_arch_native();
  std::vector<std::pair<uint32_t, uint32_t>> got;
  for (const auto& l : p.enosys) got.emplace_back(l.arch, l.max_nr);
  std::vector<std::pair<uint32_t, uint32_t>> want{{native, 437}};
  for (uint32_t a : p.arches)
    want.emplace_back(a, static_cast<uint32_t>(seccomp_syscall_resolve_name_arch(a, "openat2")));
  CHECK(got == want);
  if (native == SCMP_ARCH_X86_64) {
    REQUIRE(got.size() == 3);
    CHECK(got[1] == std::pair<uint32_t, uint32_t>{SCMP_ARCH_X86, 437});
    CHECK(got[2] == std::pair<uint32_t, uint32_t>{SCMP_ARCH_X32, 0x40000000u | 437});
  }

  // Names of rules dropped for repeating the default still count.
  auto d = plan(config("SCMP_ACT_ERRNO", {call({"read"}, "SCMP_ACT_ALLOW"), call({"openat2"}, "SCMP_ACT_ERRNO")}));
  REQUIRE(d.enosys.size() == 1);
  CHECK(d.enosys[0].max_nr == static_cast<uint32_t>(nr("openat2")));
  CHECK(d.rules.size() == 1);

  CHECK_FALSE(plan(config("SCMP_ACT_KILL_PROCESS", {call({"read"}, "SCMP_ACT_ALLOW")})).enosys.empty());
  // Nothing to do when the default lets syscalls through, or is ENOSYS already.
  for (const char* def : {"SCMP_ACT_ALLOW", "SCMP_ACT_LOG", "SCMP_ACT_TRACE"}) {
    INFO(def);
    CHECK(plan(config(def, {call({"mkdir"}, "SCMP_ACT_ERRNO")})).enosys.empty());
  }
  auto e = config("SCMP_ACT_ERRNO", {call({"read"}, "SCMP_ACT_ALLOW")});
  e.default_errno_ret = ENOSYS;
  CHECK(plan(e).enosys.empty());
  // A profile naming no syscall libseccomp knows has no limit to apply.
  CHECK(plan(config("SCMP_ACT_ERRNO", {call({"husk_fake"}, "SCMP_ACT_ALLOW")})).enosys.empty());
}

TEST_CASE("plan: flags", "[seccomp][plan]") {
  auto c = config("SCMP_ACT_ALLOW");
  c.flags = {"SECCOMP_FILTER_FLAG_LOG", "SECCOMP_FILTER_FLAG_SPEC_ALLOW", "SECCOMP_FILTER_FLAG_TSYNC"};
  CHECK(plan(c).flags == (SECCOMP_FILTER_FLAG_LOG | SECCOMP_FILTER_FLAG_SPEC_ALLOW |
                          SECCOMP_FILTER_FLAG_TSYNC));
  c.flags = seccomp::known_flags();
  CHECK_NOTHROW(plan(c));
  c.flags = {"SECCOMP_FILTER_FLAG_LOG", "SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV"};
  CHECK_THAT(error_of(c), Catch::StartsWith("linux.seccomp.flags[1]: "
                                            "SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV not supported"));
  for (const auto& f : seccomp::supported_flags())
    CHECK(std::find(seccomp::known_flags().begin(), seccomp::known_flags().end(), f) !=
          seccomp::known_flags().end());
}

TEST_CASE("plan: error messages name the field", "[seccomp][plan]") {
  using V = std::vector<spec::SeccompSyscall>;
  CHECK(error_of(config("SCMP_ACT_ALLOW", V{call({"a"}, "SCMP_ACT_ALLOW"), call({"b"}, "SCMP_ACT_ALLOW"),
                                            call({"c"}, "SCMP_ACT_ALLOW"), call({"d"}, "SCMP_ACT_FOO")})) ==
        "linux.seccomp.syscalls[3].action: unknown action \"SCMP_ACT_FOO\"");
  CHECK(error_of(config("SCMP_ACT_BAR")) == "linux.seccomp.defaultAction: unknown action \"SCMP_ACT_BAR\"");
  CHECK(error_of(config("")) == "linux.seccomp.defaultAction: required");
  CHECK(error_of(config("SCMP_ACT_NOTIFY")) ==
        "linux.seccomp.defaultAction: SCMP_ACT_NOTIFY cannot be the default action");

  auto d = config("SCMP_ACT_ALLOW");
  d.default_errno_ret = 1;
  CHECK(error_of(d) == "linux.seccomp.defaultErrnoRet: not supported with SCMP_ACT_ALLOW");
  CHECK(error_of(config("SCMP_ACT_ALLOW", V{call({"mkdir"}, "SCMP_ACT_KILL", 1)})) ==
        "linux.seccomp.syscalls[0].errnoRet: not supported with SCMP_ACT_KILL");
  CHECK(error_of(config("SCMP_ACT_ALLOW", V{call({"mkdir"}, "SCMP_ACT_ERRNO", 70000)})) ==
        "linux.seccomp.syscalls[0].errnoRet: must be at most 65535, got 70000");

  CHECK(error_of(config("SCMP_ACT_ALLOW",
                        V{call({"kill"}, "SCMP_ACT_ERRNO", std::nullopt,
                               {{0, 1, 0, "SCMP_CMP_EQ"}, {1, 1, 0, "SCMP_CMP_SAME"}})})) ==
        "linux.seccomp.syscalls[0].args[1].op: unknown operator \"SCMP_CMP_SAME\"");
  CHECK(error_of(config("SCMP_ACT_ALLOW",
                        V{call({"kill"}, "SCMP_ACT_ERRNO", std::nullopt, {{6, 1, 0, "SCMP_CMP_EQ"}})})) ==
        "linux.seccomp.syscalls[0].args[0].index: must be less than 6, got 6");
  // Unknown syscall names do not hide a bad operator.
  CHECK_THAT(error_of(config("SCMP_ACT_ALLOW", V{call({"nope"}, "SCMP_ACT_ERRNO", std::nullopt,
                                                      {{0, 1, 0, "EQ"}})})),
             Catch::StartsWith("linux.seccomp.syscalls[0].args[0].op: unknown operator"));

  CHECK(error_of(config("SCMP_ACT_ALLOW", V{call({}, "SCMP_ACT_ERRNO")})) ==
        "linux.seccomp.syscalls[0].names: must contain at least one entry");
  CHECK(error_of(config("SCMP_ACT_ALLOW", V{call({"mkdir", ""}, "SCMP_ACT_ERRNO")})) ==
        "linux.seccomp.syscalls[0].names[1]: must not be empty");

  auto a = config("SCMP_ACT_ALLOW");
  a.architectures = {"SCMP_ARCH_X86_64", "SCMP_ARCH_Z80"};
  CHECK(error_of(a) == "linux.seccomp.architectures[1]: unknown architecture \"SCMP_ARCH_Z80\"");
  a.architectures = {"x86_64"};
  CHECK(error_of(a) == "linux.seccomp.architectures[0]: unknown architecture \"x86_64\"");

  auto f = config("SCMP_ACT_ALLOW");
  f.flags = {"SECCOMP_FILTER_FLAG_LOG", "SECCOMP_FILTER_FLAG_NOPE"};
  CHECK(error_of(f) == "linux.seccomp.flags[1]: unknown flag \"SECCOMP_FILTER_FLAG_NOPE\"");

  auto n = config("SCMP_ACT_ALLOW", V{call({"mkdir"}, "SCMP_ACT_NOTIFY")});
  CHECK(error_of(n) == "linux.seccomp.listenerPath: required when an action is SCMP_ACT_NOTIFY");
  n.listener_path = "/run/agent.sock";
  CHECK(error_of(n).empty());
  n.syscalls = {call({"read", "write"}, "SCMP_ACT_NOTIFY")};
  CHECK(error_of(n) == "linux.seccomp.syscalls[0].names[1]: SCMP_ACT_NOTIFY cannot be used for write");
  n.syscalls = {call({"mkdir"}, "SCMP_ACT_NOTIFY"), call({"sendmsg"}, "SCMP_ACT_NOTIFY")};
  CHECK(error_of(n) == "linux.seccomp.syscalls[1].names[0]: SCMP_ACT_NOTIFY cannot be used for sendmsg");
  n.syscalls = {call({"sendmsg"}, "SCMP_ACT_ERRNO")};
  CHECK(error_of(n).empty());

  // listenerPath is checked on the config even when no NOTIFY rule survives.
  n.syscalls = {call({"husk_fake"}, "SCMP_ACT_NOTIFY")};
  n.listener_path.clear();
  CHECK(error_of(n) == "linux.seccomp.listenerPath: required when an action is SCMP_ACT_NOTIFY");

  auto m = config("SCMP_ACT_ALLOW");
  m.listener_metadata = "x";
  CHECK(error_of(m) == "linux.seccomp.listenerMetadata: must not be set without listenerPath");
}

TEST_CASE("features lists", "[seccomp][plan]") {
  auto acts = seccomp::known_actions();
  CHECK(acts.size() == 9);
  for (const auto& a : acts) {
    INFO(a);
    auto c = config("SCMP_ACT_ALLOW", {call({"mkdir"}, a)});
    c.listener_path = "/run/agent.sock";
    CHECK_NOTHROW(plan(c));
  }
  CHECK(seccomp::known_flags() ==
        std::vector<std::string>{"SECCOMP_FILTER_FLAG_TSYNC", "SECCOMP_FILTER_FLAG_LOG",
                                 "SECCOMP_FILTER_FLAG_SPEC_ALLOW"});
}
