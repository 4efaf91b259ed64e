#include "launch/host_objects.h"

#include <fcntl.h>
#include <sys/stat.h>

#include "base/error.h"
#include "namespaces/namespaces.h"

namespace husk::rt {
namespace {

// The object opened as `path` (plain_path'ed, as the policy asks), or null.
const base::Judged* opened_as(const HostObjects& h, const std::string& path) {
  auto is = [&](const base::Judged& j) { return policy::plain_path(j.opened) == path; };
  if (h.root && is(*h.root)) return &*h.root;
  for (const auto& [i, j] : h.sources)
    if (is(j)) return &j;
  for (const auto& [i, layers] : h.layers)
    for (const auto& l : layers)
      if (is(l)) return &l;
  return nullptr;
}

}  // namespace

policy::HostProbe HostObjects::probe() const {
  auto resolve = [this](const std::string& path) {
    const base::Judged* j = opened_as(*this, path);
    return j ? j->id.real : path;
  };
  auto host_namespace = [this](const std::string& path, const std::string& type) {
    const std::string name = ns::proc_ns_file(type);
    for (const auto& [i, j] : namespaces) {
      if (j.opened != path) continue;
      struct stat host;
      for (const std::string owner : {"/proc/1/ns/", "/proc/self/ns/"})
        if (::stat((owner + name).c_str(), &host) == 0 && base::same_object(host, j.id)) return true;
    }
    return false;
  };
  return {resolve, host_namespace};
}

std::map<size_t, int> HostObjects::namespace_fds() const {
  std::map<size_t, int> out;
  for (const auto& [i, j] : namespaces) out[i] = j.fd.get();
  return out;
}

std::map<size_t, base::Identity> HostObjects::source_ids() const {
  std::map<size_t, base::Identity> out;
  for (const auto& [i, j] : sources) out[i] = j.id;
  return out;
}

std::map<size_t, std::vector<base::Identity>> HostObjects::layer_ids() const {
  std::map<size_t, std::vector<base::Identity>> out;
  for (const auto& [i, ls] : layers)
    for (const auto& l : ls) out[i].push_back(l.id);
  return out;
}

HostObjects open_host_objects(const spec::Spec& spec, const std::string& bundle_dir, bool strict) {
  HostObjects h;
  auto open = [&](const std::string& path, int flags, const std::string& field) -> std::optional<base::Judged> {
    const std::string abs = !path.empty() && path[0] == '/' ? path : bundle_dir + "/" + path;
    try {
      return base::judge(abs, flags, field);
    } catch (const Error&) {
      if (strict) throw;
      return std::nullopt;
    }
  };
  bool joins_mount_ns = false;
  if (spec.linux_) {
    const auto& nss = spec.linux_->namespaces;
    for (size_t i = 0; i < nss.size(); ++i) {
      if (nss[i].path.empty()) continue;
      joins_mount_ns |= nss[i].type == "mount";
      // A namespace file is always absolute (validated); read-only is all setns needs.
      if (auto j = open(nss[i].path, O_RDONLY, "linux.namespaces[" + std::to_string(i) + "].path"))
        h.namespaces.emplace(i, std::move(*j));
    }
  }
  if (spec.root) h.root = open(spec.root->path, O_PATH | O_DIRECTORY, "root.path");
  for (size_t i = 0; i < spec.mounts.size() && !joins_mount_ns; ++i) {
    const auto& m = spec.mounts[i];
    if (!spec::is_bind(m) || m.source.empty()) continue;
    if (auto j = open(m.source, O_PATH, "mounts[" + std::to_string(i) + "].source")) h.sources.emplace(i, std::move(*j));
  }
  for (size_t i = 0; i < spec.mounts.size() && !joins_mount_ns; ++i) {
    const auto wanted = spec::overlay_layers(spec.mounts[i]);
    std::vector<base::Judged> layers;
    for (const auto& l : wanted) {
      auto j = open(l.dir, O_PATH | O_DIRECTORY, "mounts[" + std::to_string(i) + "].options[" + std::to_string(l.option) + "]");
      // All or none: the init replaces them in order.
      if (!j) break;
      layers.push_back(std::move(*j));
    }
    if (!layers.empty() && layers.size() == wanted.size()) h.layers.emplace(i, std::move(layers));
  }
  return h;
}

}  // namespace husk::rt
