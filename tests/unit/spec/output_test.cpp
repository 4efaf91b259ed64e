// load_bundle, the `spec` template, state and features JSON, name tables.
#include <sys/resource.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <set>
#include <nlohmann/json.hpp>

#include "spec/defaults.h"
#include "spec/spec.h"
#include "unit/temp_dir.h"

using namespace husk::spec;
using Catch::Contains;
using json = nlohmann::json;

namespace {

struct TempDir : husk_test::TempDir {
  TempDir() : husk_test::TempDir("husk-spec-test.") {}
  void write(const std::string& text) const { std::ofstream(path + "/config.json") << text; }
};

const json* find_mount(const json& spec, const std::string& dest) {
  for (const auto& m : spec["mounts"]) {
    if (m["destination"] == dest) return &m;
  }
  return nullptr;
}

std::vector<std::string> ns_types(const json& spec) {
  std::vector<std::string> out;
  for (const auto& n : spec["linux"]["namespaces"]) out.push_back(n["type"]);
  return out;
}

}  // namespace

TEST_CASE("load_bundle reads, parses and validates config.json", "[bundle]") {
  TempDir dir;
  REQUIRE_THROWS_WITH(load_bundle(dir.path), "open " + dir.path + "/config.json: No such file or directory");
  try {
    load_bundle(dir.path);
  } catch (const husk::Error& e) {
    CHECK(e.err() == ENOENT);
  }

  dir.write(default_config_json({}));
  Spec s = load_bundle(dir.path + "/");
  CHECK(s.root->path == "rootfs");

  dir.write("{\n  \"ociVersion\": \"1.0.0\",\n  oops\n}");
  REQUIRE_THROWS_WITH(load_bundle(dir.path), Contains("config.json: line 3, column 3: "));

  dir.write(R"({"ociVersion": "1.0.0", "root": {"path": "rootfs"}, "process": {"args": [], "cwd": "/"}})");
  REQUIRE_THROWS_WITH(load_bundle(dir.path), "config.json: process.args: must not be empty");

  unlink((dir.path + "/config.json").c_str());
  REQUIRE(symlink("/dev/zero", (dir.path + "/config.json").c_str()) == 0);
  REQUIRE_THROWS_WITH(load_bundle(dir.path), dir.path + "/config.json: not a regular file");
}

TEST_CASE("default_config_json is runc's template with a default-deny seccomp profile", "[bundle]") {
  std::string text = default_config_json({});
  Spec s = parse(text);
  REQUIRE_NOTHROW(validate(s, true));
  CHECK(s.oci_version == kOciVersionMax);
  CHECK(s.process->terminal);
  CHECK(s.process->args == std::vector<std::string>{"sh"});
  CHECK(s.process->cwd == "/");
  CHECK(s.process->no_new_privileges);
  CHECK(s.process->capabilities->bounding ==
        std::vector<std::string>{"CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE"});
  CHECK(s.process->capabilities->permitted == s.process->capabilities->bounding);
  CHECK(s.process->capabilities->effective == s.process->capabilities->bounding);
  REQUIRE(s.process->rlimits.size() == 1);
  CHECK(s.process->rlimits[0].type == "RLIMIT_NOFILE");
  CHECK(s.process->rlimits[0].soft == 1024);
  CHECK(s.root->readonly);
  CHECK(s.hostname == "husk");

  json j = json::parse(text);
  CHECK(ns_types(j) == std::vector<std::string>{"pid", "network", "ipc", "uts", "mount", "cgroup"});
  REQUIRE(find_mount(j, "/sys"));
  CHECK((*find_mount(j, "/sys"))["type"] == "sysfs");
  REQUIRE(find_mount(j, "/sys/fs/cgroup"));
  REQUIRE(find_mount(j, "/dev/pts"));
  CHECK((*find_mount(j, "/dev/pts"))["options"].back() == "gid=5");
  CHECK(s.linux_->masked_paths.size() == 10);
  CHECK(s.linux_->readonly_paths.size() == 5);
  CHECK(s.linux_->uid_mappings.empty());
  REQUIRE(s.linux_->seccomp);
  CHECK(s.linux_->seccomp->default_action == "SCMP_ACT_ERRNO");
  CHECK(s.linux_->seccomp->architectures.empty());  // native only

  // --permissive: the same without the profile.
  json permissive = json::parse(default_config_json({.permissive = true}));
  CHECK_FALSE(permissive["linux"].contains("seccomp"));
  j["linux"].erase("seccomp");
  CHECK(permissive == j);
}

