#include "container/operator_policy.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "base/log.h"
#include "policy/policy.h"

namespace husk::rt {
namespace {

// Throws `what` + " breaks the operator's policy ..." naming every error
// finding (of the process.* fields alone when process_only); the warnings
// go to the debug log.
void enforce(const Context& g, const std::string& what, const spec::Spec& spec, const std::string& bundle_dir,
             const policy::HostProbe& probe, bool process_only) {
  const std::string arg = operator_policy(g);
  if (arg.empty()) return;
  const policy::Policy p = policy::load_policy(arg);
  std::string errors;
  for (const auto& f : policy::evaluate(spec, p, bundle_dir, probe)) {
    if (process_only && f.field.rfind("process.", 0) != 0) continue;
    if (f.severity != policy::Severity::error) {
      log::debug("policy " + p.name + ": warn " + f.field + " = " + f.value + " (" + f.rule + ")");
      continue;
    }
    errors += (errors.empty() ? "" : "; ") + f.field + " = " + f.value + " (" + f.rule + ": " + f.why + ")";
  }
  if (!errors.empty())
    throw Error(what + " breaks the operator's policy " + p.name + " (" + operator_config_path() + "): " + errors);
}

}  // namespace

std::string operator_config_path() {
  // Set by whoever runs husk (the engine's environment), never by a bundle.
  const char* env = std::getenv("HUSK_CONFIG");
  return env && *env ? env : "/etc/husk/config.yaml";
}

std::string operator_policy(const Context& g) {
  const std::string path = operator_config_path();
  // Only a path that is not there at all means "no policy": a dangling
  // symlink or an unreadable file fails the command.
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0 && errno == ENOENT) return "";
  return policy::select_policy(policy::parse_operator_config(spec::read_json_file(path), path), g.root, g.binary_name);
}

void enforce_operator_policy(const Context& g, const spec::Spec& spec, const std::string& bundle_dir,
                             const policy::HostProbe& probe) {
  enforce(g, "config.json", spec, bundle_dir, probe, false);
}

void enforce_operator_policy_on_exec(const Context& g, const spec::Spec& container, const spec::Process& proc) {
  // Only the process and what root-user reads of the namespaces: mounts,
  // hooks and devices passed at create, and need no path resolved again.
  spec::Spec only;
  only.process = proc;
  only.linux_.emplace();
  only.linux_->namespaces = container.linux_->namespaces;
  enforce(g, "exec: the process", only, "", {}, true);
}

}  // namespace husk::rt
