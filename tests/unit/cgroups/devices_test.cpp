// The device rule semantic, runc's default rules, and the generated eBPF
// program, executed by a small interpreter for exactly the opcodes we emit.
#include <linux/bpf.h>

#include <catch2/catch.hpp>

#include "cgroups/devices.h"

namespace cg = husk::cgroups;
namespace spec = husk::spec;

namespace {

spec::DeviceRule rule(bool allow, const char* type, std::optional<int64_t> major, std::optional<int64_t> minor,
                      const char* access) {
  return {allow, type, major, minor, access};
}

uint32_t access_bits(const std::string& a) {
  uint32_t b = 0;
  for (char c : a) b |= c == 'r' ? BPF_DEVCG_ACC_READ : c == 'w' ? BPF_DEVCG_ACC_WRITE : BPF_DEVCG_ACC_MKNOD;
  return b;
}

// Runs a BPF_PROG_TYPE_CGROUP_DEVICE program on one request. Fails the test
// on any opcode, register or jump the generator is not supposed to produce.
bool run(const std::vector<cg::BpfInsn>& prog, char type, uint32_t major, uint32_t minor, const std::string& access) {
  bpf_cgroup_dev_ctx ctx{};
  ctx.access_type = (access_bits(access) << 16) | (type == 'b' ? BPF_DEVCG_DEV_BLOCK : BPF_DEVCG_DEV_CHAR);
  ctx.major = major;
  ctx.minor = minor;
  uint64_t reg[11] = {};
  bool set[11] = {};
  set[1] = true;  // r1 = ctx (handled by the load)
  set[10] = true;
  auto get = [&](int r) {
    REQUIRE(set[r]);
    return reg[r];
  };
  size_t pc = 0;
  for (int steps = 0; steps < 100000; ++steps) {
    REQUIRE(pc < prog.size());
    const auto& i = prog[pc++];
    REQUIRE(i.dst_reg <= 10);
    REQUIRE(i.src_reg <= 10);
    // The verifier rejects set reserved fields: off only on loads and jumps,
    // src_reg only for X (register) operands and loads, imm 0 for X operands.
    bool is_ld = i.code == (BPF_LDX | BPF_W | BPF_MEM);
    bool is_jmp = (i.code & 0x07) == BPF_JMP;
    bool is_x = (i.code & BPF_X) && !is_ld && i.code != (BPF_JMP | BPF_EXIT);
    INFO("insn " << pc - 1 << " code " << int(i.code));
    if (!is_ld && !is_jmp) REQUIRE(i.off == 0);
    if (!is_x && !is_ld) REQUIRE(i.src_reg == 0);
    if (is_x || is_ld) REQUIRE(i.imm == 0);
    if (i.code == (BPF_JMP | BPF_EXIT)) REQUIRE((i.off == 0 && i.dst_reg == 0 && i.imm == 0));
    switch (i.code) {
      case BPF_LDX | BPF_W | BPF_MEM: {
        REQUIRE(i.src_reg == 1);
        REQUIRE((i.off == 0 || i.off == 4 || i.off == 8));
        uint32_t v = i.off == 0 ? ctx.access_type : i.off == 4 ? ctx.major : ctx.minor;
        reg[i.dst_reg] = v;
        set[i.dst_reg] = true;
        break;
      }
      case BPF_ALU | BPF_MOV | BPF_X:
        reg[i.dst_reg] = static_cast<uint32_t>(get(i.src_reg));
        set[i.dst_reg] = true;
        break;
      case BPF_ALU | BPF_MOV | BPF_K:
        reg[i.dst_reg] = static_cast<uint32_t>(i.imm);
        set[i.dst_reg] = true;
        break;
      case BPF_ALU | BPF_AND | BPF_K:
        reg[i.dst_reg] = static_cast<uint32_t>(get(i.dst_reg)) & static_cast<uint32_t>(i.imm);
        break;
      case BPF_ALU | BPF_RSH | BPF_K:
        reg[i.dst_reg] = static_cast<uint32_t>(get(i.dst_reg)) >> i.imm;
        break;
      case BPF_JMP | BPF_JNE | BPF_K:
      case BPF_JMP | BPF_JEQ | BPF_K: {
        REQUIRE(i.off >= 0);  // forward only: no loops
        bool eq = get(i.dst_reg) == static_cast<uint64_t>(static_cast<int64_t>(i.imm));
        if ((i.code == (BPF_JMP | BPF_JNE | BPF_K)) != eq) pc += i.off;
        break;
      }
      case BPF_JMP | BPF_EXIT: {
        uint64_t r0 = get(0);
        REQUIRE(r0 <= 1);
        return r0 == 1;
      }
      default:
        FAIL("unexpected opcode " << int(i.code) << " at " << pc - 1);
    }
  }
  FAIL("program did not terminate");
  return false;
}

// device_allowed() and the program agree on every request in `grid`.
void agree(const std::vector<spec::DeviceRule>& rules) {
  auto prog = cg::device_filter_program(rules);
  REQUIRE(prog.back().code == (BPF_JMP | BPF_EXIT));
  for (char t : {'c', 'b'})
    for (uint32_t maj : {1u, 5u, 8u, 10u, 136u, 254u})
      for (uint32_t min : {0u, 1u, 2u, 3u, 5u, 7u, 200u})
        for (const char* a : {"r", "w", "m", "rw", "rm", "wm", "rwm"}) {
          INFO(t << " " << maj << ":" << min << " " << a);
          CHECK(run(prog, t, maj, min, a) == cg::device_allowed(rules, t, maj, min, a));
        }
}

}  // namespace