TEST_CASE("default_seccomp names no syscall twice; nested adds the namespace and mount calls", "[bundle]") {
  auto allowed = [](const nlohmann::ordered_json& profile) {
    std::vector<std::string> names;
    for (const auto& rule : profile["syscalls"])
      if (rule["action"] == "SCMP_ACT_ALLOW" && !rule.contains("args"))
        for (const auto& n : rule["names"]) names.push_back(n);
    return names;
  };
  std::vector<std::string> strict = allowed(default_seccomp(false)), nested = allowed(default_seccomp(true));
  std::set<std::string> unique(strict.begin(), strict.end());
  CHECK(unique.size() == strict.size());
  for (const char* denied : {"ptrace", "bpf", "keyctl", "add_key", "request_key", "perf_event_open", "mount",
                             "unshare", "setns", "clone", "clone3", "io_uring_setup", "userfaultfd",
                             "init_module", "kexec_load", "open_by_handle_at", "process_vm_readv", "personality"})
    CHECK(unique.count(denied) == 0);
  for (const char* needed : {"read", "write", "execve", "openat", "mmap", "futex", "exit_group", "wait4"})
    CHECK(unique.count(needed) == 1);
  std::set<std::string> more(nested.begin(), nested.end());
  for (const char* n : {"unshare", "setns", "mount", "pivot_root", "clone", "clone3"}) CHECK(more.count(n) == 1);
  CHECK(more.count("ptrace") == 0);
  // Nested: the keyring stays denied, as ENOSYS (runtimes inside skip their session keyring).
  for (bool n : {false, true}) {
    int keyring = 0;
    const nlohmann::ordered_json profile = default_seccomp(n);
    for (const auto& rule : profile["syscalls"])
      for (const auto& name : rule["names"])
        if (name == "keyctl") keyring = rule["errnoRet"].get<int>();
    CHECK(keyring == (n ? ENOSYS : 0));
  }
}

TEST_CASE("default_seccomp survives tools that read numbers as doubles (jq): every value below 2^53", "[bundle]") {
  for (bool nested : {false, true}) {
    const nlohmann::ordered_json profile = default_seccomp(nested);
    for (const auto& rule : profile["syscalls"])
      for (const auto& arg : rule.value("args", nlohmann::ordered_json::array()))
        for (const char* k : {"value", "valueTwo"})
          if (arg.contains(k)) {
            INFO(rule["names"].dump() << " " << k);
            CHECK(arg[k].get<uint64_t>() < (uint64_t{1} << 53));
          }
  }
}

TEST_CASE("default_config_json(rootless) maps the caller, mounts sysfs in its own netns, no cgroup", "[bundle]") {
  std::string text = default_config_json({.rootless = true});
  Spec s = parse(text);
  REQUIRE_NOTHROW(validate(s, true));
  json j = json::parse(text);
  CHECK(ns_types(j) == std::vector<std::string>{"pid", "network", "ipc", "uts", "mount", "cgroup", "user"});
  REQUIRE(s.linux_->uid_mappings.size() == 1);
  CHECK(s.linux_->uid_mappings[0].container_id == 0);
  CHECK(s.linux_->uid_mappings[0].host_id == geteuid());
  CHECK(s.linux_->uid_mappings[0].size == 1);
  REQUIRE(s.linux_->gid_mappings.size() == 1);
  CHECK(s.linux_->gid_mappings[0].host_id == getegid());
  const json* sys = find_mount(j, "/sys");
  REQUIRE(sys);
  CHECK((*sys)["type"] == "sysfs");
  CHECK((*sys)["options"] == json({"nosuid", "noexec", "nodev", "ro"}));
  CHECK_FALSE(find_mount(j, "/sys/fs/cgroup"));
  for (const auto& opt : (*find_mount(j, "/dev/pts"))["options"]) CHECK(opt != "gid=5");
  CHECK_FALSE(s.linux_->resources);
}

TEST_CASE("state_to_json uses runc's field names and order", "[state]") {
  State st;
  st.oci_version = "1.2.0";
  st.id = "c1";
  st.status = "running";
  st.pid = 4242;
  st.bundle = "/b";
  st.rootfs = "/b/rootfs";
  st.created = "2024-01-02T03:04:05.123456789Z";
  st.owner = "";
  std::string compact = state_to_json(st, false);
  CHECK(compact ==
        R"({"ociVersion":"1.2.0","id":"c1","pid":4242,"status":"running","bundle":"/b","rootfs":"/b/rootfs",)"
        R"("created":"2024-01-02T03:04:05.123456789Z","owner":""})");

  st.annotations["a"] = "b";
  std::string pretty = state_to_json(st, true);
  CHECK_THAT(pretty, Contains("\n  \"ociVersion\": \"1.2.0\",\n  \"id\": \"c1\""));
  json j = json::parse(pretty);
  CHECK(j["annotations"]["a"] == "b");

  st.bundle = std::string("/b\xff");  // not UTF-8: still printable
  CHECK_NOTHROW(json::parse(state_to_json(st, false)));
}

