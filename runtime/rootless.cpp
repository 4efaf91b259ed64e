#include "runtime/rootless.h"

#include <unistd.h>

#include <cstdlib>
#include <sstream>

#include "base/error.h"
#include "base/file.h"

namespace husk::rt {

std::optional<bool> parse_rootless_flag(const std::string& value) {
  if (value.empty() || value == "auto") return std::nullopt;
  for (const char* t : {"1", "t", "T", "TRUE", "true", "True"})
    if (value == t) return true;
  for (const char* f : {"0", "f", "F", "FALSE", "false", "False"})
    if (value == f) return false;
  throw Error("--rootless: \"" + value + "\" is not true, false or auto");
}

bool in_user_namespace() {
  std::optional<std::string> map = base::try_read_file("/proc/self/uid_map");
  if (!map) return false;
  std::istringstream in(*map);
  unsigned long inside = 1, outside = 1, count = 0;
  in >> inside >> outside >> count;
  return !(inside == 0 && outside == 0 && count == 4294967295UL);
}

bool detect_rootless(const std::optional<bool>& flag, bool systemd_cgroup) {
  if (flag) return *flag;
  if (systemd_cgroup) return false;
  return ::geteuid() != 0 || in_user_namespace();
}

std::string default_state_root() {
  const char* xdg = std::getenv("XDG_RUNTIME_DIR");
  bool have_xdg = xdg && *xdg;
  if (::geteuid() != 0) return have_xdg ? std::string(xdg) + "/husk" : "";
  // Root on the host keeps /run/husk whatever its XDG_RUNTIME_DIR (/run/user/0).
  if (!have_xdg || !in_user_namespace()) return "/run/husk";
  const char* user = std::getenv("USER");
  return user && std::string(user) == "root" ? "/run/husk" : std::string(xdg) + "/husk";
}

}  // namespace husk::rt
