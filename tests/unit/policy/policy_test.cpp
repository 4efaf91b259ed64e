// policy::evaluate on a table of bundles: each gives exactly the findings
// expected, under the built-in levels and a YAML policy.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "policy/policy.h"
#include "spec/defaults.h"

using namespace husk::policy;
using Catch::Contains;
using json = nlohmann::json;

namespace {

const char* kBundle = "/srv/bundles/app";

// `husk spec` (read-only root, NNP, its default-deny seccomp profile) with a
// non-root user and memory/pids limits: nothing for restricted to say.
json hardened() {
  json j = json::parse(husk::spec::default_config_json({}));
  j["process"]["user"] = {{"uid", 1000}, {"gid", 1000}};
  j["process"]["capabilities"] = {{"bounding", {"CAP_NET_BIND_SERVICE"}}, {"effective", json::array()},
                                  {"permitted", json::array()}};
  j["linux"]["resources"]["memory"] = {{"limit", 64 << 20}};
  j["linux"]["resources"]["pids"] = {{"limit", 100}};
  return j;
}

std::vector<std::string> rules_of(const json& j, const Policy& p, const HostProbe& probe = {}) {
  std::vector<std::string> out;
  for (const auto& f : evaluate(husk::spec::parse(j.dump()), p, kBundle, probe))
    out.push_back(std::string(severity_name(f.severity)) + " " + f.rule + " " + f.field + " = " + f.value);
  return out;
}

void drop_namespace(json& j, const std::string& type) {
  auto& ns = j["linux"]["namespaces"];
  for (auto it = ns.begin(); it != ns.end(); ++it)
    if ((*it)["type"] == type) {
      ns.erase(it);
      return;
    }
}

json bind(const std::string& src, const std::string& dst) {
  return {{"destination", dst}, {"type", "bind"}, {"source", src}, {"options", {"rbind", "ro"}}};
}

}  // namespace

TEST_CASE("a hardened bundle has no findings, even under restricted", "[policy]") {
  CHECK(rules_of(hardened(), builtin("restricted")).empty());
  CHECK(rules_of(hardened(), builtin("baseline")).empty());
}

TEST_CASE("husk spec's default passes baseline; --permissive with a seccomp warning only", "[policy]") {
  CHECK(rules_of(json::parse(husk::spec::default_config_json({})), builtin("baseline")).empty());
  json j = json::parse(husk::spec::default_config_json({.permissive = true}));
  CHECK(rules_of(j, builtin("baseline")) ==
        std::vector<std::string>{"warn no-seccomp linux.seccomp = absent"});
  auto restricted = evaluate(husk::spec::parse(j.dump()), builtin("restricted"), kBundle);
  CHECK(violated(restricted));
  CHECK_FALSE(violated(evaluate(husk::spec::parse(j.dump()), builtin("baseline"), kBundle)));
}

TEST_CASE("a privileged container: every rule that makes it privileged", "[policy]") {
  json j = hardened();
  j["process"]["capabilities"]["bounding"] = {"CAP_SYS_ADMIN", "CAP_NET_BIND_SERVICE", "CAP_CHOWN"};
  j["process"]["capabilities"]["effective"] = {"CAP_SYS_ADMIN"};
  j["process"]["apparmorProfile"] = "unconfined";
  j["linux"]["maskedPaths"] = json::array();
  j["linux"]["devices"] = {{{"path", "/dev/sda"}, {"type", "b"}, {"major", 8}, {"minor", 0}},
                           {{"path", "/dev/null"}, {"type", "c"}, {"major", 1}, {"minor", 3}}};
  j["linux"]["resources"]["devices"] = {{{"allow", true}, {"access", "rwm"}}};
  j["linux"]["seccomp"] = {{"defaultAction", "SCMP_ACT_ALLOW"}};
  CHECK(rules_of(j, builtin("baseline")) ==
        std::vector<std::string>{
            "error privileged-capabilities process.capabilities = CAP_SYS_ADMIN (bounding, effective)",
            "error host-devices linux.devices[0] = /dev/sda (b 8:0)",
            "error host-devices linux.resources.devices[0] = allow a *:* rwm",
            "error unmasked-proc linux.maskedPaths = lacks /proc/kcore, /proc/keys, /proc/timer_list, /sys/firmware",
            "error apparmor-unconfined process.apparmorProfile = unconfined",
            "warn seccomp-default-allow linux.seccomp.defaultAction = SCMP_ACT_ALLOW"});
  // restricted keeps only NET_BIND_SERVICE: CHOWN is reported too.
  CHECK_THAT(rules_of(j, builtin("restricted"))[0], Contains("CAP_CHOWN (bounding)"));
}

TEST_CASE("host namespaces: absent or the host init's, and the network left reachable", "[policy]") {
  json j = hardened();
  drop_namespace(j, "network");
  j["linux"]["namespaces"].push_back({{"type", "network"}, {"path", "/proc/1/ns/net"}});
  drop_namespace(j, "pid");
  CHECK(rules_of(j, builtin("baseline")) ==
        std::vector<std::string>{
            "error host-namespaces linux.namespaces[4].path = /proc/1/ns/net",
            "error host-namespaces linux.namespaces (pid) = absent: the host's"});
  // A pod's sandbox namespace joined by path is not the host's.
  json pod = hardened();
  drop_namespace(pod, "network");
  pod["linux"]["namespaces"].push_back({{"type", "network"}, {"path", "/var/run/netns/cni-1234"}});
  CHECK(rules_of(pod, builtin("baseline")).empty());
  CHECK(rules_of(pod, builtin("restricted")) ==
        std::vector<std::string>{"warn network-not-isolated linux.namespaces (network) = /var/run/netns/cni-1234"});
}

