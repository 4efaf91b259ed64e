#include "runtime/operator_policy.h"

#include <limits.h>
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

}  // namespace

std::string operator_config_path() {
  // Set by whoever runs husk (the engine's environment), never by a bundle.
  const char* env = std::getenv("HUSK_CONFIG");
  return env && *env ? env : "/etc/husk/config.yaml";
}

std::string operator_policy(const Global& g) {
  const std::string path = operator_config_path();
  if (::access(path.c_str(), F_OK) != 0 && errno == ENOENT) return "";
  return policy::select_policy(policy::parse_operator_config(spec::read_json_file(path), path), g.root, g.binary_name);
}

std::string resolve_host_path(const std::string& path) {
  char buf[PATH_MAX];
  return ::realpath(path.c_str(), buf) ? std::string(buf) : path;
}

void enforce_operator_policy(const Global& g, const spec::Spec& spec, const std::string& bundle_dir) {
  const std::string arg = operator_policy(g);
  if (arg.empty()) return;
  const policy::Policy p = policy::load_policy(arg);
  const std::string errors = errors_of(p, policy::evaluate(spec, p, bundle_dir, resolve_host_path), false);
  if (!errors.empty())
    throw Error("config.json breaks the operator's policy " + p.name + " (" + operator_config_path() + "): " + errors);
}

void enforce_operator_policy_on_exec(const Global& g, const spec::Spec& container, const spec::Process& proc) {
  const std::string arg = operator_policy(g);
  if (arg.empty()) return;
  const policy::Policy p = policy::load_policy(arg);
  spec::Spec with_process = container;
  with_process.process = proc;
  const std::string errors = errors_of(p, policy::evaluate(with_process, p, ""), true);
  if (!errors.empty())
    throw Error("exec: the process breaks the operator's policy " + p.name + " (" + operator_config_path() + "): " + errors);
}

}  // namespace husk::rt
