// The runc-compatible commands. The CLI parses flags into these structs;
// each function returns the process exit status.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "container/context.h"
#include "spec/defaults.h"
#include "spec/spec.h"

namespace husk::rt {

struct CreateOptions {
  std::string id;
  std::string bundle = ".";
  std::string pid_file;
  std::string console_socket;
  bool no_pivot = false;
  bool no_new_keyring = false;
  int preserve_fds = 0;
  // run only
  bool detach = false;
  bool keep = false;
};

int cmd_create(const Context& g, const CreateOptions& o);
int cmd_start(const Context& g, const std::string& id);
int cmd_run(const Context& g, const CreateOptions& o);

// What husk sandbox adds to `run`, typed; the command line never sets it.
struct CreateExtras {
  // Called with the init's pid once its maps are written (InitRequest::on_init_open).
  std::function<void(pid_t init)> on_init_open;
  // Rootless: no cgroup is looked for or made, for this reason (a sandbox
  // without limits: its pid namespace ends every process with its init).
  std::string no_cgroup_reason;
  bool quiet_no_cgroup = false;  // the caller says itself what a container without a cgroup loses
  // Replaces the foreground wait; signals arrive on sigfd.
  std::function<int(pid_t init, int sigfd)> wait;
};

// `run` of a config husk made itself (the sandbox's), given as its text: no
// config.json is read (the bundle directory may be a user's, who could swap
// it for one with hooks of theirs), no operator policy, no terminal. The
// container is deleted after, whatever happens.
int run_own_config(const Context& g, const CreateOptions& o, const std::string& config_text, const CreateExtras& extras);
int cmd_state(const Context& g, const std::string& id);
int cmd_kill(const Context& g, const std::string& id, const std::string& signal, bool all);
int cmd_delete(const Context& g, const std::string& id, bool force);
int cmd_list(const Context& g, const std::string& format, bool quiet);
int cmd_spec(const std::string& bundle, const spec::ConfigDefaults& d);
int cmd_features();
// Prints the findings of policy::evaluate as a table; 1 when one is an error.
// `policy` empty: the operator's policy for this root and name, else baseline.
int cmd_check(const Context& g, const std::string& bundle, const std::string& policy);

}  // namespace husk::rt

namespace husk::rt {

struct ExecOptions {
  std::string id;
  std::string process_file;  // --process: a process.json; else built from the flags below
  std::vector<std::string> args;
  bool detach = false;
  std::string pid_file;
  std::string console_socket;
  bool tty = false;
  std::string cwd;
  std::vector<std::string> env;
  std::string user;  // uid[:gid]
  std::vector<uint32_t> additional_gids;
  std::vector<std::string> caps;
  bool no_new_privs = false;
  int preserve_fds = 0;
  bool ignore_paused = false;
  std::string apparmor_profile;  // --apparmor: overrides process.apparmorProfile
  std::string process_label;     // --process-label: overrides process.selinuxLabel
};

int cmd_exec(const Context& g, const ExecOptions& o);
// The process of `exec --process FILE` from the file's text: config.json's
// "process" object, parsed as spec::parse and checked by spec::validate_process.
spec::Process parse_process(const std::string& text, const std::string& oci_version);

}  // namespace husk::rt

namespace husk::rt {

// Cgroup-backed commands (runc's pause, resume, ps, update, events).
int cmd_pause(const Context& g, const std::string& id);
int cmd_resume(const Context& g, const std::string& id);
int cmd_ps(const Context& g, const std::string& id, const std::string& format, const std::vector<std::string>& ps_args);

struct UpdateOptions {
  std::string id;
  std::string resources_file;  // "-" = stdin
  // runc's flags; an empty string means "not given"
  std::string memory, memory_reservation, memory_swap, kernel_memory, pids_limit, cpu_quota, cpu_period,
      cpu_share, cpu_rt_period, cpu_rt_runtime, cpuset_cpus, cpuset_mems, blkio_weight;
};
int cmd_update(const Context& g, const UpdateOptions& o);

int cmd_events(const Context& g, const std::string& id, bool stats_once, const std::string& interval);

}  // namespace husk::rt