TEST_CASE("mounts: host paths, credentials and engine sockets; deny wins over allow", "[policy]") {
  json j = hardened();
  j["mounts"].push_back(bind("/var/run/docker.sock", "/var/run/docker.sock"));            // 7
  j["mounts"].push_back(bind("/home/alice/.ssh", "/root/.ssh"));                          // 8
  j["mounts"].push_back(bind("/home/alice", "/work"));                                    // 9
  j["mounts"].push_back(bind("/srv/data", "/data"));                                      // 10
  j["mounts"].push_back(bind("/var/lib/containerd/io.containerd.grpc.v1.cri/sandboxes/abc/hosts", "/etc/hosts"));  // 11
  j["mounts"].push_back(bind("volumes/cache", "/cache"));                                 // 12: in the bundle
  j["mounts"].push_back(bind("/srv/bundles/app/../../../etc", "/x"));                     // 13
  j["mounts"].push_back(bind("/", "/host"));                                              // 14
  j["mounts"].push_back(bind("/opt/proj/.aws/credentials", "/creds"));                   // 15
  j["mounts"].push_back(bind("/run/containerd", "/run/containerd"));                      // 16
  j["mounts"].push_back(bind("/var/lib/kubelet/pods", "/pods"));  // 17: every pod's secrets, not one pod's volume
  auto got = rules_of(j, builtin("baseline"));
  CHECK(got == std::vector<std::string>{
                   "error host-path-mounts mounts[10].source = /srv/data",
                   "error host-path-mounts mounts[13].source = /srv/bundles/app/../../../etc",
                   "error host-path-mounts mounts[17].source = /var/lib/kubelet/pods",
                   "error sensitive-mounts mounts[7].source = /var/run/docker.sock",
                   "error sensitive-mounts mounts[8].source = /home/alice/.ssh",
                   "error sensitive-mounts mounts[9].source = /home/alice",
                   "error sensitive-mounts mounts[14].source = /",
                   "error sensitive-mounts mounts[15].source = /opt/proj/.aws/credentials",
                   "error sensitive-mounts mounts[16].source = /run/containerd"});
  // Allowing a source covers /srv/data but never a credential directory.
  Policy p = parse_policy_yaml("level: baseline\nallow:\n  mountSources: [/srv, /home]\n", "p.yaml");
  got = rules_of(j, p);
  CHECK(std::count_if(got.begin(), got.end(), [](const std::string& s) { return s.find("/srv/data") != std::string::npos; }) == 0);
  CHECK(std::count_if(got.begin(), got.end(), [](const std::string& s) { return s.find("sensitive-mounts") != std::string::npos; }) == 6);
}

TEST_CASE("sysctls, SELinux types, NNP, root, limits, writable root", "[policy]") {
  json j = hardened();
  j["linux"]["sysctl"] = {{"net.ipv4.ip_unprivileged_port_start", "0"}, {"kernel.msgmax", "1"}};
  j["process"]["selinuxLabel"] = "system_u:system_r:spc_t:s0";
  j["process"]["noNewPrivileges"] = false;
  j["process"]["user"] = {{"uid", 0}, {"gid", 0}};
  j["root"]["readonly"] = false;
  j["linux"]["resources"] = json::object();
  CHECK(rules_of(j, builtin("restricted")) ==
        std::vector<std::string>{
            "error unsafe-sysctls linux.sysctl[\"kernel.msgmax\"] = 1",
            "error selinux-type process.selinuxLabel = system_u:system_r:spc_t:s0",
            "error no-new-privileges process.noNewPrivileges = false",
            "error root-user process.user.uid = 0",
            "warn writable-root root.readonly = false",
            "warn no-memory-limit linux.resources.memory.limit = absent",
            "warn no-pids-limit linux.resources.pids.limit = absent"});
  // Root mapped by a user namespace is not the host's root.
  j["linux"]["namespaces"].push_back({{"type", "user"}});
  j["linux"]["uidMappings"] = {{{"containerID", 0}, {"hostID", 100000}, {"size", 65536}}};
  j["linux"]["gidMappings"] = {{{"containerID", 0}, {"hostID", 100000}, {"size", 65536}}};
  auto got = rules_of(j, builtin("restricted"));
  CHECK(std::find(got.begin(), got.end(), "error root-user process.user.uid = 0") == got.end());
}

TEST_CASE("YAML policies: severities, allow lists and errors naming the field", "[policy]") {
  Policy p = parse_policy_yaml(
      "level: restricted\nrules:\n  writable-root: error\n  no-memory-limit: 'off'\n"
      "allow:\n  capabilities: [CAP_CHOWN]\n  sysctls: [kernel.msgmax]\n",
      "strict.yaml");
  json j = hardened();
  j["root"]["readonly"] = false;
  j["process"]["capabilities"]["bounding"].push_back("CAP_CHOWN");
  j["linux"]["sysctl"] = {{"kernel.msgmax", "1"}};
  j["linux"]["resources"].erase("memory");
  CHECK(rules_of(j, p) == std::vector<std::string>{"error writable-root root.readonly = false"});

  // A file that forgot its level would turn every rule off.
  CHECK_THROWS_WITH(parse_policy_yaml("rules: {no-pids-limit: warn}", "only.yaml"),
                    "only.yaml: level: required, baseline or restricted");
  // Repeated keys and paths that are not clean fail instead of meaning something else.
  CHECK_THROWS_WITH(parse_policy_yaml("level: restricted\nlevel: baseline\n", "p.yaml"), "p.yaml: level: given twice");
  CHECK_THROWS_WITH(parse_policy_yaml("level: baseline\nrules: {root-user: off, root-user: error}", "p.yaml"),
                    "p.yaml: rules.root-user: given twice");
  for (const char* dir : {"/srv/../srv", "/srv/", "//srv", "/srv/.", "srv", ""})
    CHECK_THROWS_WITH(parse_policy_yaml(std::string("level: baseline\nallow: {mountSources: ['") + dir + "']}", "p.yaml"),
                      std::string("p.yaml: allow.mountSources: \"") + dir + "\" is not a clean absolute path");

  CHECK_THROWS_WITH(parse_policy_yaml("level: baseline\nrules: {no-such-rule: error}", "p.yaml"), "p.yaml: rules.no-such-rule: unknown rule");
  CHECK_THROWS_WITH(parse_policy_yaml("level: baseline\nrules: {root-user: fatal}", "p.yaml"),
                    "p.yaml: rules.root-user: \"fatal\" is not a severity (error, warn or off)");
  CHECK_THROWS_WITH(parse_policy_yaml("level: paranoid", "p.yaml"),
                    Contains("p.yaml: policy \"paranoid\": not a built-in level"));
  CHECK_THROWS_WITH(parse_policy_yaml("level: baseline\nallow: {capabilities: [CAP_BOGUS]}", "p.yaml"),
                    "p.yaml: allow.capabilities: unknown capability \"CAP_BOGUS\"");
  CHECK_THROWS_WITH(parse_policy_yaml("level: baseline\npolcy: {}", "p.yaml"), "p.yaml: polcy: unknown key (level, rules, allow)");
  CHECK_THROWS_WITH(parse_policy_yaml("rules: [a, b", "p.yaml"), Contains("p.yaml: line 1:"));
  CHECK_THROWS_WITH(parse_policy_yaml("- a\n- b\n", "p.yaml"), "p.yaml: expected a map (level, rules, allow)");
}

