// The device rules a container gets, their meaning, and the eBPF program
// that enforces them on v2 (v1 writes devices.allow/deny: translate.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "spec/spec.h"

namespace husk::cgroups {

// runc's default allow list (mknod of any c/b, null zero full tty random
// urandom ptmx /dev/pts/*, /dev/net/tun), appended after the spec's rules.
// Not 5:1: that would open the host's console (a terminal's /dev/console is
// its pts).
std::vector<spec::DeviceRule> default_device_rules();
// The rules a container gets: a leading deny-all, linux.resources.devices in
// order, an rwm allow for each linux.devices entry, then default_device_rules().
std::vector<spec::DeviceRule> effective_device_rules(const std::vector<spec::DeviceRule>& resources_devices,
                                                      const std::vector<spec::Device>& linux_devices);
// The semantic both backends implement: per requested access bit, the last
// rule that matches the device and contains that bit decides; no rule: deny.
// type 'c' or 'b'; access a subset of "rwm". Empty rule access means "rwm",
// negative/absent major/minor and type 'a' are wildcards. (v1 kernels treat an
// "a" rule as all access whatever its access string; configs use "rwm" there.)
bool device_allowed(const std::vector<spec::DeviceRule>& rules, char type, int64_t major,
                    int64_t minor, const std::string& access);
// One eBPF instruction, layout-identical to the kernel's struct bpf_insn.
struct BpfInsn {
  uint8_t code;
  uint8_t dst_reg : 4;
  uint8_t src_reg : 4;
  int16_t off;
  int32_t imm;
};
// BPF_PROG_TYPE_CGROUP_DEVICE program implementing device_allowed() for `rules`.
std::vector<BpfInsn> device_filter_program(const std::vector<spec::DeviceRule>& rules);

}  // namespace husk::cgroups
