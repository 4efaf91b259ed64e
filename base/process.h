// What /proc says of a process: is it the one we started, and alive.
#pragma once

#include <sys/types.h>

#include <cstdint>

namespace husk::base {

// Field 22 of /proc/<pid>/stat (start time in clock ticks), 0 if the process is gone.
uint64_t process_start_time(pid_t pid);
// True when pid is alive, not a zombie, and (when start_time != 0) still the same process.
bool process_alive(pid_t pid, uint64_t start_time);

}  // namespace husk::base