TEST_CASE("features_to_json has the features.md shape", "[features]") {
  Features f;
  f.hooks = {"prestart", "poststop"};
  f.mount_options = {"ro", "rbind"};
  f.namespaces = known_namespaces();
  f.capabilities = known_capabilities();
  f.cgroup_v1 = true;
  f.cgroup_v2 = true;
  f.seccomp_enabled = true;
  f.seccomp_actions = {"SCMP_ACT_ALLOW"};
  f.seccomp_operators = {"SCMP_CMP_EQ"};
  f.seccomp_archs = {"SCMP_ARCH_X86_64"};
  f.seccomp_known_flags = {"SECCOMP_FILTER_FLAG_LOG"};
  f.seccomp_supported_flags = {"SECCOMP_FILTER_FLAG_LOG"};
  f.mount_extensions_idmap = true;
  f.annotations["org.example.version"] = "1";
  json j = json::parse(features_to_json(f));
  CHECK(j["ociVersionMin"] == "1.0.0");
  CHECK(j["ociVersionMax"] == kOciVersionMax);
  CHECK(j["hooks"] == json({"prestart", "poststop"}));
  CHECK(j["mountOptions"] == json({"ro", "rbind"}));
  const json& l = j["linux"];
  CHECK(l["namespaces"].size() == 8);
  CHECK(l["capabilities"][40] == "CAP_CHECKPOINT_RESTORE");
  CHECK(l["cgroup"] == json({{"v1", true}, {"v2", true}, {"systemd", false}, {"systemdUser", false}, {"rdma", false}}));
  CHECK(l["seccomp"]["enabled"] == true);
  CHECK(l["seccomp"]["actions"] == json({"SCMP_ACT_ALLOW"}));
  CHECK(l["seccomp"]["operators"] == json({"SCMP_CMP_EQ"}));
  CHECK(l["seccomp"]["archs"] == json({"SCMP_ARCH_X86_64"}));
  CHECK(l["seccomp"]["knownFlags"] == json({"SECCOMP_FILTER_FLAG_LOG"}));
  CHECK(l["seccomp"]["supportedFlags"] == json({"SECCOMP_FILTER_FLAG_LOG"}));
  CHECK(l["apparmor"]["enabled"] == false);
  CHECK(l["selinux"]["enabled"] == false);
  CHECK(l["intelRdt"]["enabled"] == false);
  CHECK(l["mountExtensions"]["idmap"]["enabled"] == true);
  CHECK(j["annotations"]["org.example.version"] == "1");
}

TEST_CASE("name tables", "[tables]") {
  CHECK(known_capabilities().size() == 41);
  CHECK(capability_number("CAP_CHOWN") == 0);
  CHECK(capability_number("CAP_SYS_ADMIN") == 21);
  CHECK(capability_number("CAP_CHECKPOINT_RESTORE") == 40);
  CHECK(capability_number("CAP_NOPE") == -1);
  CHECK(rlimit_resource("RLIMIT_NOFILE") == RLIMIT_NOFILE);
  CHECK(rlimit_resource("RLIMIT_RTTIME") == RLIMIT_RTTIME);
  CHECK(rlimit_resource("NOFILE") == -1);
  CHECK(known_namespaces() ==
        std::vector<std::string>{"cgroup", "ipc", "mount", "network", "pid", "time", "user", "uts"});
  Linux l;
  l.namespaces = {{"pid", ""}, {"network", "/run/netns/x"}};
  CHECK(l.has_namespace("pid"));
  CHECK_FALSE(l.has_namespace("user"));
  REQUIRE(l.find_namespace("network"));
  CHECK(l.find_namespace("network")->path == "/run/netns/x");
  CHECK(l.find_namespace("uts") == nullptr);
}

TEST_CASE("sys_error and rethrow_with keep errno", "[error]") {
  husk::Error e = husk::sys_error("mount proc on /proc", EPERM);
  CHECK(std::string(e.what()) == "mount proc on /proc: Operation not permitted");
  CHECK(e.err() == EPERM);
  try {
    husk::rethrow_with("container c1", e);
  } catch (const husk::Error& r) {
    CHECK(std::string(r.what()) == "container c1: mount proc on /proc: Operation not permitted");
    CHECK(r.err() == EPERM);
  }
}

TEST_CASE("configs written by `runc spec` load unchanged", "[bundle][compat]") {
  for (const char* runc : {"/usr/bin/runc", "/usr/sbin/runc", "/usr/local/bin/runc", "/usr/local/sbin/runc"}) {
    if (access(runc, X_OK) != 0) continue;
    for (const char* flag : {"", " --rootless"}) {
      TempDir dir;
      INFO(runc << flag);
      REQUIRE(std::system((std::string(runc) + " spec" + flag + " --bundle " + dir.path).c_str()) == 0);
      Spec s = load_bundle(dir.path);
      CHECK(s.process->args == std::vector<std::string>{"sh"});
    }
    return;
  }
  WARN("runc not installed; compatibility with its template not checked");
}
