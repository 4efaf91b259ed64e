// linux.resources -> cgroup file writes, and linux.cgroupsPath -> a cgroup
// path: pure, so unit-tested without a cgroup; check_host reads the host's
// online CPUs and memory nodes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "spec/spec.h"

namespace husk::cgroups {

// One file write: on v2 `controller` is empty; on v1 it names the hierarchy
// ("memory", "cpu", "pids", ...).
struct Write {
  std::string controller;
  std::string file;
  std::string value;
  bool operator==(const Write&) const = default;
};

// Translate linux.resources to the writes, in the order they must happen.
// Invalid values throw Error naming the field ("linux.resources.memory.limit: ...").
// Devices are not part of v2_writes (they become an eBPF program: devices.h);
// v1_writes includes devices.deny/devices.allow when r.devices is non-empty.
// Values 0 for memory limit/reservation/swap, cpu shares/period/quota and
// blockIO weight mean "unset", as runc treats them.
// Ignored (documented) as runc does: memory.kernel everywhere (removed from
// the kernel); on v2 memory.kernelTCP, swappiness, disableOOMKiller,
// useHierarchy and network (v2 has no such knobs). Rejected on v2:
// cpu.realtime*, blockIO.leafWeight; on v1: unified.
// cpu.period without cpu.quota writes "max <period>" on v2 as runc does, so
// `update` should pass the stored quota along with a new period.
// `bfq_weight`: io.bfq.weight exists, so blockIO weights go there unconverted
// instead of io.weight.
std::vector<Write> v2_writes(const spec::Resources& r, bool bfq_weight = false);
std::vector<Write> v1_writes(const spec::Resources& r);
// runc's linear conversion: 1 + ((shares - 2) * 9999) / 262142, shares
// clamped to the kernel's [2, 262144] first; 0 -> 0 (unset).
uint64_t shares_to_weight(uint64_t shares);
// runc's blkio (10..1000) -> io.weight (1..10000): 1 + (w - 10) * 9999 / 990; 0 -> 0.
uint64_t blkio_weight_to_io_weight(uint64_t weight);
// memory.swap.max for OCI swap (= memory + swap, v1 semantics) and limit:
// swap - limit, "max" for -1 (or absent swap with limit -1); nullopt: leave unset.
std::optional<std::string> v2_swap_max(std::optional<int64_t> limit, std::optional<int64_t> swap);
// A linux.resources.unified key must be "<controller>.<file>" naming a file
// directly inside the cgroup; throws Error naming the key otherwise.
void validate_unified_key(const std::string& key);
// Parse a cpuset list ("0-3,7"); throws Error prefixed with `field` when malformed.
std::vector<unsigned> parse_cpu_list(const std::string& list, const std::string& field);
// cpu.cpus/cpu.mems against the online CPU / memory-node lists (same syntax).
void check_cpuset(const spec::Resources& r, const std::string& cpus_online,
                  const std::string& mems_online);
// Not pure: check_cpuset against /sys/devices/system/{cpu,node}/online.
void check_host(const spec::Resources& r);

// The cgroup path (relative to each hierarchy's root, starting with '/')
// for linux.cgroupsPath: absolute stays, relative goes under /husk, absent -> /husk/<id>.
// ".." components are rejected ("linux.cgroupsPath: ..."); "." and "//" are normalised.
std::string resolve_path(const std::optional<std::string>& cgroups_path, const std::string& id);

}  // namespace husk::cgroups
