// OCI hooks: each runs with the container state JSON on stdin, its own args
// and env, and an optional timeout (seconds) after which it is killed.
#pragma once

#include <string>
#include <vector>

#include "spec/spec.h"

namespace husk::rt {

// Runs `hooks` in order; throws on the first failure:
// `prestart hook #1 (/usr/bin/foo): exit status 2` or `...: timed out after 3s`.
void run_hooks(const std::vector<spec::Hook>& hooks, const std::string& phase, const std::string& state_json);

// Same, but logs failures instead of throwing (poststart, poststop).
void run_hooks_logged(const std::vector<spec::Hook>& hooks, const std::string& phase,
                      const std::string& state_json);

}  // namespace husk::rt
