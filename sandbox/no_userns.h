// `husk sandbox` where no user namespace can be made (an unprivileged
// container, Ubuntu's AppArmor restriction, user.max_user_namespaces=0):
// the command runs on the host's own view, behind Landlock, seccomp,
// no_new_privs and rlimits only. The plan and the filter's changes are pure
// (no_userns_plan.cpp); the run is no_userns.cpp.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "landlock/landlock.h"
#include "sandbox/internal.h"
#include "sandbox/sandbox.h"

namespace husk::rt {

// Why no user namespace can be made, said before trying: Ubuntu's AppArmor
// restriction lets the clone succeed and fails later, inside the init. ""
// when nothing says so (then the clone itself tells: userns_refused).
std::string userns_restricted_up_front();

// Why `e`, thrown by the normal sandbox, means that no user namespace can be
// made here; "" when it is another failure. `initial_userns`: husk runs in
// the host's own user namespace, where a limit reached (ENOSPC, EUSERS) is
// one of the user's processes holding them all (a nested sandbox can make
// thousands): an Error then, never a run with fewer walls. Below another
// user namespace it is that namespace's rule (bwrap's --disable-userns).
std::string userns_refused(const Error& e, bool initial_userns);
std::string userns_refused(const Error& e);  // initial_userns read from /proc/self/uid_map

// Pure: what needs a namespace is refused, naming the flag and `reason`.
void refuse_without_userns(const SandboxOptions& o, const std::string& reason);

// Pure: the Landlock plan for the host's own view, from the config
// sandbox_config built for the same sandbox: read below /, nothing at or
// below a hidden path or what the config replaces with a fresh mount (/tmp,
// /run, /home, /root, /dev, the scratch home), writes only to the binds the
// config makes writable (the working directory, --rw), `tmpdir` and the
// usual devices. Where the normal sandbox's plan (walls.cpp, landlock_plan)
// and this one should meet: both read cfg's mounts; this one has no mount
// view to lean on (Plan::mount_view false).
// `hidden`: SandboxConfig::hidden.
landlock::Plan no_userns_plan(const nlohmann::ordered_json& cfg, const std::vector<std::string>& hidden,
                              const std::string& tmpdir);

// Pure: the network cut by the seccomp profile `seccomp` (a config's
// linux.seccomp) where no network namespace can be made: --net none, no
// socket(2) at all; --net host, no Unix socket (Landlock cannot refuse a
// connect to the host's named ones, a session bus would run commands
// outside). socketpair(2) stays.
void cut_network(nlohmann::ordered_json& seccomp, const std::string& net);

// Pure: cfg's process gets TMPDIR=`tmpdir`; where cfg mounts a scratch
// home (the home is not shown), HOME=`tmpdir`/home instead, and true: the
// caller makes it.
bool no_userns_env(nlohmann::ordered_json& cfg, const std::string& tmpdir);

// Pure: the line said once on stderr: the walls this sandbox has.
std::string walls_line(const std::string& reason, const landlock::Rights& r, const SandboxOptions& o,
                       const std::string& tmpdir);

// Pure: what the plan costs the command beside the walls line: a writable
// tree that holds hidden paths gets nothing new at its top.
std::vector<std::string> no_userns_notes(const landlock::Rights& r, const landlock::Plan& plan);

class Report;

// The sandbox run without a user namespace; its exit status as the normal
// sandbox's. `work`: the sandbox's work directory, where its TMPDIR goes.
// `notes_said`: the normal sandbox said its config's notes before failing.
// `report`: --report's, told of a timeout.
int run_without_userns(const Context& g, const SandboxOptions& o, SandboxHost host, const Workdir& work,
                       const std::string& reason, bool notes_said, const Report* report = nullptr);

}  // namespace husk::rt