TEST_CASE("the findings table has a header and one aligned line per finding", "[policy]") {
  json j = hardened();
  j["process"]["apparmorProfile"] = "unconfined";
  std::string table = findings_table(evaluate(husk::spec::parse(j.dump()), builtin("baseline"), kBundle));
  CHECK(table ==
        "SEVERITY  RULE                 FIELD                    VALUE       WHY\n"
        "error     apparmor-unconfined  process.apparmorProfile  unconfined  AppArmor confinement is turned off\n");
}

TEST_CASE("the operator's config picks the policy by --root, then binary name, then default", "[policy]") {
  OperatorConfig c = parse_operator_config(
      "policy: baseline\nroots:\n  /run/containerd/strict/: restricted\nbinaries:\n  husk-strict: /etc/husk/s.yaml\n",
      "/etc/husk/config.yaml");
  CHECK(select_policy(c, "/run/containerd/strict", "husk-strict") == "restricted");
  CHECK(select_policy(c, "/run/containerd//strict", "husk") == "restricted");
  CHECK(select_policy(c, "/run/husk", "husk-strict") == "/etc/husk/s.yaml");
  CHECK(select_policy(c, "/run/husk", "husk") == "baseline");
  CHECK_THROWS_WITH(parse_operator_config("", "c.yaml"), "c.yaml: expected a map (policy, roots, binaries)");
  CHECK(select_policy(parse_operator_config("binaries: {husk-strict: restricted}", "c.yaml"), "/run/husk", "husk").empty());
  CHECK_THROWS_WITH(parse_operator_config("polcy: restricted", "c.yaml"), "c.yaml: polcy: unknown key (policy, roots, binaries)");
  CHECK_THROWS_WITH(parse_operator_config("roots: {run/x: restricted}", "c.yaml"), "c.yaml: roots.run/x: not an absolute path");
  CHECK_THROWS_WITH(parse_operator_config("policy: [a]", "c.yaml"),
                    "c.yaml: policy: expected a policy (baseline, restricted or a file)");
}

TEST_CASE("an operator's policy file is named by an absolute path", "[policy]") {
  CHECK_THROWS_WITH(parse_operator_config("policy: strict.yaml", "c.yaml"),
                    "c.yaml: policy: \"strict.yaml\" is neither baseline, restricted nor an absolute path");
}

TEST_CASE("--policy with a word that is neither a level nor a file says so", "[policy]") {
  CHECK_THROWS_WITH(load_policy("strict"),
                    "--policy: \"strict\" is neither baseline, restricted nor a file (open strict: No such file or directory)");
  // A path is a file the caller named: the open error alone says it.
  CHECK_THROWS_WITH(load_policy("./strict"), "open ./strict: No such file or directory");
}

TEST_CASE("hostile bundles: symlinked sources, overlay layers, hooks, the host's namespaces", "[policy]") {
  json j = hardened();
  j["mounts"].push_back(bind("keys", "/keys"));  // 7: in the bundle, but a symlink to ~/.ssh
  j["mounts"].push_back({{"destination", "/o"}, {"type", "overlay"}, {"source", "overlay"},
                         {"options", {"lowerdir=/home/alice:/srv/x", "upperdir=/srv/bundles/app/u", "workdir=/srv/bundles/app/w"}}});
  j["hooks"]["createRuntime"] = {{{"path", "/bin/sh"}, {"args", {"sh", "-c", "cp /bin/sh /tmp"}}}};
  j["hooks"]["createContainer"] = {{{"path", "/bin/true"}}};  // host root too: before pivot and the privilege drop
  j["linux"]["namespaces"].push_back({{"type", "user"}, {"path", "/proc/self/ns/user"}});
  HostProbe resolve;
  resolve.resolve = [](const std::string& p) {
    return p == "/srv/bundles/app/keys" ? std::string("/home/alice/.ssh") : p;
  };
  CHECK(rules_of(j, builtin("restricted"), resolve) == std::vector<std::string>{
                   "error host-namespaces linux.namespaces[6].path = /proc/self/ns/user",
                   "error host-hooks hooks.createRuntime[0].path = /bin/sh",
                   "error host-hooks hooks.createContainer[0].path = /bin/true",
                   "error host-path-mounts mounts[8].options[0] = /srv/x",
                   "error sensitive-mounts mounts[7].source = keys",
                   "error sensitive-mounts mounts[8].options[0] = /home/alice"});
  // Without the resolver the symlink is judged as the bundle's own file.
  auto lexical = rules_of(j, builtin("restricted"));
  CHECK(std::find(lexical.begin(), lexical.end(), "error sensitive-mounts mounts[7].source = keys") == lexical.end());
  CHECK(std::find(lexical.begin(), lexical.end(), "error host-namespaces linux.namespaces[6].path = /proc/self/ns/user") != lexical.end());
}