TEST_CASE("default container rules: the standard devices, mknod of anything, nothing else") {
  auto rules = cg::effective_device_rules({}, {});
  struct Case {
    char type;
    int64_t major, minor;
    const char* access;
    bool allowed;
  } cases[] = {
      {'c', 1, 3, "rwm", true},    // null
      {'c', 1, 5, "rw", true},     // zero
      {'c', 1, 7, "w", true},      // full
      {'c', 1, 8, "r", true},      // random
      {'c', 1, 9, "r", true},      // urandom
      {'c', 5, 0, "rw", true},     // tty
      {'c', 5, 1, "rw", false},    // the host console: not in runc's list either
      {'c', 5, 2, "rw", true},     // ptmx
      {'c', 136, 4, "rw", true},   // /dev/pts/4
      {'c', 10, 200, "rw", true},  // tun
      {'c', 1, 1, "r", false},     // /dev/mem
      {'c', 1, 1, "m", true},      // ... but mknod of it is fine
      {'b', 8, 0, "r", false},     // a disk
      {'b', 8, 0, "m", true},
      {'b', 8, 0, "rm", false},    // any bit denied denies the request
      {'c', 4, 1, "w", false},     // tty1
      {'c', 10, 229, "rw", false}, // fuse
  };
  for (const auto& c : cases) {
    INFO(c.type << " " << c.major << ":" << c.minor << " " << c.access);
    CHECK(cg::device_allowed(rules, c.type, c.major, c.minor, c.access) == c.allowed);
    CHECK(run(cg::device_filter_program(rules), c.type, c.major, c.minor, c.access) == c.allowed);
  }
  agree(rules);
}

TEST_CASE("linux.devices entries are allowed rwm; resources rules come before them") {
  spec::Device vda;
  vda.type = "b";
  vda.major = 254;
  vda.minor = 0;
  spec::Device fifo;
  fifo.type = "p";
  auto rules = cg::effective_device_rules({rule(false, "b", 254, 0, "rwm")}, {vda, fifo});
  CHECK(cg::device_allowed(rules, 'b', 254, 0, "rw"));  // the device entry is later
  CHECK(rules.size() == 1 + 1 + 1 + cg::default_device_rules().size());
  agree(rules);
}

TEST_CASE("the last matching rule wins, per access bit") {
  auto deny_all = rule(false, "a", std::nullopt, std::nullopt, "rwm");
  std::vector<spec::DeviceRule> rules = {deny_all, rule(true, "b", 254, 0, "r")};
  CHECK(cg::device_allowed(rules, 'b', 254, 0, "r"));
  CHECK_FALSE(cg::device_allowed(rules, 'b', 254, 0, "w"));
  CHECK_FALSE(cg::device_allowed(rules, 'b', 254, 0, "rw"));
  CHECK_FALSE(cg::device_allowed(rules, 'b', 254, 1, "r"));
  CHECK_FALSE(cg::device_allowed(rules, 'c', 254, 0, "r"));
  agree(rules);

  // A later deny of one bit removes only that bit.
  rules = {deny_all, rule(true, "c", 1, 3, "rwm"), rule(false, "c", 1, 3, "w")};
  CHECK(cg::device_allowed(rules, 'c', 1, 3, "r"));
  CHECK(cg::device_allowed(rules, 'c', 1, 3, "m"));
  CHECK_FALSE(cg::device_allowed(rules, 'c', 1, 3, "rw"));
  agree(rules);

  // A later wildcard deny overrides earlier specific allows; a later allow
  // overrides it again.
  rules = {rule(true, "a", std::nullopt, std::nullopt, "rwm"), rule(false, "c", std::nullopt, std::nullopt, "w"),
           rule(true, "c", 1, 3, "w")};
  CHECK(cg::device_allowed(rules, 'b', 8, 0, "rw"));
  CHECK_FALSE(cg::device_allowed(rules, 'c', 4, 1, "w"));
  CHECK(cg::device_allowed(rules, 'c', 4, 1, "r"));
  CHECK(cg::device_allowed(rules, 'c', 1, 3, "rw"));
  agree(rules);

  // Bits decided by different rules combine.
  rules = {deny_all, rule(true, "c", 1, std::nullopt, "r"), rule(true, "c", std::nullopt, 3, "w")};
  CHECK(cg::device_allowed(rules, 'c', 1, 3, "rw"));
  CHECK_FALSE(cg::device_allowed(rules, 'c', 1, 4, "rw"));
  agree(rules);

  // Negative numbers are wildcards, as runc's -1; empty access means rwm.
  rules = {deny_all, rule(true, "c", 10, -1, "")};
  CHECK(cg::device_allowed(rules, 'c', 10, 200, "rwm"));
  agree(rules);

  // No rules: nothing is allowed.
  CHECK_FALSE(cg::device_allowed({}, 'c', 1, 3, "r"));
  agree({});
}

TEST_CASE("the program layout is what the kernel loads") {
  auto prog = cg::device_filter_program(cg::effective_device_rules({}, {}));
  CHECK(sizeof(cg::BpfInsn) == sizeof(bpf_insn));
  CHECK(prog.size() < 4096);  // BPF_MAXINSNS for unprivileged; we stay far below
  // Every jump lands inside the program.
  for (size_t i = 0; i < prog.size(); ++i)
    if ((prog[i].code & 0x07) == BPF_JMP && prog[i].code != (BPF_JMP | BPF_EXIT))
      CHECK(i + 1 + prog[i].off < prog.size());
  CHECK_THROWS_WITH(cg::device_filter_program({rule(true, "c", int64_t{1} << 40, 1, "r")}),
                    Catch::StartsWith("linux.resources.devices[0]:"));
}
