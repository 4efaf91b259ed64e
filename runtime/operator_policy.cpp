#include "runtime/operator_policy.h"

#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "policy/policy.h"
#include "runtime/log.h"

namespace husk::rt {
namespace {

// The error findings as one line; the warnings go to the debug log.
std::string errors_of(const policy::Policy& p, const std::vector<policy::Finding>& findings, bool process_only) {
  std::string errors;
  for (const auto& f : findings) {
    if (process_only && f.field.rfind("process.", 0) != 0) continue;
    if (f.severity != policy::Severity::error) {
      log::debug("policy " + p.name + ": warn " + f.field + " = " + f.value + " (" + f.rule + ")");
      continue;
    }
    errors += (errors.empty() ? "" : "; ") + f.field + " = " + f.value + " (" + f.rule + ": " + f.why + ")";
  }
  return errors;
}

std::string resolve_host_path(const std::string& path) {
  char buf[PATH_MAX];
  return ::realpath(path.c_str(), buf) ? std::string(buf) : path;
}

bool is_host_namespace(const std::string& path, const std::string& type) {
  const std::string name = type == "network" ? "net" : type == "mount" ? "mnt" : type;
  struct stat target, host;
  if (::stat(path.c_str(), &target) != 0) return false;
  for (const std::string owner : {"/proc/1/ns/", "/proc/self/ns/"})
    if (::stat((owner + name).c_str(), &host) == 0 && host.st_dev == target.st_dev && host.st_ino == target.st_ino)
      return true;
  return false;
}

}  // namespace

std::string operator_config_path() {
  // Set by whoever runs husk (the engine's environment), never by a bundle.
  const char* env = std::getenv("HUSK_CONFIG");
  return env && *env ? env : "/etc/husk/config.yaml";
}

std::string operator_policy(const Global& g) {
  const std::string path = operator_config_path();
  // Only a path that is not there at all means "no policy": a dangling
  // symlink or an unreadable file fails the command.
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0 && errno == ENOENT) return "";
  return policy::select_policy(policy::parse_operator_config(spec::read_json_file(path), path), g.root, g.binary_name);
}

policy::HostProbe host_probe() { return {resolve_host_path, is_host_namespace}; }

void enforce_operator_policy(const Global& g, const spec::Spec& spec, const std::string& bundle_dir) {
  const std::string arg = operator_policy(g);
  if (arg.empty()) return;
  const policy::Policy p = policy::load_policy(arg);
  const std::string errors = errors_of(p, policy::evaluate(spec, p, bundle_dir, host_probe()), false);
  if (!errors.empty())
    throw Error("config.json breaks the operator's policy " + p.name + " (" + operator_config_path() + "): " + errors);
}

void enforce_operator_policy_on_exec(const Global& g, const spec::Spec& container, const spec::Process& proc) {
  const std::string arg = operator_policy(g);
  if (arg.empty()) return;
  const policy::Policy p = policy::load_policy(arg);
  spec::Spec with_process = container;
  with_process.process = proc;
  const std::string errors = errors_of(p, policy::evaluate(with_process, p, "", host_probe()), true);
  if (!errors.empty())
    throw Error("exec: the process breaks the operator's policy " + p.name + " (" + operator_config_path() + "): " + errors);
}

}  // namespace husk::rt
