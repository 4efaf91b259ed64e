// Cgroup management: one Manager interface made by make_manager() from a
// Config: cgroupfs v2 (unified) and v1 (legacy/hybrid), systemd, or none.
// Translation of linux.resources to file writes is pure. The header callers
// outside cgroups/ include; each job has its own:
//   host.h       the host's hierarchies; where a process or path is in them
//   translate.h  linux.resources -> file writes; cgroupsPath -> a path
//   devices.h    device rules and the v2 eBPF device filter
//   rootless.h   limits and cgroup placement for an unprivileged caller
//   manager.h    Config, Manager, Stats, make_manager()
//   systemd.h    the systemd driver's unit and properties (included apart)
#pragma once

#include "cgroups/devices.h"
#include "cgroups/host.h"
#include "cgroups/manager.h"
#include "cgroups/rootless.h"
#include "cgroups/translate.h"
