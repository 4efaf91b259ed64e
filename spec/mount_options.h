// spec.mounts[].options read the way the mount code applies them. Pure: the
// policy checks and the mount planner read one parser.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "spec/spec.h"

namespace husk::spec {

struct MountOptions {
  unsigned long flags = 0;          // MS_* set on mount(2)
  unsigned long propagation = 0;    // MS_SHARED/MS_SLAVE/MS_PRIVATE/MS_UNBINDABLE (| MS_REC)
  uint64_t attr_set = 0;            // MOUNT_ATTR_* to set recursively (r* options)
  uint64_t attr_clr = 0;            // MOUNT_ATTR_* to clear recursively
  bool bind = false;                // bind or rbind
  bool recursive_bind = false;      // rbind
  std::string data;                 // filesystem-specific options joined with ','
  // "idmap"/"ridmap" are consumed here; whether a mount is idmapped is is_idmapped().
  bool recursive_idmap = false;     // "ridmap": idmap every mount of an rbind, not just the top
  bool tmpcopyup = false;           // tmpfs only: copy what the image has at the destination into it
};
// Parses every option runc accepts; unknown strings go to `data` (they are fs options).
MountOptions parse_mount_options(const std::vector<std::string>& options);

// Every option string parse_mount_options() understands (for features.json).
std::vector<std::string> known_mount_options();

// The host directories an overlay mount's options name (lowerdir, lowerdir+,
// upperdir, workdir, datadir+), in the order of the data string the kernel
// gets: options[option] holds `dir`. Empty for any other type.
struct OverlayLayer {
  size_t option;
  std::string dir;
};
std::vector<OverlayLayer> overlay_layers(const Mount& m);
// Overlay `data` with its layers (in overlay_layers' order) replaced by
// `layers`; throws when the counts differ.
std::string replace_overlay_layers(const std::string& data, const std::vector<std::string>& layers);

}  // namespace husk::spec