// create opens a joined mount namespace's sources there, by name: a path the
// bundle's own on the host may be a symlink to anything in that namespace.
TEST_CASE("bind sources and overlay layers in a joined mount namespace are reported", "[policy]") {
  json j = hardened();
  for (auto& n : j["linux"]["namespaces"])
    if (n["type"] == "mount") n["path"] = "/run/netns-like/mnt";
  j["mounts"].push_back(bind("data", "/data"));  // the bundle's own on the host
  j["mounts"].push_back({{"destination", "/o"}, {"type", "overlay"}, {"source", "overlay"},
                         {"options", {"lowerdir=/srv/bundles/app/l", "upperdir=/srv/bundles/app/u", "workdir=/srv/bundles/app/w"}}});
  const auto found = rules_of(j, builtin("baseline"));
  for (const char* want : {"error host-path-mounts mounts[7].source = data",
                           "error host-path-mounts mounts[8].options[0] = /srv/bundles/app/l",
                           "error host-path-mounts mounts[8].options[1] = /srv/bundles/app/u",
                           "error host-path-mounts mounts[8].options[2] = /srv/bundles/app/w"}) {
    INFO(want);
    CHECK(std::find(found.begin(), found.end(), want) != found.end());
  }
}

TEST_CASE("red team: non-bind mounts, hidden overlay layers, root.path, device wildcards, id maps", "[policy]") {
  json j = hardened();
  j["mounts"].push_back({{"destination", "/h"}, {"type", "ext4"}, {"source", "/dev/vda"}});               // 7
  j["mounts"].push_back({{"destination", "/b"}, {"type", "binfmt_misc"}, {"source", "binfmt_misc"}});     // 8
  j["mounts"].push_back({{"destination", "/p"}, {"type", "proc"}, {"source", "proc"}});                   // 9
  // 10: "ro" then "rw": the mount code's last word is rw.
  j["mounts"].push_back({{"destination", "/s"}, {"type", "sysfs"}, {"source", "sysfs"}, {"options", {"ro", "nosuid", "rw"}}});
  j["mounts"].push_back({{"destination", "/o"}, {"type", "overlay"}, {"source", "overlay"},
                         {"options", {"index=off,lowerdir=/etc:/usr"}}});                               // 11
  j["mounts"].push_back({{"destination", "/i"}, {"type", "bind"}, {"source", "/srv/bundles/app/data"},
                         {"options", {"rbind", "idmap"}},
                         {"uidMappings", {{{"containerID", 0}, {"hostID", 1000}, {"size", 1}}}},
                         {"gidMappings", {{{"containerID", 0}, {"hostID", 1000}, {"size", 1}}}}});      // 12
  j["root"]["path"] = "/usr";
  j["linux"]["resources"]["devices"] = {{{"allow", false}, {"access", "rwm"}},
                                        {{"allow", true}, {"type", "a"}, {"major", -1}, {"minor", -1}, {"access", "rwm"}},
                                        {{"allow", true}, {"type", "b"}, {"major", 7}, {"minor", 0}, {"access", "rw"}},
                                        {{"allow", true}, {"type", "b"}, {"access", "m"}},
                                        {{"allow", true}, {"type", "c"}, {"major", 136}, {"access", "rwm"}}};
  j["linux"]["seccomp"]["defaultAction"] = "SCMP_ACT_NOTIFY";
  j["linux"]["seccomp"]["listenerPath"] = "/run/agent.sock";
  j["linux"]["namespaces"].push_back({{"type", "user"}});
  j["linux"]["uidMappings"] = {{{"containerID", 0}, {"hostID", 0}, {"size", 65536}}};
  j["linux"]["gidMappings"] = {{{"containerID", 0}, {"hostID", 0}, {"size", 65536}}};
  CHECK(rules_of(j, builtin("baseline")) ==
        std::vector<std::string>{
            "error host-path-mounts root.path = /usr",
            "error host-path-mounts mounts[11].options[0] = /usr",
            "error sensitive-mounts mounts[11].options[0] = /etc",
            "error mount-types mounts[7].type = ext4",
            "error mount-types mounts[8].type = binfmt_misc",
            "error mount-types mounts[9].destination = /p",
            "error mount-types mounts[10].options = sysfs without ro",
            "error host-root-mapping linux.uidMappings = hostID 0",
            "error host-root-mapping mounts[12].uidMappings = id 0",
            "error host-devices linux.resources.devices[1] = allow a *:* rwm",
            "error host-devices linux.resources.devices[2] = allow b 7:0 rw",
            "warn seccomp-default-allow linux.seccomp.defaultAction = SCMP_ACT_NOTIFY"});
  j["root"]["path"] = "/root";
  auto got = rules_of(j, builtin("baseline"));
  CHECK(std::find(got.begin(), got.end(), "error sensitive-mounts root.path = /root") != got.end());
}

TEST_CASE("namespaces the host probe says are the host's, through any path", "[policy]") {
  json j = hardened();
  j["linux"]["namespaces"] = {{{"type", "pid"}, {"path", "/proc/2/ns/pid"}}, {{"type", "network"}, {"path", "/proc/2/ns/net"}},
                              {{"type", "ipc"}}, {{"type", "mount"}, {"path", "/proc/77/ns/mnt"}}};
  HostProbe probe;
  probe.host_namespace = [](const std::string& path, const std::string&) { return path.rfind("/proc/2/", 0) == 0; };
  CHECK(rules_of(j, builtin("restricted"), probe) ==
        std::vector<std::string>{"error host-namespaces linux.namespaces[0].path = /proc/2/ns/pid",
                                 "error host-namespaces linux.namespaces[1].path = /proc/2/ns/net"});
}

TEST_CASE("hooks the operator allows, and an operator config that says nothing", "[policy]") {
  json j = hardened();
  j["hooks"]["prestart"] = {{{"path", "/usr/bin/nvidia-ctk"}}, {{"path", "/tmp/evil"}}};
  Policy p = parse_policy_yaml("level: restricted\nallow: {hooks: [/usr/bin/nvidia-ctk]}", "p.yaml");
  CHECK(rules_of(j, p) == std::vector<std::string>{"error host-hooks hooks.prestart[1].path = /tmp/evil"});
  CHECK_THROWS_WITH(parse_operator_config("# nothing yet\n{}", "c.yaml"),
                    "c.yaml: no policy, roots or binaries: an operator's config must say which policy applies");
  CHECK_THROWS_WITH(parse_operator_config("policy: restricted\npolicy: baseline", "c.yaml"), "c.yaml: policy: given twice");
  CHECK_THROWS_WITH(parse_operator_config("binaries: {husk-strict: restricted, husk-strict: baseline}", "c.yaml"),
                    "c.yaml: binaries.husk-strict: given twice");
}

