// The runc-compatible commands. The CLI parses flags into these structs;
// each function returns the process exit status.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "container/context.h"
#include "landlock/landlock.h"
#include "policy/policy.h"
#include "seccomp/seccomp.h"
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

// Release the init of a created container. An exec that fails after that
// (a script whose interpreter is missing) does not fail start, as with runc:
// its error is returned, and the container exits 1.
std::string start(const Context& g, const std::string& id);

// What a caller adds to create and run, typed: husk sandbox's needs, and
// where run's late exec error goes.
struct CreateExtras {
  // Called with the init's pid once its maps are written (InitRequest::on_init_open).
  std::function<void(pid_t init)> on_init_open;
  // No cgroup is looked for or made, for this reason (a sandbox without
  // limits: its pid namespace ends every process with its init).
  std::string no_cgroup_reason;
  bool quiet_no_cgroup = false;  // the caller says itself what a container without a cgroup loses
  // Replaces the foreground wait; signals arrive on sigfd.
  std::function<int(pid_t init, int sigfd)> wait;
  // run: the error of an exec that failed after start released the init
  // (see start()), as soon as start returns, before the wait.
  std::function<void(const std::string& error)> on_late_error;
  // Enforced by the init once its mounts are made, before the command (InitRequest::landlock).
  std::optional<landlock::Plan> landlock;
  // husk sandbox: a small pid 1 in front of the command (InitRequest::reaper),
  // and a shell's status and words for a command that cannot be run
  // (InitRequest::shell_words). Not OCI config fields: containers keep runc's behaviour.
  bool reaper = false;
  int reaper_emptied_fd = -1;  // InitRequest::emptied_fd
  bool shell_words = false;
  // run: called with the init's pid once it is created (its mounts in
  // place), before start lets the process run.
  std::function<void(pid_t init)> on_created;
};

// create + start, then (unless detached) wait: the process's exit status,
// 128+signal when killed.
int run(const Context& g, const CreateOptions& o, const CreateExtras& extras);

int cmd_create(const Context& g, const CreateOptions& o, const CreateExtras& extras = {});

// `run` of a config husk made itself (the sandbox's), given as JSON: no
// config.json is read (the bundle directory may be a user's, who could swap
// it for one with hooks of theirs), no operator policy, no terminal. The
// container is deleted after, whatever happens. `config` is freed once it
// is read, before the command runs.
int run_own_config(const Context& g, const CreateOptions& o, nlohmann::ordered_json config,
                   const CreateExtras& extras);
// `state`: as callers see it, the status read live.
spec::State container_state(const Context& g, const std::string& id);
int cmd_kill(const Context& g, const std::string& id, const std::string& signal, bool all);
int cmd_delete(const Context& g, const std::string& id, bool force);
// `list`: every container under --root by id; a broken one is a warning in
// the log, one being made or removed or another runtime's is passed over.
std::vector<spec::State> list_containers(const Context& g);
int cmd_spec(const std::string& bundle, const spec::ConfigDefaults& d);
spec::Features runtime_features();
// `check`: policy::evaluate of the bundle, judged from the host objects it
// names. `policy` empty: the operator's policy for this root and name, else baseline.
struct CheckResult {
  std::string policy_name;
  std::vector<policy::Finding> findings;
};
CheckResult check_bundle(const Context& g, const std::string& bundle, const std::string& policy);

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

// What `husk sandbox --session` adds to an exec: the sandbox's Landlock
// walls (the init's are not kept: each process builds its own), its wait.
struct ExecExtras {
  const landlock::Plan* landlock = nullptr;
  // Replaces wait_foreground (no terminal of exec's own then).
  std::function<int(pid_t pid, int sigfd)> wait;
  // The namespaces joined are this child's of the init (0: the init's own):
  // a sandbox's pid 1 never execs, so only root may open its namespaces.
  pid_t ns_pid = 0;
  // A command that cannot run exits 127 or 126, said on its stderr, as a shell does.
  bool shell_words = false;
  // The container's config as its owner keeps it for many execs, its mounts
  // left out (exec reads none; parsing them was most of the work); null:
  // the container's config.json.
  const spec::Spec* container = nullptr;
  // The filter compiled once for all of them (that config then has no
  // linux.seccomp); null: compiled from linux.seccomp.
  const seccomp::Program* filter = nullptr;
};

int cmd_exec(const Context& g, const ExecOptions& o, const ExecExtras& extras = {});
// The process of `exec --process FILE` from the file's text: config.json's
// "process" object, parsed as spec::parse and checked by spec::validate_process.
spec::Process parse_process(const std::string& text, const std::string& oci_version);

}  // namespace husk::rt

namespace husk::rt {

// Cgroup-backed commands (runc's pause, resume, ps, update, events).
int cmd_pause(const Context& g, const std::string& id);
int cmd_resume(const Context& g, const std::string& id);
// The pids of the container's processes (none once it stopped).
std::vector<pid_t> container_pids(const Context& g, const std::string& id);

struct UpdateOptions {
  std::string id;
  std::string resources_file;  // "-" = stdin
  // runc's flags; an empty string means "not given"
  std::string memory, memory_reservation, memory_swap, kernel_memory, pids_limit, cpu_quota, cpu_period,
      cpu_share, cpu_rt_period, cpu_rt_runtime, cpuset_cpus, cpuset_mems, blkio_weight;
};
int cmd_update(const Context& g, const UpdateOptions& o);

// `events`: each event as a JSON line to `emit` until the container stops
// (OOM kills within 200 ms, stats every `interval`); one stats event with `stats_once`.
void watch_events(const Context& g, const std::string& id, bool stats_once, const std::string& interval,
                  const std::function<void(const std::string&)>& emit);

}  // namespace husk::rt
