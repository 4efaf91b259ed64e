// The host objects a bundle names, opened once on the host before the
// operator's policy judges them, and handed as those fds (or their judged
// identity) to the init: nothing judged is looked up by its path string
// again (issue 23).
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/judged.h"
#include "policy/policy.h"
#include "spec/spec.h"

namespace husk::rt {

struct HostObjects {
  std::map<size_t, base::Judged> namespaces;  // linux.namespaces index (those joined by path)
  std::optional<base::Judged> root;           // root.path
  std::map<size_t, base::Judged> sources;     // spec.mounts index (bind mounts)
  // spec.mounts index -> an overlay's layers, in spec::overlay_layers' order.
  std::map<size_t, std::vector<base::Judged>> layers;

  // The policy's answers from these fds. A path that was not opened (husk
  // check: a missing one is no error there) is judged as written.
  policy::HostProbe probe() const;
  // linux.namespaces index -> its fd (ns::check_sysctl_joined).
  std::map<size_t, int> namespace_fds() const;
  // spec.mounts index -> what the bind source is (ns::RootfsOptions).
  std::map<size_t, base::Identity> source_ids() const;
  std::map<size_t, std::vector<base::Identity>> layer_ids() const;
};

// Open what `spec` names on the host: namespace files (O_RDONLY), root.path
// (O_PATH|O_DIRECTORY), bind sources (O_PATH) and overlay layers
// (O_PATH|O_DIRECTORY), symlinks followed as runc does; relative paths are
// the bundle's. Bind sources and layers are left out when the spec joins a
// mount namespace: they are that namespace's paths.
// `strict` (create, run): one that cannot be opened fails, naming its field.
HostObjects open_host_objects(const spec::Spec& spec, const std::string& bundle_dir, bool strict);

}  // namespace husk::rt