namespace {

json rule(bool allow, const char* type, std::optional<int> major, std::optional<int> minor, const char* access) {
  json r = {{"allow", allow}, {"access", access}};
  if (*type) r["type"] = type;
  if (major) r["major"] = *major;
  if (minor) r["minor"] = *minor;
  return r;
}

// The linux.resources.devices the engines write for a container that is not
// privileged (runc adds its own defaults after them, husk the same).
json docker_devices() {  // moby oci.DefaultLinuxSpec
  return {rule(false, "", {}, {}, "rwm"),      rule(true, "c", 1, 5, "rwm"), rule(true, "c", 1, 3, "rwm"),
          rule(true, "c", 1, 9, "rwm"),        rule(true, "c", 1, 8, "rwm"), rule(true, "c", 5, 0, "rwm"),
          rule(true, "c", 5, 1, "rwm"),        rule(false, "c", 10, 229, "rwm")};
}
json containerd_devices() {  // oci.WithDefaultUnixDevices, and the net/tun rule of older releases
  return {rule(false, "", {}, {}, "rwm"), rule(true, "c", 1, 3, "rwm"),    rule(true, "c", 1, 8, "rwm"),
          rule(true, "c", 1, 7, "rwm"),   rule(true, "c", 5, 0, "rwm"),    rule(true, "c", 1, 5, "rwm"),
          rule(true, "c", 1, 9, "rwm"),   rule(true, "c", 5, 1, "rwm"),    rule(true, "c", 136, {}, "rwm"),
          rule(true, "c", 5, 2, "rwm"),   rule(true, "c", 10, 200, "rwm")};
}
json podman_devices() { return {{{"allow", false}, {"access", "rwm"}}}; }  // deny all, then runc's defaults

// runc's own default rules as a bundle may spell them out (mknod of anything).
json runc_devices() {
  return {rule(true, "c", -1, -1, "m"),  rule(true, "b", {}, {}, "m"),    rule(true, "c", 1, 3, "rwm"),
          rule(true, "c", 1, 8, "rwm"),  rule(true, "c", 1, 7, "rwm"),    rule(true, "c", 5, 0, "rwm"),
          rule(true, "c", 1, 5, "rwm"),  rule(true, "c", 1, 9, "rwm"),    rule(true, "c", 136, -1, "rwm"),
          rule(true, "c", 5, 2, "rwm"),  rule(true, "c", 10, 200, "rwm")};
}

json device(const char* path, const char* type, int major, int minor) {
  return {{"path", path}, {"type", type}, {"major", major}, {"minor", minor}, {"fileMode", 0666}};
}

std::vector<std::string> only(const std::vector<std::string>& findings, const std::string& rule) {
  std::vector<std::string> out;
  for (const auto& f : findings)
    if (f.find(" " + rule + " ") != std::string::npos) out.push_back(f);
  return out;
}

}  // namespace

TEST_CASE("devices: the engines' default rules pass, every other host device is an error", "[policy]") {
  for (const json& devices : {docker_devices(), containerd_devices(), podman_devices(), runc_devices()}) {
    json j = hardened();
    j["linux"]["resources"]["devices"] = devices;
    j["linux"]["devices"] = {device("/dev/console", "c", 5, 1), device("/dev/net/tun", "c", 10, 200),
                             device("/dev/pts/7", "c", 136, 7), device("/dev/fifo", "p", 0, 0),
                             device("/dev/null2", "u", 1, 3)};
    INFO(devices.dump());
    CHECK(rules_of(j, builtin("restricted")).empty());
  }
  json j = hardened();
  j["linux"]["resources"]["devices"] = {
      rule(true, "c", 1, 11, "rw"),    // 0: kmsg: the host's kernel log
      rule(true, "c", 7, 0, "r"),      // 1: vcs: the host console's screen
      rule(true, "c", 1, 1, "rwm"),    // 2: mem
      rule(true, "c", 1, {}, "rw"),    // 3: every 1:* (mem, kmem, port, kmsg)
      rule(true, "c", 4, -1, "w"),     // 4: the host's ttys
      rule(true, "b", 8, 0, "r"),      // 5
      rule(true, "c", 1, 11, ""),      // 6: no access is rwm
      rule(true, "c", {}, {}, "rw"),   // 7
      rule(true, "c", 1, 11, "m"),     // mknod only: fine
      rule(false, "c", 1, 11, "rw"),   // a deny: fine
      rule(true, "c", 136, 3, "rw")};  // a pts: fine
  j["linux"]["devices"] = {device("/dev/kmsg", "c", 1, 11), device("/dev/sda", "b", 8, 0), device("/dev/tty", "c", 5, 0)};
  const std::vector<std::string> want = {
      "error host-devices linux.devices[0] = /dev/kmsg (c 1:11)",
      "error host-devices linux.devices[1] = /dev/sda (b 8:0)",
      "error host-devices linux.resources.devices[0] = allow c 1:11 rw",
      "error host-devices linux.resources.devices[1] = allow c 7:0 r",
      "error host-devices linux.resources.devices[2] = allow c 1:1 rwm",
      "error host-devices linux.resources.devices[3] = allow c 1:* rw",
      "error host-devices linux.resources.devices[4] = allow c 4:* w",
      "error host-devices linux.resources.devices[5] = allow b 8:0 r",
      "error host-devices linux.resources.devices[6] = allow c 1:11 rwm",
      "error host-devices linux.resources.devices[7] = allow c *:* rw"};
  CHECK(rules_of(j, builtin("baseline")) == want);
  CHECK(rules_of(j, builtin("restricted")) == want);
}

