// The systemd cgroup driver's pure half: a cgroupsPath of the form
// "slice:prefix:name" -> a transient scope unit in a slice, and
// linux.resources -> the unit properties that make systemd keep the same
// limits the cgroup files get (a `systemctl daemon-reload` rewrites every file
// it has a property for). The D-Bus calls are made by husk-systemd, a small
// sd-bus program (Debian ships no static libsystemd: husk stays a static PIE).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "cgroups/cgroups.h"
#include "spec/spec.h"

namespace husk::cgroups {

struct SystemdUnit {
  std::string slice;   // "kubepods-burstable-pod1.slice"
  std::string unit;    // "cri-containerd-abc.scope"
  std::string cgroup;  // below the manager's own cgroup: "/kubepods.slice/kubepods-burstable.slice/.../<unit>"
};

// runc's rules: with --systemd-cgroup a cgroupsPath has exactly three parts;
// an empty slice is system.slice (user.slice for a user's manager); absent
// or empty: husk-<id>.scope there. Errors name linux.cgroupsPath. A name
// ending in ".slice" (kubelet's own use of libcontainer) is refused: a
// container's processes live in a scope.
SystemdUnit systemd_unit(const std::optional<std::string>& cgroups_path, const std::string& id, bool user_manager);
// "a-b-c.slice" -> "/a.slice/a-b.slice/a-b-c.slice", "-.slice" -> "" (the
// root), as systemd nests slices; malformed names throw naming `field`.
std::string expand_slice(const std::string& slice, const std::string& field);

// A D-Bus unit property. The value's alternative fixes its signature:
// s b t au ay a(ss) a(st), in that order (signature()).
struct UnitProperty {
  using StrPairs = std::vector<std::pair<std::string, std::string>>;
  using StrU64s = std::vector<std::pair<std::string, uint64_t>>;
  std::string name;
  std::variant<std::string, bool, uint64_t, std::vector<uint32_t>, std::vector<uint8_t>, StrPairs, StrU64s> value;
  const char* signature() const;
  bool operator==(const UnitProperty&) const = default;
};

// The resources as the systemd driver applies them: a CPU quota rounded up
// to systemd's 1 % steps (it stores CPUQuota= as a percentage), so the
// cgroup file and the unit agree.
spec::Resources systemd_resources(const spec::Resources& r);

// What StartTransientUnit gets for a new scope: Description, Slice,
// Delegate, PIDs, the accounting switches, DefaultDependencies=no, then
// resource_properties(). `v1`: a cgroup v1/hybrid host (BlockIOAccounting
// for IOAccounting).
std::vector<UnitProperty> scope_properties(const SystemdUnit& u, pid_t pid, const std::vector<UnitProperty>& resources,
                                           bool v1 = false);

// The properties for the file writes of `r` (systemd_resources() applied):
// derived from v2_writes(r), so a property says what its file says (memory.*,
// pids.max, cpu.weight/idle/max, cpuset.*, io.weight, io.max; others are
// written to the files only), plus the device policy of r.devices when
// systemd can express it (an allow list after a deny-all; otherwise systemd
// keeps none and husk's own device program alone decides). `device_groups`:
// /proc/devices ("char"/"block" major -> name) for "M:*" rules.
using DeviceGroups = std::vector<std::pair<std::string, int64_t>>;  // ("char-pts", 136)...
std::vector<UnitProperty> resource_properties(const spec::Resources& r, bool bfq_weight = false,
                                              const DeviceGroups& device_groups = {});
// The same on a cgroup v1/hybrid host, from v1_writes(r): MemoryLimit,
// CPUShares, CPUQuotaPerSecUSec (+ CPUQuotaPeriodUSec), TasksMax,
// BlockIOWeight, BlockIODeviceWeight, BlockIO{Read,Write}Bandwidth (others:
// the files only, which systemd leaves alone), and the device policy:
// systemd writes devices.* itself, so rules it cannot hold throw naming
// linux.resources.devices.
std::vector<UnitProperty> v1_resource_properties(const spec::Resources& r, const DeviceGroups& device_groups = {});
// The device groups from /proc/devices text.
DeviceGroups parse_proc_devices(const std::string& text);

}  // namespace husk::cgroups
