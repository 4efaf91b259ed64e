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
