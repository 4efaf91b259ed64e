#include "base/process.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#include "base/error.h"
#include "base/file.h"

namespace husk::base {

// Reads /proc/<pid>/stat; fields after the command name (which may hold spaces
// and parentheses) start after the last ')'.
static bool read_stat(pid_t pid, char& state, uint64_t& start_time) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/stat", pid);
  // Gone (ENOENT) is the usual answer at delete: not thrown, an exception
  // costs a start-up's worth of unwinder pages.
  std::optional<std::string> text;
  try {
    text = try_read_file(path);
  } catch (const Error&) {
    return false;  // e.g. ESRCH: it went away while we read
  }
  if (!text) return false;
  const std::string& s = *text;
  auto rp = s.rfind(')');
  if (rp == std::string::npos || rp + 2 >= s.size()) return false;
  state = s[rp + 2];
  // field 3 is state; start time is field 22 -> 19 more fields after state
  const char* p = s.c_str() + rp + 2;
  for (int field = 3; field < 22; ++field) {
    p = strchr(p, ' ');
    if (!p) return false;
    ++p;
  }
  start_time = strtoull(p, nullptr, 10);
  return true;
}

uint64_t process_start_time(pid_t pid) {
  char st;
  uint64_t t;
  return read_stat(pid, st, t) ? t : 0;
}

bool process_alive(pid_t pid, uint64_t start_time) {
  if (pid <= 0) return false;
  char st;
  uint64_t t;
  if (!read_stat(pid, st, t)) return false;
  if (st == 'Z' || st == 'X') return false;
  return start_time == 0 || t == start_time;
}

}  // namespace husk::base
