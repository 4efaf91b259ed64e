// husk sandbox --allow-host: what the sandbox's programs are told about the
// proxies, so that the usual clients use them without flags of their own.
#pragma once

#include <map>
#include <string>

#include "sandbox/sandbox.h"

namespace husk::rt {

// Where the host's husk is bound (read-only) inside, for `husk connect` as
// ssh's ProxyCommand: the binary's own path may be hidden there (a home, /tmp).
constexpr const char* kHuskInside = "/run/husk/husk";

// Sets the proxy variables in `env` (the command's environment so far: its
// --env values are kept where a client reads a list, JAVA_TOOL_OPTIONS, or
// where the user chose, GIT_SSH_COMMAND and GIT_SSH). `husk_inside`: husk is
// at kHuskInside (GIT_SSH_COMMAND needs it).
void proxy_environment(std::map<std::string, std::string>& env, const SandboxOptions& o, bool husk_inside);

}  // namespace husk::rt
