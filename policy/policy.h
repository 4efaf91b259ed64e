// Policy checks of a bundle's config.json before anything is created
// (`husk check`): each rule looks at the OCI fields that weaken isolation and
// reports a finding naming the field, its value and why it matters. Pure
// logic: no syscalls, so every rule unit-tests without root.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "spec/spec.h"

namespace husk::policy {

enum class Severity { off, warn, error };

// What gives whoever reads it the user's or the host's credentials: files
// and engine sockets (absolute), and paths below any home directory. The
// sensitive-mounts rule reports them; husk sandbox never shows them.
const std::vector<std::string>& secret_files();
const std::vector<std::string>& home_secrets();

// "error", "warn", "off"; an Error naming `field` otherwise.
Severity parse_severity(const std::string& text, const std::string& field);
const char* severity_name(Severity s);

struct Finding {
  Severity severity = Severity::error;
  std::string rule;   // "host-namespaces"
  std::string field;  // "linux.namespaces"
  std::string value;  // "network: absent (the host's)"
  std::string why;    // one sentence for the user
};

// A device class as the engines write one, "c 10:229" or "c 195:*": type
// 'c' or 'b', and -1 for "*".
struct DeviceClass {
  char type = 'c';
  int64_t major = -1;
  int64_t minor = -1;
};
// "c 195:*" -> DeviceClass; an Error naming `field` otherwise.
DeviceClass parse_device_class(const std::string& text, const std::string& field);

struct Policy {
  std::string name;  // "baseline", "restricted" or the policy file
  // Rule id -> severity; a rule that is absent is off.
  std::map<std::string, Severity> rules;
  // Capabilities allowed beyond the level's own list ("CAP_NET_RAW").
  std::vector<std::string> allowed_capabilities;
  // Host directories a bind mount may come from (with everything below them);
  // a "*" component matches any one name (/var/lib/kubelet/pods/*/volumes).
  std::vector<std::string> allowed_mount_sources;
  // Sysctls allowed beyond the level's safe list.
  std::vector<std::string> allowed_sysctls;
  // Hook programs the operator trusts (GPU and CDI hooks), by absolute path.
  std::vector<std::string> allowed_hooks;
  // Devices allowed beyond the engines' defaults (a GPU, FUSE).
  std::vector<DeviceClass> allowed_devices;
  // Restricted: only CAP_NET_BIND_SERVICE may be kept (Kubernetes' Pod
  // Security Standards); otherwise the baseline's list.
  bool restricted_capabilities = false;
};

// Every rule id, in the order findings are reported.
const std::vector<std::string>& rule_ids();

// The built-in levels: "baseline" and "restricted" map Kubernetes' Pod
// Security Standards onto OCI fields (restricted is baseline plus more);
// anything else is an Error.
Policy builtin(const std::string& level);

// A YAML policy (`shown` names it in errors):
//   level: baseline            # optional: start from a built-in level
//   rules: {writable-root: error, no-memory-limit: off}
//   allow: {capabilities: [CAP_NET_RAW], mountSources: [/srv], sysctls: [net.core.somaxconn],
//           hooks: [/usr/bin/nvidia-ctk], devices: ["c 195:*", "c 10:229"]}
// `level` is required (a file that forgot it would turn every rule off).
// Unknown or repeated keys, rule ids and severities are errors naming them.
Policy parse_policy_yaml(const std::string& text, const std::string& shown);

// `arg` of --policy: a built-in level's name or a YAML file's path.
Policy load_policy(const std::string& arg);

// "/a//b/./" -> "/a/b"; "" for a path that is not absolute or has "..": a
// host path is judged as written, and ".." through a symlink is not lexical
// (ns::clean_path, for paths inside a container, collapses ".." instead).
// What HostProbe::resolve is asked about, for the runtime to look up.
std::string plain_path(const std::string& path);

// What only the host can answer, for the runtime to fill in; by default
// paths are judged as written.
struct HostProbe {
  // The path a host path (plain_path'ed) reaches: the real path of the
  // object the runtime opened and will use (a symlink in the bundle may
  // point anywhere).
  std::function<std::string(const std::string&)> resolve;
  // True when namespace file `path` (the runtime's open fd of it) is the
  // same namespace (device and inode) as the host init's or the runtime's
  // own of that OCI type.
  std::function<bool(const std::string& path, const std::string& type)> host_namespace;
};

// The findings of `spec` (validated) under `policy`; `bundle` is the bundle
// directory (bind mounts from inside it are the bundle's own files).
std::vector<Finding> evaluate(const spec::Spec& spec, const Policy& policy, const std::string& bundle,
                              const HostProbe& probe = {});

// True when a finding has severity error.
bool violated(const std::vector<Finding>& findings);

// Aligned table SEVERITY RULE FIELD VALUE WHY, one finding a line, header first.
std::string findings_table(const std::vector<Finding>& findings);

// The operator's husk config file (default /etc/husk/config.yaml): the policy
// `create` enforces on every bundle, chosen by husk's --root or by the name
// husk was called as (a symlink per RuntimeClass handler), else `policy`:
//   policy: baseline
//   roots: {/run/containerd/husk-strict: restricted}
//   binaries: {husk-strict: /etc/husk/strict.yaml}
// Values are built-in levels or policy files. Nothing a bundle says is read.
// A file without any of the three keys, or with one twice, is an error.
struct OperatorConfig {
  std::string policy;
  std::map<std::string, std::string> roots;     // cleaned absolute --root -> policy
  std::map<std::string, std::string> binaries;  // file name -> policy
};
OperatorConfig parse_operator_config(const std::string& text, const std::string& shown);
// The policy argument in force: the root's, else the binary name's, else
// the default; "" when none.
std::string select_policy(const OperatorConfig& config, const std::string& root, const std::string& binary_name);

}  // namespace husk::policy
