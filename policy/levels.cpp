// The rule ids and the built-in levels: Kubernetes' Pod Security Standards
// mapped onto OCI fields.
#include "policy/policy.h"

namespace husk::policy {
namespace {

// Where the engines keep what they bind into one container (its hosts file,
// /dev/shm, volumes, its rootfs): one container's directory, never the whole
// store, which holds every other container's secrets and layers.
const std::vector<std::string> kEngineDirs = {
    // containerd (CRI and ctr), k3s, nerdctl
    "/var/lib/containerd/io.containerd.grpc.v1.cri/sandboxes/*",
    "/var/lib/containerd/io.containerd.grpc.v1.cri/containers/*",
    "/run/containerd/io.containerd.grpc.v1.cri/sandboxes/*",
    "/run/containerd/io.containerd.runtime.v2.task/*/*",
    "/var/lib/rancher/k3s/agent/containerd/io.containerd.grpc.v1.cri/sandboxes/*",
    "/run/k3s/containerd/io.containerd.runtime.v2.task/*/*",
    "/var/lib/nerdctl/*/containers/*/*",
    // kubelet: a pod's volumes, etc-hosts and termination logs
    "/var/lib/kubelet/pods/*/volumes/*/*", "/var/lib/kubelet/pods/*/volume-subpaths/*/*",
    "/var/lib/kubelet/pods/*/etc-hosts", "/var/lib/kubelet/pods/*/containers/*/*",
    // podman, CRI-O (root and rootless)
    "/var/lib/containers/storage/overlay-containers/*/userdata",
    "/run/containers/storage/overlay-containers/*/userdata",
    "/var/lib/containers/storage/overlay/*/merged", "/var/lib/containers/storage/volumes/*/_data",
    "/run/user/*/containers/overlay-containers/*/userdata",
    "/home/*/.local/share/containers/storage/overlay-containers/*/userdata",
    "/home/*/.local/share/containers/storage/overlay/*/merged",
    "/home/*/.local/share/containers/storage/volumes/*/_data",
    // Docker
    "/var/lib/docker/containers/*", "/var/lib/docker/volumes/*/_data", "/var/lib/docker/overlay2/*/merged",
    // the devices every engine binds when it cannot mknod
    "/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"};

const std::vector<std::string> kRuleIds = {
    "host-namespaces", "host-hooks", "privileged-capabilities", "host-path-mounts", "sensitive-mounts", "mount-types",
    "host-root-mapping", "host-devices",
    "unmasked-proc",   "unsafe-sysctls",          "apparmor-unconfined", "selinux-type", "no-seccomp",
    "seccomp-default-allow", "seccomp-syscalls", "no-new-privileges", "root-user", "network-not-isolated", "writable-root",
    "no-memory-limit", "no-pids-limit"};

}  // namespace

const std::vector<std::string>& rule_ids() { return kRuleIds; }

Policy builtin(const std::string& level) {
  Policy p;
  p.name = level;
  if (level != "baseline" && level != "restricted")
    throw Error("policy \"" + level + "\": not a built-in level (baseline, restricted) nor a file");
  for (const char* id : {"host-namespaces", "host-hooks", "privileged-capabilities", "host-path-mounts",
                         "sensitive-mounts", "mount-types", "host-root-mapping", "host-devices", "unmasked-proc",
                         "unsafe-sysctls", "apparmor-unconfined", "selinux-type"})
    p.rules[id] = Severity::error;
  p.rules["no-seccomp"] = p.rules["seccomp-default-allow"] = p.rules["seccomp-syscalls"] = Severity::warn;
  p.allowed_mount_sources = kEngineDirs;
  if (level == "restricted") {
    p.restricted_capabilities = true;
    for (const char* id : {"no-seccomp", "seccomp-default-allow", "seccomp-syscalls", "no-new-privileges", "root-user"})
      p.rules[id] = Severity::error;
    for (const char* id : {"network-not-isolated", "writable-root", "no-memory-limit", "no-pids-limit"})
      p.rules[id] = Severity::warn;
  }
  return p;
}

}  // namespace husk::policy
