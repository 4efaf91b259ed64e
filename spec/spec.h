// Typed model of the OCI runtime-spec config.json (1.0.0 .. 1.3.x), Linux
// parts, plus state.json and features.json. Parsing ignores unknown
// properties; validation names the JSON path and the rule it broke.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "base/error.h"

namespace husk::spec {

// The ociVersion range husk accepts in config.json (any 1.0.x .. 1.3.x,
// pre-release suffixes included) and reports in features.json.
inline constexpr const char* kOciVersionMin = "1.0.0";
inline constexpr const char* kOciVersionMax = "1.3.0";

// CAP_* names in kernel number order: known_capabilities()[n] is capability n
// (CAP_CHOWN = 0 .. CAP_CHECKPOINT_RESTORE = 40).
const std::vector<std::string>& known_capabilities();
// Capability number for "CAP_SYS_ADMIN" etc., -1 when unknown.
int capability_number(const std::string& name);
// RLIMIT_* resource number (as for setrlimit) for "RLIMIT_NOFILE" etc., -1 when unknown.
int rlimit_resource(const std::string& name);
// linux.namespaces[].type values husk knows, sorted:
// cgroup ipc mount network pid time user uts.
const std::vector<std::string>& known_namespaces();

struct Root {
  std::string path;
  bool readonly = false;
};

struct IdMapping {
  uint32_t container_id = 0;
  uint32_t host_id = 0;
  uint32_t size = 0;
};

struct Mount {
  std::string destination;
  std::string source;
  std::string type;
  std::vector<std::string> options;
  std::vector<IdMapping> uid_mappings;
  std::vector<IdMapping> gid_mappings;
};

// The one rule for "this mount is idmapped" (config.md): uidMappings or
// gidMappings are given (the "idmap"/"ridmap" option SHOULD accompany them
// but is not needed, as in runc 1.2), or the option asks for the container's
// own user namespace mapping.
bool is_idmapped(const Mount& m);

// The one rule for "this mount is a bind mount": type "bind", or a "bind" or
// "rbind" option (each option string matched whole, as the mount code does).
bool is_bind(const Mount& m);

struct Rlimit {
  std::string type;  // "RLIMIT_NOFILE"
  uint64_t soft = 0;
  uint64_t hard = 0;
};

struct Capabilities {
  // Each set is present-or-absent: absent means "empty" for the kernel.
  std::vector<std::string> bounding, effective, inheritable, permitted, ambient;
};

struct User {
  uint32_t uid = 0;
  uint32_t gid = 0;
  std::optional<uint32_t> umask;
  std::vector<uint32_t> additional_gids;
  std::string username;
};

struct Scheduler {
  std::string policy;  // SCHED_OTHER ...
  int32_t nice = 0;
  int32_t priority = 0;
  std::vector<std::string> flags;
  uint64_t runtime = 0, deadline = 0, period = 0;
};

struct IoPriority {
  std::string klass;  // "class" in JSON: IOPRIO_CLASS_RT|BE|IDLE
  int32_t priority = 0;
};

struct ExecCpuAffinity {
  std::string initial;
  std::string final;
};

struct ConsoleSize {
  uint32_t height = 0;
  uint32_t width = 0;
};

struct Process {
  bool terminal = false;
  std::optional<ConsoleSize> console_size;
  std::string cwd;
  std::vector<std::string> env;
  std::vector<std::string> args;
  std::vector<Rlimit> rlimits;
  std::string apparmor_profile;
  std::optional<Capabilities> capabilities;
  bool no_new_privileges = false;
  std::optional<int> oom_score_adj;
  std::optional<Scheduler> scheduler;
  std::string selinux_label;
  std::optional<IoPriority> io_priority;
  std::optional<ExecCpuAffinity> exec_cpu_affinity;
  User user;
};

struct Hook {
  std::string path;
  std::vector<std::string> args;
  std::vector<std::string> env;
  std::optional<int> timeout;  // seconds, > 0
};

struct Hooks {
  std::vector<Hook> prestart;  // deprecated but still run, before createRuntime
  std::vector<Hook> create_runtime;
  std::vector<Hook> create_container;
  std::vector<Hook> start_container;
  std::vector<Hook> poststart;
  std::vector<Hook> poststop;
};

struct Namespace {
  std::string type;  // pid network mount ipc uts user cgroup time
  std::string path;  // empty: create a new one
};

struct TimeOffset {
  int64_t secs = 0;
  uint32_t nanosecs = 0;
};

struct Device {
  std::string type;  // c b u p
  std::string path;
  int64_t major = 0;
  int64_t minor = 0;
  std::optional<uint32_t> file_mode;
  std::optional<uint32_t> uid;
  std::optional<uint32_t> gid;
};

struct DeviceRule {  // linux.resources.devices[]
  bool allow = false;
  std::string type;  // a c b (empty == a)
  std::optional<int64_t> major;  // absent == wildcard
  std::optional<int64_t> minor;
  std::string access;  // subset of "rwm"
};

struct Memory {
  std::optional<int64_t> limit, reservation, swap, kernel, kernel_tcp;
  std::optional<uint64_t> swappiness;
  std::optional<bool> disable_oom_killer, use_hierarchy, check_before_update;
};

struct Cpu {
  std::optional<uint64_t> shares;
  std::optional<int64_t> quota;
  std::optional<uint64_t> burst;
  std::optional<uint64_t> period;
  std::optional<int64_t> realtime_runtime;
  std::optional<uint64_t> realtime_period;
  std::string cpus, mems;
  std::optional<int64_t> idle;
};

struct WeightDevice {
  int64_t major = 0, minor = 0;
  std::optional<uint16_t> weight, leaf_weight;
};

struct ThrottleDevice {
  int64_t major = 0, minor = 0;
  uint64_t rate = 0;
};

struct BlockIo {
  std::optional<uint16_t> weight, leaf_weight;
  std::vector<WeightDevice> weight_device;
  std::vector<ThrottleDevice> throttle_read_bps, throttle_write_bps,
      throttle_read_iops, throttle_write_iops;
};

struct HugepageLimit {
  std::string page_size;  // "2MB"
  uint64_t limit = 0;
};

struct InterfacePriority {
  std::string name;
  uint32_t priority = 0;
};

struct Network {
  std::optional<uint32_t> class_id;
  std::vector<InterfacePriority> priorities;
};

struct Rdma {
  std::optional<uint32_t> hca_handles, hca_objects;
};

struct Resources {
  std::vector<DeviceRule> devices;
  std::optional<Memory> memory;
  std::optional<Cpu> cpu;
  std::optional<int64_t> pids_limit;  // pids.limit; -1 means unlimited, 0 is a limit
  std::optional<BlockIo> block_io;
  std::vector<HugepageLimit> hugepage_limits;
  std::optional<Network> network;
  std::map<std::string, Rdma> rdma;
  std::map<std::string, std::string> unified;
};

struct IntelRdt {
  std::string clos_id, l3_cache_schema, mem_bw_schema;
  std::vector<std::string> schemata;
  bool enable_monitoring = false;
};

struct SeccompArg {
  uint32_t index = 0;
  uint64_t value = 0;
  uint64_t value_two = 0;
  std::string op;  // SCMP_CMP_EQ ...
};

struct SeccompSyscall {
  std::vector<std::string> names;
  std::string action;  // SCMP_ACT_*
  std::optional<uint32_t> errno_ret;
  std::vector<SeccompArg> args;
};

struct Seccomp {
  std::string default_action;
  std::optional<uint32_t> default_errno_ret;
  std::vector<std::string> architectures;
  std::vector<std::string> flags;
  std::string listener_path;
  std::string listener_metadata;
  std::vector<SeccompSyscall> syscalls;
};

struct Personality {
  std::string domain;  // LINUX | LINUX32
  std::vector<std::string> flags;
};

struct MemoryPolicy {
  std::string mode;  // MPOL_*
  std::string nodes;
  std::vector<std::string> flags;
};

struct NetDevice {
  std::string name;  // name inside the container; empty == same as host
};

struct Linux {
  std::vector<Namespace> namespaces;
  std::vector<IdMapping> uid_mappings, gid_mappings;
  std::map<std::string, TimeOffset> time_offsets;  // "monotonic", "boottime"
  std::vector<Device> devices;
  std::map<std::string, NetDevice> net_devices;
  std::optional<std::string> cgroups_path;
  std::optional<Resources> resources;
  std::optional<IntelRdt> intel_rdt;
  std::map<std::string, std::string> sysctl;
  std::optional<Seccomp> seccomp;
  std::string rootfs_propagation;
  std::vector<std::string> masked_paths, readonly_paths;
  std::string mount_label;
  std::optional<Personality> personality;
  std::optional<MemoryPolicy> memory_policy;

