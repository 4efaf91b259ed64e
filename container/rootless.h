// Running without root: whether husk counts as rootless (runc's --rootless
// rule) and where an unprivileged caller's state lives.
#pragma once

#include <optional>
#include <string>

namespace husk::rt {

// --rootless: "auto" (or "") is nullopt; true/false as Go's ParseBool reads
// them (1 t T TRUE true True, 0 f F FALSE false False). Anything else throws.
std::optional<bool> parse_rootless_flag(const std::string& value);

// runc's auto-detection: rootless when not root, or root of a user
// namespace (rootless podman runs the runtime as root of its own). With the
// systemd driver that means the caller's own systemd, on the user bus.
bool detect_rootless(const std::optional<bool>& flag);

// The default --root: /run/husk for root on the host; $XDG_RUNTIME_DIR/husk
// for anybody else (root of a user namespace too, unless $USER is root, as
// runc decides). "" when a non-root caller has no XDG_RUNTIME_DIR.
std::string default_state_root();

}  // namespace husk::rt
