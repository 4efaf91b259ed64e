// Writing the uid/gid maps of a new user namespace, for the container's and
// for an idmapped mount's: directly when the kernel lets husk, else through
// the setuid helpers newuidmap/newgidmap (shadow, Debian package uidmap),
// which map what /etc/subuid and /etc/subgid delegate to the user.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "spec/spec.h"

namespace husk::ns {

// ---------- pure ----------

struct IdRange {
  uint64_t start = 0, count = 0;  // [start, start + count)
};

// The ranges /etc/subuid (or /etc/subgid) text delegates to the user: lines
// "owner:start:count" whose owner is `user` or the decimal `uid`, as shadow
// matches them. Comments, malformed lines, empty or out-of-range ranges are skipped.
std::vector<IdRange> parse_subids(std::string_view text, std::string_view user, uint32_t uid);

// The name /etc/passwd text gives `uid` ("" when none).
std::string passwd_name(std::string_view text, uint32_t uid);

// The ids of the user namespace a /proc/<pid>/uid_map (or gid_map) text
// describes, as seen inside it (its first column).
std::vector<IdRange> parse_proc_id_map(std::string_view text);

// Who writes the maps, and what it may map.
struct MapCaller {
  uint32_t euid = 0, egid = 0;
  std::string user;          // euid's name ("" when /etc/passwd has none)
  bool privileged = false;   // euid 0: writes any map of ids its own namespace has
  bool in_user_ns = false;   // husk itself runs in a user namespace (rootless podman)
  std::vector<IdRange> own_uids, own_gids;  // the ids husk's user namespace has
  std::vector<IdRange> subuids, subgids;    // what /etc/subuid, /etc/subgid delegate to the caller
};

enum class MapWay { Direct, Helper };  // written by husk, or by newuidmap/newgidmap
struct MapPlan {
  MapWay uid = MapWay::Direct, gid = MapWay::Direct;
  bool deny_setgroups = false;  // "deny" to /proc/<pid>/setgroups before gid_map
};

// How `uids`/`gids` get written for `c`, after checking every range: an
// unprivileged caller's single mapping of its own id is direct (gid_map
// after setgroups "deny", as the kernel requires without CAP_SETGID),
// anything else goes through the helpers and must be delegated in
// /etc/subuid, /etc/subgid (or be the caller's own id, count 1); a
// privileged caller maps ids its own namespace has. Errors name
// `field`.uidMappings[i] (field: "linux", "mounts[2]").
MapPlan plan_id_maps(const MapCaller& c, const std::vector<spec::IdMapping>& uids,
                     const std::vector<spec::IdMapping>& gids, const std::string& field);

// ---------- effects ----------

// Whether a uid_map's ranges are the host's own (every id onto itself).
bool is_identity_map(const std::vector<IdRange>& map);
// True when this process is in a user namespace other than the host's.
bool in_user_namespace();

// This process: euid/egid, its name, its namespace's ids and its delegations.
MapCaller current_caller();

// Writes the maps of `pid`'s new user namespace as plan_id_maps says.
void write_id_maps(pid_t pid, const std::vector<spec::IdMapping>& uids, const std::vector<spec::IdMapping>& gids,
                   const std::string& field, const MapCaller& c);

}  // namespace husk::ns