  bool has_namespace(const std::string& type) const;
  const Namespace* find_namespace(const std::string& type) const;
};

struct Spec {
  std::string oci_version;
  std::optional<Root> root;
  std::vector<Mount> mounts;
  std::optional<Process> process;
  std::string hostname;
  std::string domainname;
  Hooks hooks;
  std::map<std::string, std::string> annotations;
  std::optional<Linux> linux_;  // "linux" in JSON (`linux` is a macro in GNU C++)
};

// Parse config.json text. Malformed JSON -> "line L, column C: ...";
// wrong types -> "process.args[1]: expected string"; integers must fit the
// field's type ("process.user.uid: expected uint32 (got -1)"). Unknown
// properties are ignored and null counts as absent (as Go's encoding/json
// does). Map keys appear quoted in paths: linux.sysctl["net.ipv4.ip_forward"].
// Only rlimits[].type/soft/hard and id mappings' three numbers are required
// here; everything else is left to validate().
Spec parse(const std::string& json_text);

// A config husk built itself (the sandbox's), read as parse() reads its
// text: no printing and lexing it again.
Spec from_json(const nlohmann::ordered_json& config);

// Check every rule the spec states; throws Error naming the JSON path and
// the rule, for the first broken rule:
// "process.args: must not be empty", "mounts[2].destination: must be an absolute path".
// Beyond the spec's MUSTs it refuses what would reach outside the container:
// hostname/domainname without a uts namespace entry (new or joined),
// mounts/maskedPaths/readonlyPaths without a mount namespace entry, sysctls
// outside the namespaces the container has (runc's rules), ".." components in
// mount destinations, device paths and cgroupsPath, and non-file-name keys in
// resources.unified / intelRdt.closID. Capability names must be known
// (CAP_CHOWN .. CAP_CHECKPOINT_RESTORE). Seccomp action/arch/operator names
// are left to seccomp::plan().
// `for_create` adds the rules that only matter when a container is made (root and process required).
void validate(const Spec& spec, bool for_create = true);

// The process rules of validate() alone, for `exec --process` and exec flags.
void validate_process(const Process& p);

// The rules for one uidMappings/gidMappings list (as linux.* or a mount's):
// at most 340 extents, size > 0, no 32-bit overflow, no overlap on either
// side. Errors name `path`[i].
void validate_id_mappings(const std::vector<IdMapping>& maps, const std::string& path);

// Read a JSON file a caller names (config.json, exec --process, update
// --resources): a regular file (a FIFO or /dev/zero would never end) of at
// most kMaxJsonSize, else an Error naming the path.
constexpr size_t kMaxJsonSize = 64 << 20;
std::string read_json_file(const std::string& path);
// The same for `name` beneath `dirfd` (husk's own state files), refusing a
// symlink as its last component; errors name `shown`.
std::string read_json_file_at(int dirfd, const std::string& name, const std::string& shown);

// Read <bundle>/config.json, parse and validate(for_create). Parse and
// validation errors are prefixed with "config.json: "; a missing file gives
// "open <bundle>/config.json: No such file or directory" (errno kept); a
// config.json that is not a regular file or is over 64 MiB is refused.
// root.path is left as written (relative to the bundle). `config_text`, when
// given, receives the file's text (the runtime keeps a copy of it).
Spec load_bundle(const std::string& bundle_dir, std::string* config_text = nullptr);

// Convert a linux.resources JSON object (as `update --resources` receives it)
// to the model and check it with validate_resources(); paths in messages are
// relative to the object ("memory.limit: expected int64").
Resources parse_resources(const std::string& json_text);

// The linux.resources rules validate() applies (device rule types/access,
// cgroup file names in `unified`, burst <= quota, ...), for resources that
// come from elsewhere, e.g. `update` flags.
void validate_resources(const Resources& r);

// ---- state.json (runtime.md "State") ----
struct State {
  std::string oci_version;
  std::string id;
  std::string status;  // creating created running stopped (+ paused, as runc reports)
  int pid = 0;
  std::string bundle;
  std::string rootfs;
  std::string created;  // RFC3339 with nanoseconds
  std::string owner;
  std::map<std::string, std::string> annotations;
};

// The object handed to hooks on stdin and printed by `husk state`
// (runc's field set and order: ociVersion id pid status bundle rootfs created
// owner, then annotations only when there are any).
std::string state_to_json(const State& s, bool pretty);

}  // namespace husk::spec

namespace husk::spec {

// ---- features.json (features.md) ----
struct Features {
  std::string oci_version_min = "1.0.0";
  std::string oci_version_max = kOciVersionMax;  // the newest ociVersion husk accepts
  std::vector<std::string> hooks;
  std::vector<std::string> mount_options;
  std::vector<std::string> namespaces;
  std::vector<std::string> capabilities;
  bool cgroup_v1 = false, cgroup_v2 = false, cgroup_systemd = false, cgroup_systemd_user = false;
  bool cgroup_rdma = false;
  bool seccomp_enabled = false;
  std::vector<std::string> seccomp_actions, seccomp_operators, seccomp_archs, seccomp_known_flags,
      seccomp_supported_flags;
  bool apparmor = false, selinux = false, intel_rdt = false, mount_extensions_idmap = false;
  std::map<std::string, std::string> annotations;
};

std::string features_to_json(const Features& f);

}  // namespace husk::spec
