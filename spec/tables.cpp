// Name tables shared by validation, the runtime and features.json.
#include <sys/resource.h>

#include <algorithm>
#include <utility>

#include "spec/spec.h"

namespace husk::spec {

const std::vector<std::string>& known_capabilities() {
  // Index == kernel capability number (linux/capability.h).
  static const std::vector<std::string> caps = {
      "CAP_CHOWN",           "CAP_DAC_OVERRIDE",   "CAP_DAC_READ_SEARCH", "CAP_FOWNER",
      "CAP_FSETID",          "CAP_KILL",           "CAP_SETGID",          "CAP_SETUID",
      "CAP_SETPCAP",         "CAP_LINUX_IMMUTABLE", "CAP_NET_BIND_SERVICE", "CAP_NET_BROADCAST",
      "CAP_NET_ADMIN",       "CAP_NET_RAW",        "CAP_IPC_LOCK",        "CAP_IPC_OWNER",
      "CAP_SYS_MODULE",      "CAP_SYS_RAWIO",      "CAP_SYS_CHROOT",      "CAP_SYS_PTRACE",
      "CAP_SYS_PACCT",       "CAP_SYS_ADMIN",      "CAP_SYS_BOOT",        "CAP_SYS_NICE",
      "CAP_SYS_RESOURCE",    "CAP_SYS_TIME",       "CAP_SYS_TTY_CONFIG",  "CAP_MKNOD",
      "CAP_LEASE",           "CAP_AUDIT_WRITE",    "CAP_AUDIT_CONTROL",   "CAP_SETFCAP",
      "CAP_MAC_OVERRIDE",    "CAP_MAC_ADMIN",      "CAP_SYSLOG",          "CAP_WAKE_ALARM",
      "CAP_BLOCK_SUSPEND",   "CAP_AUDIT_READ",     "CAP_PERFMON",         "CAP_BPF",
      "CAP_CHECKPOINT_RESTORE",
  };
  return caps;
}

int capability_number(const std::string& name) {
  const auto& caps = known_capabilities();
  auto it = std::find(caps.begin(), caps.end(), name);
  return it == caps.end() ? -1 : static_cast<int>(it - caps.begin());
}

int rlimit_resource(const std::string& name) {
  static const std::pair<const char*, int> table[] = {
      {"RLIMIT_AS", RLIMIT_AS},
      {"RLIMIT_CORE", RLIMIT_CORE},
      {"RLIMIT_CPU", RLIMIT_CPU},
      {"RLIMIT_DATA", RLIMIT_DATA},
      {"RLIMIT_FSIZE", RLIMIT_FSIZE},
      {"RLIMIT_LOCKS", RLIMIT_LOCKS},
      {"RLIMIT_MEMLOCK", RLIMIT_MEMLOCK},
      {"RLIMIT_MSGQUEUE", RLIMIT_MSGQUEUE},
      {"RLIMIT_NICE", RLIMIT_NICE},
      {"RLIMIT_NOFILE", RLIMIT_NOFILE},
      {"RLIMIT_NPROC", RLIMIT_NPROC},
      {"RLIMIT_RSS", RLIMIT_RSS},
      {"RLIMIT_RTPRIO", RLIMIT_RTPRIO},
      {"RLIMIT_RTTIME", RLIMIT_RTTIME},
      {"RLIMIT_SIGPENDING", RLIMIT_SIGPENDING},
      {"RLIMIT_STACK", RLIMIT_STACK},
  };
  for (const auto& [n, r] : table) {
    if (name == n) return r;
  }
  return -1;
}

const std::vector<std::string>& known_namespaces() {
  static const std::vector<std::string> ns = {"cgroup", "ipc",  "mount", "network",
                                              "pid",    "time", "user",  "uts"};
  return ns;
}

bool is_idmapped(const Mount& m) {
  if (!m.uid_mappings.empty() || !m.gid_mappings.empty()) return true;
  for (const auto& o : m.options)
    if (o == "idmap" || o == "ridmap") return true;
  return false;
}

bool is_bind(const Mount& m) {
  if (m.type == "bind") return true;
  for (const auto& o : m.options)
    if (o == "bind" || o == "rbind") return true;
  return false;
}

bool Linux::has_namespace(const std::string& type) const {
  return find_namespace(type) != nullptr;
}

const Namespace* Linux::find_namespace(const std::string& type) const {
  for (const auto& ns : namespaces) {
    if (ns.type == type) return &ns;
  }
  return nullptr;
}

}  // namespace husk::spec