TEST_CASE("devices a policy file allows: a GPU's major, FUSE; the syntax is the engines'", "[policy]") {
  Policy p = parse_policy_yaml("level: restricted\nallow:\n  devices: ['c 195:*', 'c 10:229']\n", "gpu.yaml");
  json j = hardened();
  j["linux"]["devices"] = {device("/dev/nvidia0", "c", 195, 0), device("/dev/nvidiactl", "c", 195, 255),
                           device("/dev/fuse", "c", 10, 229), device("/dev/kmsg", "c", 1, 11)};
  j["linux"]["resources"]["devices"] = {rule(true, "c", 195, {}, "rw"), rule(true, "c", 10, 229, "rwm"),
                                        rule(true, "c", 10, {}, "rw"), rule(true, "b", 195, 0, "rw")};
  CHECK(rules_of(j, p) == std::vector<std::string>{"error host-devices linux.devices[3] = /dev/kmsg (c 1:11)",
                                                   "error host-devices linux.resources.devices[2] = allow c 10:* rw",
                                                   "error host-devices linux.resources.devices[3] = allow b 195:0 rw"});
  CHECK(p.allowed_devices.size() == 2);
  Policy block = parse_policy_yaml("level: baseline\nallow: {devices: ['b 8:*', 'c *:*']}", "p.yaml");
  REQUIRE(block.allowed_devices.size() == 2);
  CHECK((block.allowed_devices[0].type == 'b' && block.allowed_devices[0].major == 8 && block.allowed_devices[0].minor == -1));
  CHECK((block.allowed_devices[1].major == -1 && block.allowed_devices[1].minor == -1));
  for (const char* bad : {"c 10", "x 1:2", "a 1:2", "c 1:2 rwm", "c -1:2", "c  1:2", "c 1:4294967296", "c 1:", "/dev/fuse", ""})
    CHECK_THROWS_WITH(parse_policy_yaml(std::string("level: baseline\nallow: {devices: ['") + bad + "']}", "p.yaml"),
                      std::string("p.yaml: allow.devices: \"") + bad +
                          "\" is not a device class (\"c 10:229\", \"c 195:*\", \"b 8:*\")");
  CHECK_THROWS_WITH(parse_policy_yaml("level: baseline\nallow: {gpus: []}", "p.yaml"),
                    "p.yaml: allow.gpus: unknown key (capabilities, mountSources, sysctls, hooks, devices)");
}

namespace {

// `args` a vector: a json parameter given {arg(...)} is that one object under
// clang (a copy), an array of it under g++.
json allow(std::vector<std::string> names, std::vector<json> args = {}, const char* action = "SCMP_ACT_ALLOW") {
  json r = {{"names", names}, {"action", action}};
  if (!args.empty()) r["args"] = json(args);
  return r;
}
json arg(unsigned index, uint64_t value, const char* op, uint64_t value_two = 0) {
  return {{"index", index}, {"value", value}, {"valueTwo", value_two}, {"op", op}};
}

constexpr uint64_t kDockerNsMask = 2114060288;  // CLONE_NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET

// A profile's rules as the engines resolve them for amd64 and a container
// without CAP_SYS_ADMIN (the includes/excludes already applied), with the
// common allowlist cut to a few names: only the rules that decide here.
json docker_profile() {  // moby profiles/seccomp/default.json (25.0 on: no io_uring)
  return {{"defaultAction", "SCMP_ACT_ERRNO"}, {"defaultErrnoRet", 1},
          {"syscalls", {allow({"read", "write", "fanotify_mark", "memfd_secret", "mknod", "name_to_handle_at"}),
                        allow({"process_vm_readv", "process_vm_writev", "ptrace"}),
                        allow({"socket"}, {arg(0, 40, "SCMP_CMP_NE")}),
                        allow({"personality"}, {arg(0, 0, "SCMP_CMP_EQ")}), allow({"personality"}, {arg(0, 8, "SCMP_CMP_EQ")}),
                        allow({"personality"}, {arg(0, 131072, "SCMP_CMP_EQ")}),
                        allow({"personality"}, {arg(0, 131080, "SCMP_CMP_EQ")}),
                        allow({"personality"}, {arg(0, 4294967295, "SCMP_CMP_EQ")}),
                        allow({"arch_prctl", "modify_ldt"}),
                        allow({"clone"}, {arg(0, kDockerNsMask, "SCMP_CMP_MASKED_EQ")}),
                        {{"names", {"clone3"}}, {"action", "SCMP_ACT_ERRNO"}, {"errnoRet", 38}}}}};
}
json containerd_profile() {  // contrib/seccomp DefaultProfile: Docker's shape, ptrace alone from 4.8 on
  json p = docker_profile();
  p["syscalls"][1] = allow({"ptrace"});
  return p;
}
json podman_profile() {  // containers/common pkg/seccomp/seccomp.json: rootless engines nest
  return {{"defaultAction", "SCMP_ACT_ERRNO"}, {"defaultErrnoRet", 38},
          {"syscalls", {{{"names", {"kexec_load", "userfaultfd", "swapon"}}, {"action", "SCMP_ACT_ERRNO"}, {"errnoRet", 1}},
                        allow({"read", "clone", "clone3", "keyctl", "mount", "pivot_root", "setns", "syslog", "umount2",
                               "unshare", "reboot"}),
                        allow({"personality"}, {arg(0, 0, "SCMP_CMP_EQ")}),
                        {{"names", {"bpf", "perf_event_open", "setns"}}, {"action", "SCMP_ACT_ERRNO"}, {"errnoRet", 1}}}}};
}

}  // namespace

