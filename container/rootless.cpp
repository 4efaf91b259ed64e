#include "container/rootless.h"

#include <unistd.h>

#include <cstdlib>

#include "base/error.h"
#include "namespaces/id_maps.h"

namespace husk::rt {

std::optional<bool> parse_rootless_flag(const std::string& value) {
  if (value.empty() || value == "auto") return std::nullopt;
  for (const char* t : {"1", "t", "T", "TRUE", "true", "True"})
    if (value == t) return true;
  for (const char* f : {"0", "f", "F", "FALSE", "false", "False"})
    if (value == f) return false;
  throw Error("--rootless: \"" + value + "\" is not true, false or auto");
}

bool detect_rootless(const std::optional<bool>& flag) {
  if (flag) return *flag;
  return ::geteuid() != 0 || ns::in_user_namespace();
}

std::string default_state_root() {
  const char* xdg = std::getenv("XDG_RUNTIME_DIR");
  bool have_xdg = xdg && *xdg;
  if (::geteuid() != 0) return have_xdg ? std::string(xdg) + "/husk" : "";
  // Root on the host keeps /run/husk whatever its XDG_RUNTIME_DIR (/run/user/0).
  if (!have_xdg || !ns::in_user_namespace()) return "/run/husk";
  const char* user = std::getenv("USER");
  return user && std::string(user) == "root" ? "/run/husk" : std::string(xdg) + "/husk";
}

}  // namespace husk::rt
