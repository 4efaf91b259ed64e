#include "container/internal.h"

#include <net/if.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include "base/error.h"
#include "container/state.h"
#include "launch/host_objects.h"
#include "namespaces/namespaces.h"

namespace husk::rt {

std::string absolute_dir(const std::string& path, const char* what) {
  char buf[PATH_MAX];
  if (!::realpath(path.c_str(), buf)) throw sys_error(std::string(what) + " " + path);
  struct stat st;
  if (::stat(buf, &st) != 0 || !S_ISDIR(st.st_mode)) throw Error(std::string(what) + " " + path + ": not a directory");
  return buf;
}

namespace {

// Features husk does not implement fail create with the reason, never silently.

// Features husk does not implement fail create with the reason, never silently.
void check_unsupported(const spec::Linux& lx) {
  if (lx.intel_rdt) {
    struct statfs fs;
    if (::statfs("/sys/fs/resctrl", &fs) != 0 || fs.f_type != 0x7655821 /* RDTGROUP_SUPER_MAGIC */)
      throw Error("linux.intelRdt: no resctrl filesystem is mounted at /sys/fs/resctrl");
    throw Error("linux.intelRdt: not supported by husk");
  }
  for (const auto& [host_name, dev] : lx.net_devices) {
    if (::if_nametoindex(host_name.c_str()) == 0)
      throw Error("linux.netDevices[\"" + host_name + "\"]: no such network interface on the host");
    throw Error("linux.netDevices: moving host interfaces into the container is not supported by husk");
  }
}

// `own`: the config husk made itself (run_own_config), read without
// printing and parsing it again, else the bundle's config.json is read;
// `text` gets it either way.
spec::Spec load_config(const std::string& bundle, const nlohmann::ordered_json* own, std::string& text) {
  spec::Spec s;
  if (!own) {
    s = spec::load_bundle(bundle, &text);
  } else {
    text = own->dump() + "\n";
    try {
      s = spec::from_json(*own);
      spec::validate(s, true);
    } catch (const Error& e) {
      rethrow_with("config.json", e);
    }
  }
  // What husk itself needs beyond the spec's rules.
  try {
    if (!s.linux_) throw Error("linux: required (husk runs Linux containers)");
    if (!s.linux_->has_namespace("mount"))
      throw Error("linux.namespaces: a mount namespace is required");
    ns::check_sysctl(s);
    check_unsupported(*s.linux_);
    return s;
  } catch (const Error& e) {
    rethrow_with("config.json", e);
  }
}

// Said where husk will not empty or remove a cgroup that is there.

}  // namespace

// The bundle's config (`own`: see load_config) and every host object it
// names, opened once: the policy judges those fds and create uses them.
Bundle open_bundle(const std::string& bundle_arg, const nlohmann::ordered_json* own) {
  Bundle b;
  b.dir = absolute_dir(bundle_arg, "bundle");
  b.spec = load_config(b.dir, own, b.config_text);
  // A relative bind source is the bundle's (config.md; runc works in the
  // bundle directory), never husk's caller's working directory.
  for (auto& m : b.spec.mounts)
    if (!m.source.empty() && m.source[0] != '/' && spec::is_bind(m))
      m.source = b.dir + "/" + m.source;
  b.host = open_host_objects(b.spec, b.dir, true);
  b.rootfs = b.host.root->id.real;
  try {
    ns::check_sysctl_joined(b.spec, b.host.namespace_fds());
  } catch (const Error& e) {
    rethrow_with("config.json", e);
  }
  return b;
}

}  // namespace husk::rt
