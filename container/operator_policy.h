// The operator's policy (policy::OperatorConfig, /etc/husk/config.yaml or
// $HUSK_CONFIG) applied where containers and processes are made.
#pragma once

#include <string>

#include "container/commands.h"
#include "policy/policy.h"
#include "spec/spec.h"

namespace husk::rt {

std::string operator_config_path();

// The policy argument in force for husk's --root and name; "" when there is
// no config file. A config that cannot be read or parsed throws: an
// operator's policy is never skipped silently.
std::string operator_policy(const Context& g);

// create and run: refuse a bundle that breaks the policy, naming every error
// finding in the one line the engines show. `probe` answers from the host
// objects create will use (HostObjects::probe).
void enforce_operator_policy(const Context& g, const spec::Spec& spec, const std::string& bundle_dir,
                             const policy::HostProbe& probe);

// exec: refuse a process that the policy's process rules refuse
// (capabilities, NNP, user, LSM labels): exec --cap or a process.json must
// not give a container's process what its create was refused for.
void enforce_operator_policy_on_exec(const Context& g, const spec::Spec& container, const spec::Process& proc);

}  // namespace husk::rt