TEST_CASE("seccomp: explicit rules for calls Docker keeps from a container without capabilities", "[policy]") {
  json j = hardened();
  auto& sc = j["linux"]["seccomp"]["syscalls"];
  sc = json::array();
  sc.push_back(allow({"keyctl", "add_key", "request_key", "read"}));                       // 0
  sc.push_back(allow({"io_uring_setup", "io_uring_enter", "io_uring_register"}, {}, "SCMP_ACT_LOG"));  // 1
  sc.push_back(allow({"userfaultfd", "perf_event_open", "bpf", "syslog"}, {}, "SCMP_ACT_NOTIFY"));  // 2
  sc.push_back(allow({"unshare"}));                                                        // 3
  sc.push_back(allow({"clone3"}));                                                         // 4
  sc.push_back(allow({"clone"}, {arg(0, 0x20000, "SCMP_CMP_MASKED_EQ")}));                 // 5: masks NEWNS only
  sc.push_back(allow({"clone"}, {arg(0, 0x10000000, "SCMP_CMP_MASKED_EQ", 0x10000000)}));  // 6: NEWUSER required
  sc.push_back(allow({"clone"}, {arg(0, 0x10000000, "SCMP_CMP_LT"), arg(0, 0, "SCMP_CMP_GE")}));  // 7: one rule each
  sc.push_back(allow({"clone"}, {arg(2, 0, "SCMP_CMP_EQ")}));                              // 8: flags free
  sc.push_back(allow({"personality"}, {arg(0, 0x0040000, "SCMP_CMP_EQ")}));                // 9: ADDR_NO_RANDOMIZE
  sc.push_back(allow({"personality"}));                                                    // 10
  sc.push_back(allow({"unshare"}, {arg(0, 0x80000000, "SCMP_CMP_GT")}));                   // 11
  sc.push_back(allow({"socket"}));                                                         // 12
  sc.push_back(allow({"socket"}, {arg(0, 40, "SCMP_CMP_NE")}));                            // 13: (1 << 32) | 40
  sc.push_back(allow({"socket"}, {arg(0, (1ULL << 32) | 40, "SCMP_CMP_EQ")}));             // 14
  sc.push_back(allow({"socket"}, {arg(0, 41, "SCMP_CMP_LT")}));                            // 15
  sc.push_back(allow({"socket"}, {arg(0, 0xff, "SCMP_CMP_MASKED_EQ", 0x28)}));             // 16
  // Fine: namespaces masked out (with other flags too), NEWUSER below the
  // bound, a safe personality, denials, and calls that need a capability.
  sc.push_back(allow({"clone", "unshare"}, {arg(0, kDockerNsMask, "SCMP_CMP_MASKED_EQ")}));
  sc.push_back(allow({"clone"}, {arg(0, kDockerNsMask | 0x100, "SCMP_CMP_MASKED_EQ", 0x100)}));
  sc.push_back(allow({"unshare"}, {arg(0, 0x10000000, "SCMP_CMP_LT")}));
  sc.push_back(allow({"unshare"}, {arg(0, 0x400, "SCMP_CMP_EQ")}));  // CLONE_FILES
  sc.push_back(allow({"personality"}, {arg(0, 8, "SCMP_CMP_EQ")}));
  sc.push_back(allow({"socket"}, {arg(0, 40, "SCMP_CMP_LT")}));  // husk's: compared whole
  sc.push_back(allow({"socket"}, {arg(0, 41, "SCMP_CMP_EQ")}));
  sc.push_back(allow({"socket"}, {arg(0, 0xff, "SCMP_CMP_MASKED_EQ", 0x29)}));
  sc.push_back(allow({"keyctl", "bpf", "clone3"}, {}, "SCMP_ACT_ERRNO"));
  sc.push_back(allow({"io_uring_setup"}, {}, "SCMP_ACT_KILL_PROCESS"));
  sc.push_back(allow({"mount", "setns", "kexec_load", "init_module", "ptrace"}));
  const std::vector<std::string> want = {
      "seccomp-syscalls linux.seccomp.syscalls[0] = keyctl (SCMP_ACT_ALLOW)",
      "seccomp-syscalls linux.seccomp.syscalls[0] = add_key (SCMP_ACT_ALLOW)",
      "seccomp-syscalls linux.seccomp.syscalls[0] = request_key (SCMP_ACT_ALLOW)",
      "seccomp-syscalls linux.seccomp.syscalls[1] = io_uring_setup (SCMP_ACT_LOG)",
      "seccomp-syscalls linux.seccomp.syscalls[1] = io_uring_enter (SCMP_ACT_LOG)",
      "seccomp-syscalls linux.seccomp.syscalls[1] = io_uring_register (SCMP_ACT_LOG)",
      "seccomp-syscalls linux.seccomp.syscalls[2] = userfaultfd (SCMP_ACT_NOTIFY)",
      "seccomp-syscalls linux.seccomp.syscalls[2] = perf_event_open (SCMP_ACT_NOTIFY)",
      "seccomp-syscalls linux.seccomp.syscalls[2] = bpf (SCMP_ACT_NOTIFY)",
      "seccomp-syscalls linux.seccomp.syscalls[2] = syslog (SCMP_ACT_NOTIFY)",
      "seccomp-syscalls linux.seccomp.syscalls[3] = unshare (SCMP_ACT_ALLOW)",
      "seccomp-syscalls linux.seccomp.syscalls[4] = clone3 (SCMP_ACT_ALLOW)",
      "seccomp-syscalls linux.seccomp.syscalls[5] = clone (SCMP_ACT_ALLOW)",
      "seccomp-syscalls linux.seccomp.syscalls[6] = clone (SCMP_ACT_ALLOW)",
      "seccomp-syscalls linux.seccomp.syscalls[7] = clone (SCMP_ACT_ALLOW)",
      "seccomp-syscalls linux.seccomp.syscalls[8] = clone (SCMP_ACT_ALLOW)",
      "seccomp-syscalls linux.seccomp.syscalls[9] = personality (SCMP_ACT_ALLOW)",
      "seccomp-syscalls linux.seccomp.syscalls[10] = personality (SCMP_ACT_ALLOW)",
      "seccomp-syscalls linux.seccomp.syscalls[11] = unshare (SCMP_ACT_ALLOW)",
      "seccomp-syscalls linux.seccomp.syscalls[12] = socket (SCMP_ACT_ALLOW)",
      "seccomp-syscalls linux.seccomp.syscalls[13] = socket (SCMP_ACT_ALLOW)",
      "seccomp-syscalls linux.seccomp.syscalls[14] = socket (SCMP_ACT_ALLOW)",
      "seccomp-syscalls linux.seccomp.syscalls[15] = socket (SCMP_ACT_ALLOW)",
      "seccomp-syscalls linux.seccomp.syscalls[16] = socket (SCMP_ACT_ALLOW)"};
  auto with = [](const char* severity, std::vector<std::string> v) {
    for (auto& s : v) s = std::string(severity) + " " + s;
    return v;
  };
  CHECK(rules_of(j, builtin("restricted")) == with("error", want));
  CHECK(rules_of(j, builtin("baseline")) == with("warn", want));
  CHECK_FALSE(violated(evaluate(husk::spec::parse(j.dump()), builtin("baseline"), kBundle)));
  Policy off = parse_policy_yaml("level: restricted\nrules: {seccomp-syscalls: 'off'}", "p.yaml");
  CHECK(rules_of(j, off).empty());
}

