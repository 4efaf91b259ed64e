// The sandbox's Landlock plan: the mount view said again to the kernel, so
// that a way around a mount (one the kernel or a runtime left open) still
// meets the same walls. Pure, from the config sandbox_config built.
#include <algorithm>
#include <string>

#include "base/path.h"
#include "sandbox/internal.h"
#include "sandbox/proxy.h"
#include "sandbox/socks.h"

namespace husk::rt {
namespace {

// The devices a command writes to; the rest of /dev is read-only.
const char* const kWritableDevices[] = {"/dev/null", "/dev/zero", "/dev/full", "/dev/random",
                                        "/dev/urandom", "/dev/tty", "/dev/ptmx", "/dev/console"};

bool has_option(const nlohmann::ordered_json& m, const std::string& option) {
  if (!m.contains("options")) return false;
  for (const auto& o : m["options"])
    if (o == option) return true;
  return false;
}

// Where the mount view lets the command write: binds without "rro" (the
// working directory, --rw), overlays, the scratch tmpfs (mode 1777: /tmp,
// /var/tmp, /dev/shm; the scratch home), the pseudo-terminals. /run,
// /home and /root are fresh and the user's, yet nothing is meant to be
// kept there: read-only.
bool writable(const nlohmann::ordered_json& m, const std::string& home) {
  const std::string type = m["type"], dest = m["destination"];
  if (type == "bind") return !has_option(m, "rro") && !has_option(m, "ro");
  if (type == "overlay" || type == "devpts") return true;
  return type == "tmpfs" && (has_option(m, "mode=1777") || dest == home);
}

}  // namespace

landlock::Plan landlock_plan(const SandboxOptions& o, const SandboxHost& h, const nlohmann::ordered_json& cfg,
                             const std::vector<std::string>& hidden) {
  landlock::Plan plan;
  // Every mount is below the root, which shows nothing of its own.
  plan.trees.push_back({"/", false});
  // What hides a path (the null device or an empty file bound over it) is no tree.
  std::vector<std::string> binds;  // writable binds: one inside another (a pinned directory) adds no right
  for (const auto& m : cfg["mounts"]) {
    const std::string dest = m["destination"];
    if (!writable(m, h.home) || std::find(hidden.begin(), hidden.end(), dest) != hidden.end()) continue;
    if (m["type"] == "bind" && std::any_of(binds.begin(), binds.end(), [&](const std::string& b) {
          return base::is_within(dest, b);
        }))
      continue;
    if (m["type"] == "bind") binds.push_back(dest);
    plan.trees.push_back({dest, true});
  }
  for (const char* dev : kWritableDevices) plan.trees.push_back({dev, true});
  // The kernel views' own masks are left to the mounts (not in `hidden`):
  // /proc's entries come and go with the processes, a walk would miss the new ones.
  plan.hidden = hidden;
  // Persistence files protected by read-only mounts inside writable trees
  // would be a read-only exception there, which Landlock cannot make (a
  // right on a directory holds below it): the mounts alone protect them.
  plan.scope_abstract_unix = plan.scope_signal = true;
  // A file system domain would refuse the nested sandbox's every mount: the
  // mount view alone stays, its mounts locked in any namespace made inside.
  plan.file_system = !o.allow_nested;
  // --allow-host: the proxies are the only way out; nothing listens.
  if (o.proxied()) {
    plan.limit_tcp = true;
    plan.connect_ports = {kProxyPort, socks::kPort};
  }
  return plan;
}

}  // namespace husk::rt
