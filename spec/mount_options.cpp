// Pure parsing of spec.mounts[].options: the strings runc accepts -> mount(2)
// flags, propagation, mount_setattr(2) attributes and filesystem data.
#include "spec/mount_options.h"

#include <sys/mount.h>

#include <functional>
#include <string_view>

namespace husk::spec {

namespace {

struct FlagOpt {
  std::string_view name;
  bool clear;
  unsigned long flag;
};
constexpr FlagOpt kFlagOpts[] = {
    {"defaults", false, 0},
    {"ro", false, MS_RDONLY},
    {"rw", true, MS_RDONLY},
    {"nosuid", false, MS_NOSUID},
    {"suid", true, MS_NOSUID},
    {"nodev", false, MS_NODEV},
    {"dev", true, MS_NODEV},
    {"noexec", false, MS_NOEXEC},
    {"exec", true, MS_NOEXEC},
    {"sync", false, MS_SYNCHRONOUS},
    {"async", true, MS_SYNCHRONOUS},
    {"dirsync", false, MS_DIRSYNC},
    {"remount", false, MS_REMOUNT},
    {"mand", false, MS_MANDLOCK},
    {"nomand", true, MS_MANDLOCK},
    {"noatime", false, MS_NOATIME},
    {"atime", true, MS_NOATIME},
    {"nodiratime", false, MS_NODIRATIME},
    {"diratime", true, MS_NODIRATIME},
    {"relatime", false, MS_RELATIME},
    {"norelatime", true, MS_RELATIME},
    {"strictatime", false, MS_STRICTATIME},
    {"nostrictatime", true, MS_STRICTATIME},
    {"lazytime", false, MS_LAZYTIME},
    {"nolazytime", true, MS_LAZYTIME},
    {"iversion", false, MS_I_VERSION},
    {"noiversion", true, MS_I_VERSION},
    {"silent", false, MS_SILENT},
    {"loud", true, MS_SILENT},
    {"nosymfollow", false, MS_NOSYMFOLLOW},
    {"symfollow", true, MS_NOSYMFOLLOW},
};

struct PropOpt {
  std::string_view name;
  unsigned long flag;
};
constexpr PropOpt kPropOpts[] = {
    {"shared", MS_SHARED},          {"rshared", MS_SHARED | MS_REC},
    {"slave", MS_SLAVE},            {"rslave", MS_SLAVE | MS_REC},
    {"private", MS_PRIVATE},        {"rprivate", MS_PRIVATE | MS_REC},
    {"unbindable", MS_UNBINDABLE},  {"runbindable", MS_UNBINDABLE | MS_REC},
};

struct AttrOpt {
  std::string_view name;
  uint64_t set;
  uint64_t clr;
};
// Recursive mount_setattr(2) attributes. The atime modes are one field in the
// kernel (relatime is 0), so changing it must clear the whole MOUNT_ATTR__ATIME
// mask; "ratime"/"rnostrictatime" go back to the kernel default, relatime.
constexpr AttrOpt kAttrOpts[] = {
    {"rro", MOUNT_ATTR_RDONLY, 0},
    {"rrw", 0, MOUNT_ATTR_RDONLY},
    {"rnosuid", MOUNT_ATTR_NOSUID, 0},
    {"rsuid", 0, MOUNT_ATTR_NOSUID},
    {"rnodev", MOUNT_ATTR_NODEV, 0},
    {"rdev", 0, MOUNT_ATTR_NODEV},
    {"rnoexec", MOUNT_ATTR_NOEXEC, 0},
    {"rexec", 0, MOUNT_ATTR_NOEXEC},
    {"rnodiratime", MOUNT_ATTR_NODIRATIME, 0},
    {"rdiratime", 0, MOUNT_ATTR_NODIRATIME},
    {"rrelatime", MOUNT_ATTR_RELATIME, MOUNT_ATTR__ATIME},
    {"rnorelatime", 0, MOUNT_ATTR_RELATIME},
    {"rnoatime", MOUNT_ATTR_NOATIME, MOUNT_ATTR__ATIME},
    {"ratime", MOUNT_ATTR_RELATIME, MOUNT_ATTR__ATIME},
    {"rstrictatime", MOUNT_ATTR_STRICTATIME, MOUNT_ATTR__ATIME},
    {"rnostrictatime", MOUNT_ATTR_RELATIME, MOUNT_ATTR__ATIME},
    {"rnosymfollow", MOUNT_ATTR_NOSYMFOLLOW, 0},
    {"rsymfollow", 0, MOUNT_ATTR_NOSYMFOLLOW},
};

}  // namespace

MountOptions parse_mount_options(const std::vector<std::string>& options) {
  MountOptions mo;
  for (const auto& o : options) {
    if (o == "bind") {
      mo.bind = true;
      continue;
    }
    if (o == "rbind") {
      mo.bind = mo.recursive_bind = true;
      continue;
    }
    if (o == "idmap" || o == "ridmap") {
      mo.recursive_idmap = o == "ridmap";
      continue;
    }
    if (o == "tmpcopyup") {
      mo.tmpcopyup = true;
      continue;
    }
    bool done = false;
    for (const auto& f : kFlagOpts) {
      if (f.name != o) continue;
      if (f.clear)
        mo.flags &= ~f.flag;
      else
        mo.flags |= f.flag;
      done = true;
      break;
    }
    for (const auto& p : kPropOpts) {
      if (done || p.name != o) continue;
      mo.propagation = p.flag;
      done = true;
    }
    for (const auto& a : kAttrOpts) {
      if (done || a.name != o) continue;
      // A later option overrides an earlier one for the same attribute.
      mo.attr_set &= ~(a.clr | a.set);
      mo.attr_clr &= ~a.set;
      mo.attr_set |= a.set;
      mo.attr_clr |= a.clr;
      done = true;
    }
    if (done) continue;
    if (!mo.data.empty()) mo.data += ',';
    mo.data += o;
  }
  return mo;
}

std::vector<std::string> known_mount_options() {
  std::vector<std::string> out{"bind", "rbind", "idmap", "ridmap", "tmpcopyup"};
  for (const auto& f : kFlagOpts) out.emplace_back(f.name);
  for (const auto& p : kPropOpts) out.emplace_back(p.name);
  for (const auto& a : kAttrOpts) out.emplace_back(a.name);
  return out;
}

namespace {

// Calls `dir` with each host directory an overlay data string names and
// returns the string with what it answered in their place.
std::string map_overlay_layers(const std::string& data, const std::function<std::string(const std::string&)>& dir) {
  std::string out;
  size_t start = 0;
  while (start <= data.size()) {
    size_t comma = data.find(',', start);
    if (comma == std::string::npos) comma = data.size();
    std::string o = data.substr(start, comma - start);
    const size_t eq = o.find('=');
    const std::string key = eq == std::string::npos ? "" : o.substr(0, eq);
    if (key == "lowerdir" || key == "lowerdir+" || key == "upperdir" || key == "workdir" || key == "datadir+") {
      std::string dirs = key + "=";
      size_t from = eq + 1;
      while (from <= o.size()) {
        size_t colon = o.find(':', from);
        if (colon == std::string::npos) colon = o.size();
        const std::string d = o.substr(from, colon - from);
        dirs += d.empty() ? d : dir(d);
        if (colon < o.size()) dirs += ":";
        from = colon + 1;
      }
      o = dirs;
    }
    out += (start ? "," : "") + o;
    start = comma + 1;
  }
  return out;
}

}  // namespace

std::vector<OverlayLayer> overlay_layers(const Mount& m) {
  std::vector<OverlayLayer> out;
  if (m.type != "overlay") return out;
  for (size_t j = 0; j < m.options.size(); ++j)
    map_overlay_layers(parse_mount_options({m.options[j]}).data, [&](const std::string& d) {
      out.push_back({j, d});
      return d;
    });
  return out;
}

std::string replace_overlay_layers(const std::string& data, const std::vector<std::string>& layers) {
  size_t next = 0;
  std::string out = map_overlay_layers(data, [&](const std::string& d) {
    if (next >= layers.size()) throw Error("overlay layer " + d + ": no replacement for it");
    return layers[next++];
  });
  if (next != layers.size()) throw Error("overlay: " + std::to_string(layers.size()) + " layers given, " + std::to_string(next) + " in the options");
  return out;
}

}  // namespace husk::spec