// Found by a review helper: obsolete and NUMA calls Docker keeps from a
// container without capabilities, and socketcall(2), whose socket family the
// filter cannot read, where the profile lets 32-bit programs in.
TEST_CASE("seccomp: obsolete interfaces, NUMA placement, fanotify and 32-bit socketcall", "[policy]") {
  json j = hardened();
  auto& sc = j["linux"]["seccomp"]["syscalls"];
  sc = json::array();
  sc.push_back(allow({"uselib", "ustat", "sysfs", "vm86", "vm86old"}));                           // 0
  sc.push_back(allow({"mbind", "set_mempolicy", "move_pages", "migrate_pages", "fanotify_init"}));  // 1
  sc.push_back(allow({"socketcall", "get_mempolicy"}));                                           // 2
  auto found = [&] {
    std::vector<std::string> names;
    for (const auto& f : evaluate(husk::spec::parse(j.dump()), builtin("restricted"), kBundle))
      if (f.rule == "seccomp-syscalls") names.push_back(f.field.substr(f.field.size() - 2, 1) + " " + f.value);
    return names;
  };
  j["linux"]["seccomp"]["architectures"] = {"SCMP_ARCH_X86_64"};
  const std::vector<std::string> native = {
      "0 uselib (SCMP_ACT_ALLOW)",        "0 ustat (SCMP_ACT_ALLOW)",       "0 sysfs (SCMP_ACT_ALLOW)",
      "0 vm86 (SCMP_ACT_ALLOW)",          "0 vm86old (SCMP_ACT_ALLOW)",     "1 mbind (SCMP_ACT_ALLOW)",
      "1 set_mempolicy (SCMP_ACT_ALLOW)", "1 move_pages (SCMP_ACT_ALLOW)",  "1 migrate_pages (SCMP_ACT_ALLOW)",
      "1 fanotify_init (SCMP_ACT_ALLOW)"};
  CHECK(found() == native);  // no 32-bit programs: socketcall is no way in; get_mempolicy only reads
  j["linux"]["seccomp"]["architectures"] = {"SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"};
  auto with_32 = native;
  with_32.push_back("2 socketcall (SCMP_ACT_ALLOW)");
  CHECK(found() == with_32);
}

TEST_CASE("seccomp: husk's, Docker's, containerd's and podman's default profiles", "[policy]") {
  // husk spec's own profile passes restricted (hardened() carries it).
  CHECK(only(rules_of(hardened(), builtin("restricted")), "seccomp-syscalls").empty());
  // Docker's and containerd's: only their AF_VSOCK rule, "!= 40" on the
  // 64-bit argument, which (1 << 32) | 40 meets.
  for (const json& profile : {docker_profile(), containerd_profile()}) {
    json j = hardened();
    j["linux"]["seccomp"] = profile;
    INFO(profile.dump());
    CHECK(rules_of(j, builtin("restricted")) ==
          std::vector<std::string>{"error seccomp-syscalls linux.seccomp.syscalls[2] = socket (SCMP_ACT_ALLOW)"});
    CHECK(rules_of(j, builtin("baseline")) ==
          std::vector<std::string>{"warn seccomp-syscalls linux.seccomp.syscalls[2] = socket (SCMP_ACT_ALLOW)"});
  }
  // Docker before 25.0 allowed io_uring: a warning under baseline.
  json old_docker = hardened();
  old_docker["linux"]["seccomp"] = docker_profile();
  old_docker["linux"]["seccomp"]["syscalls"][0]["names"].push_back("io_uring_setup");
  CHECK(rules_of(old_docker, builtin("baseline")) ==
        std::vector<std::string>{"warn seccomp-syscalls linux.seccomp.syscalls[0] = io_uring_setup (SCMP_ACT_ALLOW)",
                                 "warn seccomp-syscalls linux.seccomp.syscalls[2] = socket (SCMP_ACT_ALLOW)"});
  // podman's lets user namespaces, the keyring and the kernel log through:
  // warnings under baseline, errors under restricted.
  json podman = hardened();
  podman["linux"]["seccomp"] = podman_profile();
  const std::vector<std::string> calls = {"clone", "clone3", "keyctl", "syslog", "unshare"};
  std::vector<std::string> want;
  for (const auto& c : calls) want.push_back("warn seccomp-syscalls linux.seccomp.syscalls[1] = " + c + " (SCMP_ACT_ALLOW)");
  CHECK(rules_of(podman, builtin("baseline")) == want);
  CHECK_FALSE(violated(evaluate(husk::spec::parse(podman.dump()), builtin("baseline"), kBundle)));
  CHECK(violated(evaluate(husk::spec::parse(podman.dump()), builtin("restricted"), kBundle)));
}

TEST_CASE("an engine's whole default container passes baseline: devices and seccomp together", "[policy]") {
  struct Engine {
    const char* name;
    json devices, profile;
  };
  for (const auto& e : {Engine{"docker", docker_devices(), docker_profile()},
                        Engine{"containerd", containerd_devices(), containerd_profile()},
                        Engine{"podman", podman_devices(), podman_profile()}}) {
    // The engines' process: root with their default capabilities, writable root.
    json j = json::parse(husk::spec::default_config_json({}));
    const json caps = {"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD", "CAP_NET_RAW",
                       "CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE",
                       "CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE"};
    j["process"]["capabilities"] = {{"bounding", caps}, {"effective", caps}, {"permitted", caps}};
    j["root"]["readonly"] = false;
    j["linux"]["resources"]["devices"] = e.devices;
    j["linux"]["seccomp"] = e.profile;
    INFO(e.name);
    CHECK_FALSE(violated(evaluate(husk::spec::parse(j.dump()), builtin("baseline"), kBundle)));
  }
}
