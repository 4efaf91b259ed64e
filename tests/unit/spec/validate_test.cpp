// spec::validate: each rule rejects a config that breaks it, and the message
// names the JSON path. Broken configs are a valid base plus a JSON merge patch.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "spec/spec.h"

using namespace husk::spec;
using Catch::Contains;

namespace {

const char* kBase = R"json({
  "ociVersion": "1.2.0",
  "root": {"path": "rootfs"},
  "process": {"args": ["sh"], "cwd": "/", "env": ["PATH=/bin"]},
  "hostname": "h",
  "mounts": [{"destination": "/proc", "type": "proc", "source": "proc"}],
  "linux": {"namespaces": [{"type": "pid"}, {"type": "mount"}, {"type": "uts"}, {"type": "ipc"},
                           {"type": "network"}]}
})json";

// kBase with `patch` merged in (RFC 7386: objects merge, null deletes, arrays replace).
Spec with(const char* patch) {
  auto j = nlohmann::json::parse(kBase);
  j.merge_patch(nlohmann::json::parse(patch));
  return parse(j.dump());
}

void check(const char* patch, bool for_create = true) { validate(with(patch), for_create); }

// Namespaces of kBase plus a user namespace and mappings for root.
const char* kUserns = R"("namespaces": [{"type": "pid"}, {"type": "mount"}, {"type": "uts"}, {"type": "user"}],
  "uidMappings": [{"containerID": 0, "hostID": 1000, "size": 1}],
  "gidMappings": [{"containerID": 0, "hostID": 1000, "size": 1}])";

std::string linux_patch(const std::string& body) { return "{\"linux\": {" + body + "}}"; }

}  // namespace

TEST_CASE("the base config is valid", "[validate]") { CHECK_NOTHROW(check("{}")); }

TEST_CASE("ociVersion", "[validate]") {
  CHECK_NOTHROW(check(R"({"ociVersion": "1.0.0"})"));
  CHECK_NOTHROW(check(R"({"ociVersion": "1.0.2-dev"})"));
  CHECK_NOTHROW(check(R"({"ociVersion": "1.1.0-rc.1"})"));
  CHECK_NOTHROW(check(R"({"ociVersion": "1.3.0+dev"})"));
  CHECK_NOTHROW(check(R"({"ociVersion": "1.3.7"})"));
  REQUIRE_THROWS_WITH(check(R"({"ociVersion": "2.0.0"})"),
                      Contains("ociVersion: unsupported version \"2.0.0\" (husk supports 1.0.0 to 1.3.x)"));
  REQUIRE_THROWS_WITH(check(R"({"ociVersion": "1.4.0"})"), Contains("ociVersion: unsupported version \"1.4.0\""));
  REQUIRE_THROWS_WITH(check(R"({"ociVersion": "0.9.0"})"), Contains("ociVersion: unsupported version"));
  REQUIRE_THROWS_WITH(check(R"({"ociVersion": "1.0"})"), Contains("ociVersion: \"1.0\" is not a SemVer version"));
  REQUIRE_THROWS_WITH(check(R"({"ociVersion": "1.01.0"})"), Contains("is not a SemVer version"));
  REQUIRE_THROWS_WITH(check(R"({"ociVersion": "1.0.0-"})"), Contains("is not a SemVer version"));
  REQUIRE_THROWS_WITH(check(R"({"ociVersion": null})"), Contains("ociVersion: required"));
}

TEST_CASE("root and process", "[validate]") {
  REQUIRE_THROWS_WITH(check(R"({"root": null})"), Contains("root: required"));
  CHECK_NOTHROW(check(R"({"root": null, "process": null})", false));
  REQUIRE_THROWS_WITH(check(R"({"root": {"path": ""}})"), Contains("root.path: must not be empty"));
  REQUIRE_THROWS_WITH(check(R"({"process": null})"), Contains("process: required"));
  REQUIRE_THROWS_WITH(check(R"({"process": {"args": []}})"), Contains("process.args: must not be empty"));
  REQUIRE_THROWS_WITH(check(R"({"process": {"args": [""]}})"), Contains("process.args[0]: must not be empty"));
  REQUIRE_THROWS_WITH(check(R"({"process": {"args": ["sh", "a\u0000b"]}})"),
                      Contains("process.args[1]: must not contain a NUL byte"));
  REQUIRE_THROWS_WITH(check(R"({"process": {"cwd": "tmp"}})"), Contains("process.cwd: must be an absolute path"));
  REQUIRE_THROWS_WITH(check(R"({"process": {"cwd": ""}})"), Contains("process.cwd: must be an absolute path"));
}

TEST_CASE("process.env entries are KEY=value", "[validate]") {
  CHECK_NOTHROW(check(R"({"process": {"env": ["A=", "B==c", "C=d=e"]}})"));
  REQUIRE_THROWS_WITH(check(R"({"process": {"env": ["A=1", "B=2", "NOEQUALS"]}})"),
                      Contains("process.env[2]: must be of the form KEY=value"));
  REQUIRE_THROWS_WITH(check(R"({"process": {"env": ["=value"]}})"),
                      Contains("process.env[0]: must be of the form KEY=value"));
}

TEST_CASE("process.rlimits", "[validate]") {
  CHECK_NOTHROW(check(R"({"process": {"rlimits": [{"type": "RLIMIT_NOFILE", "soft": 1, "hard": 2},
                                                   {"type": "RLIMIT_RTTIME", "soft": 5, "hard": 5}]}})"));
  REQUIRE_THROWS_WITH(check(R"({"process": {"rlimits": [{"type": "RLIMIT_FOO", "soft": 1, "hard": 1}]}})"),
                      Contains("process.rlimits[0].type: unknown rlimit \"RLIMIT_FOO\""));
  REQUIRE_THROWS_WITH(check(R"({"process": {"rlimits": [{"type": "RLIMIT_CORE", "soft": 1, "hard": 1},
                                                         {"type": "RLIMIT_CORE", "soft": 2, "hard": 2}]}})"),
                      Contains("process.rlimits[1].type: duplicate rlimit \"RLIMIT_CORE\""));
  REQUIRE_THROWS_WITH(check(R"({"process": {"rlimits": [{"type": "RLIMIT_CORE", "soft": 3, "hard": 2}]}})"),
                      Contains("process.rlimits[0]: soft limit must not exceed hard limit"));
}

TEST_CASE("process.capabilities names", "[validate]") {
  CHECK_NOTHROW(check(R"({"process": {"capabilities": {"bounding": ["CAP_CHECKPOINT_RESTORE", "CAP_BPF"]}}})"));
  // config.md: runtimes SHOULD NOT fail on capabilities they cannot grant
  CHECK_NOTHROW(check(R"({"process": {"capabilities": {"bounding": ["CAP_KILL", "CAP_FOO"]}}})"));
}

TEST_CASE("process scalar ranges", "[validate]") {
  REQUIRE_THROWS_WITH(check(R"({"process": {"oomScoreAdj": 1001}})"), Contains("process.oomScoreAdj: must be between"));
  REQUIRE_THROWS_WITH(check(R"({"process": {"oomScoreAdj": -1001}})"), Contains("process.oomScoreAdj"));
  CHECK_NOTHROW(check(R"({"process": {"oomScoreAdj": -1000}})"));
  REQUIRE_THROWS_WITH(check(R"({"process": {"user": {"umask": 512}}})"), Contains("process.user.umask: must be <= 0777"));
  CHECK_NOTHROW(check(R"({"process": {"user": {"umask": 511}}})"));
  REQUIRE_THROWS_WITH(check(R"({"process": {"ioPriority": {"class": "IOPRIO_CLASS_NONE", "priority": 0}}})"),
                      Contains("process.ioPriority.class: unknown class \"IOPRIO_CLASS_NONE\""));
  REQUIRE_THROWS_WITH(check(R"({"process": {"ioPriority": {"class": "IOPRIO_CLASS_RT", "priority": 8}}})"),
                      Contains("process.ioPriority.priority: must be between 0 and 7"));
  CHECK_NOTHROW(check(R"({"process": {"ioPriority": {"class": "IOPRIO_CLASS_IDLE", "priority": 7}}})"));
  CHECK_NOTHROW(check(R"({"process": {"execCPUAffinity": {"initial": "0-3, 7", "final": "1"}}})"));
  REQUIRE_THROWS_WITH(check(R"({"process": {"execCPUAffinity": {"final": "all"}}})"),
                      Contains("process.execCPUAffinity.final: must be a CPU list"));
}

TEST_CASE("process.scheduler", "[validate]") {
  CHECK_NOTHROW(check(R"({"process": {"scheduler": {"policy": "SCHED_FIFO", "priority": 10}}})"));
  CHECK_NOTHROW(check(R"({"process": {"scheduler": {"policy": "SCHED_BATCH", "nice": 19}}})"));
  REQUIRE_THROWS_WITH(check(R"({"process": {"scheduler": {"policy": "SCHED_FAST"}}})"),
                      Contains("process.scheduler.policy: unknown policy \"SCHED_FAST\""));
  REQUIRE_THROWS_WITH(check(R"({"process": {"scheduler": {"nice": 1}}})"), Contains("process.scheduler.policy: required"));
  REQUIRE_THROWS_WITH(check(R"({"process": {"scheduler": {"policy": "SCHED_OTHER", "flags": ["SCHED_FLAG_X"]}}})"),
                      Contains("process.scheduler.flags[0]: unknown flag \"SCHED_FLAG_X\""));
  REQUIRE_THROWS_WITH(check(R"({"process": {"scheduler": {"policy": "SCHED_OTHER", "nice": 20}}})"),
                      Contains("process.scheduler.nice"));
  REQUIRE_THROWS_WITH(check(R"({"process": {"scheduler": {"policy": "SCHED_OTHER", "priority": 5}}})"),
                      Contains("process.scheduler.priority: only allowed for SCHED_FIFO and SCHED_RR"));
  REQUIRE_THROWS_WITH(check(R"({"process": {"scheduler": {"policy": "SCHED_RR", "priority": 100}}})"),
                      Contains("process.scheduler.priority: must be between 1 and 99"));
  REQUIRE_THROWS_WITH(check(R"({"process": {"scheduler": {"policy": "SCHED_OTHER", "runtime": 5}}})"),
                      Contains("process.scheduler: runtime, deadline and period are only allowed for SCHED_DEADLINE"));
}

TEST_CASE("mounts", "[validate]") {
  CHECK_NOTHROW(check(R"({"mounts": [{"destination": "/foo..bar"}, {"destination": "/a/..b/c.."}]})"));
  // config.md: a relative destination is relative to "/"
  CHECK(husk::spec::parse(R"({"mounts": [{"destination": "rel/x"}]})").mounts[0].destination == "/rel/x");
  REQUIRE_THROWS_WITH(check(R"({"mounts": [{"destination": ""}]})"),
                      Contains("mounts[0].destination: must not be empty"));
  REQUIRE_THROWS_WITH(check(R"({"mounts": [{"destination": "/a"}, {"destination": "/a/../../etc"}]})"),
                      Contains("mounts[1].destination: must not contain \"..\""));
  REQUIRE_THROWS_WITH(check(R"({"mounts": [{"destination": "/a/.."}]})"),
                      Contains("mounts[0].destination: must not contain \"..\""));
  REQUIRE_THROWS_WITH(
      check(R"({"mounts": [{"destination": "/a", "uidMappings": [{"containerID": 0, "hostID": 1, "size": 1}]}]})"),
      Contains("mounts[0].uidMappings: given without gidMappings"));
  REQUIRE_THROWS_WITH(
      check(R"({"mounts": [{"destination": "/a", "gidMappings": [{"containerID": 0, "hostID": 1, "size": 1}]}]})"),
      Contains("mounts[0].gidMappings: given without uidMappings"));
  // Mappings make a mount idmapped without the option (spec::is_idmapped), so
  // the idmap rules apply to them too.
  const char* kMaps = R"("uidMappings": [{"containerID": 0, "hostID": 1, "size": 1}],
                         "gidMappings": [{"containerID": 0, "hostID": 1, "size": 1}])";
  CHECK_NOTHROW(check((std::string(R"({"mounts": [{"destination": "/a", "options": ["bind"], )") + kMaps + "}]}").c_str()));
  REQUIRE_THROWS_WITH(
      check((std::string(R"({"mounts": [{"destination": "/a", "type": "tmpfs", )") + kMaps + "}]}").c_str()),
      Contains("mounts[0].options: an idmapped mount must be a bind mount"));
  REQUIRE_THROWS_WITH(check(R"({"mounts": [{"destination": "/a", "options": ["bind", "idmap"]}]})"),
                      Contains("mounts[0].options: idmap needs uidMappings/gidMappings or a user namespace"));
  CHECK_NOTHROW(check(linux_patch(kUserns).c_str()));
  auto userns_idmap = nlohmann::json::parse(linux_patch(kUserns));
  userns_idmap["mounts"] = nlohmann::json::parse(R"([{"destination": "/a", "options": ["rbind", "ridmap"]}])");
  CHECK_NOTHROW(check(userns_idmap.dump().c_str()));
  REQUIRE_THROWS_WITH(check(R"({"linux": {"namespaces": [{"type": "pid"}, {"type": "uts"}]}})"),
                      Contains("mounts: requires a mount namespace"));
}

TEST_CASE("hooks", "[validate]") {
  CHECK_NOTHROW(check(R"({"hooks": {"prestart": [{"path": "/bin/true", "timeout": 1}]}})"));
  REQUIRE_THROWS_WITH(check(R"({"hooks": {"prestart": [{"path": "true"}]}})"),
                      Contains("hooks.prestart[0].path: must be an absolute path"));
  REQUIRE_THROWS_WITH(check(R"({"hooks": {"poststop": [{"path": "/a"}, {"path": ""}]}})"),
                      Contains("hooks.poststop[1].path: must be an absolute path"));
  REQUIRE_THROWS_WITH(check(R"({"hooks": {"createRuntime": [{"path": "/a", "timeout": 0}]}})"),
                      Contains("hooks.createRuntime[0].timeout: must be > 0"));
  REQUIRE_THROWS_WITH(check(R"({"hooks": {"startContainer": [{"path": "/a", "timeout": -3}]}})"),
                      Contains("hooks.startContainer[0].timeout: must be > 0"));
}

TEST_CASE("annotations keys", "[validate]") {
  REQUIRE_THROWS_WITH(check(R"({"annotations": {"": "x"}})"), Contains("annotations: keys must not be empty"));
}

TEST_CASE("linux.namespaces", "[validate]") {
  REQUIRE_THROWS_WITH(check(R"({"linux": {"namespaces": [{"type": "pid"}, {"type": "foo"}]}})"),
                      Contains("linux.namespaces[1].type: unknown namespace \"foo\""));
  REQUIRE_THROWS_WITH(check(R"({"linux": {"namespaces": [{"type": "mount"}, {"type": "uts"}, {"type": "mount"}]}})"),
                      Contains("linux.namespaces[2].type: duplicate namespace \"mount\""));
  REQUIRE_THROWS_WITH(
      check(R"({"linux": {"namespaces": [{"type": "mount"}, {"type": "uts"}, {"type": "pid", "path": "proc/1/ns/pid"}]}})"),
      Contains("linux.namespaces[2].path: must be an absolute path"));
}

TEST_CASE("user namespace and id mappings", "[validate]") {
  // Joining an existing user namespace needs no mappings.
  CHECK_NOTHROW(
      check(R"({"linux": {"namespaces": [{"type": "mount"}, {"type": "uts"}, {"type": "user", "path": "/proc/1/ns/user"}]}})"));
  REQUIRE_THROWS_WITH(check(R"({"linux": {"uidMappings": [{"containerID": 0, "hostID": 1000, "size": 1}]}})"),
                      Contains("linux.uidMappings: requires a user namespace"));
  REQUIRE_THROWS_WITH(check(R"({"linux": {"gidMappings": [{"containerID": 0, "hostID": 1000, "size": 1}]}})"),
                      Contains("linux.gidMappings: requires a user namespace"));
  REQUIRE_THROWS_WITH(check(R"({"linux": {"namespaces": [{"type": "mount"}, {"type": "uts"}, {"type": "user"}]}})"),
                      Contains("linux.uidMappings: required when creating a new user namespace"));
  auto patch = [](const char* uid, const char* gid) {
    return std::string(R"({"linux": {"namespaces": [{"type": "mount"}, {"type": "uts"}, {"type": "user"}], "uidMappings": )") +
           uid + ", \"gidMappings\": " + gid + "}}";
  };
  const char* ok = R"([{"containerID": 0, "hostID": 1000, "size": 1}])";
  REQUIRE_THROWS_WITH(check(patch(ok, "[]").c_str()),
                      Contains("linux.gidMappings: required when creating a new user namespace"));
  REQUIRE_THROWS_WITH(check(patch(R"([{"containerID": 0, "hostID": 1000, "size": 0}])", ok).c_str()),
                      Contains("linux.uidMappings[0].size: must be > 0"));
  REQUIRE_THROWS_WITH(
      check(patch(ok, R"([{"containerID": 0, "hostID": 1, "size": 10}, {"containerID": 5, "hostID": 100, "size": 1}])").c_str()),
      Contains("linux.gidMappings[1].containerID: range overlaps linux.gidMappings[0]"));
  REQUIRE_THROWS_WITH(
      check(patch(R"([{"containerID": 0, "hostID": 4294967295, "size": 2}])", ok).c_str()),
      Contains("linux.uidMappings[0]: hostID + size overflows uint32"));
}

TEST_CASE("hostname and domainname need a uts namespace", "[validate]") {
  REQUIRE_THROWS_WITH(check(R"({"linux": {"namespaces": [{"type": "mount"}]}})"),
                      Contains("hostname: requires a uts namespace"));
  REQUIRE_THROWS_WITH(check(R"({"hostname": null, "domainname": "d", "linux": {"namespaces": [{"type": "mount"}]}})"),
                      Contains("domainname: requires a uts namespace"));
  // A joined uts namespace (pods) is fine, as in runc.
  CHECK_NOTHROW(check(R"({"linux": {"namespaces": [{"type": "mount"}, {"type": "uts", "path": "/proc/1/ns/uts"}]}})"));
  CHECK_NOTHROW(check(R"({"hostname": null, "linux": {"namespaces": [{"type": "mount"}]}})"));
}

TEST_CASE("timeOffsets need a new time namespace", "[validate]") {
  const char* offsets = R"("timeOffsets": {"monotonic": {"secs": 10}})";
  REQUIRE_THROWS_WITH(check(linux_patch(offsets).c_str()), Contains("linux.timeOffsets: requires a time namespace"));
  CHECK_NOTHROW(check(linux_patch(std::string(offsets) +
                                  R"(, "namespaces": [{"type": "mount"}, {"type": "uts"}, {"type": "time"}])")
                          .c_str()));
  REQUIRE_THROWS_WITH(
      check(linux_patch(std::string(offsets) +
                        R"(, "namespaces": [{"type": "mount"}, {"type": "uts"}, {"type": "time", "path": "/proc/1/ns/time"}])")
                .c_str()),
      Contains("linux.timeOffsets: cannot be applied to an existing time namespace"));
  REQUIRE_THROWS_WITH(
      check(R"({"linux": {"timeOffsets": {"realtime": {"secs": 1}}, "namespaces": [{"type": "mount"}, {"type": "uts"}, {"type": "time"}]}})"),
      Contains("linux.timeOffsets[\"realtime\"]: unknown clock"));
}

TEST_CASE("linux.devices", "[validate]") {
  CHECK_NOTHROW(check(R"({"linux": {"devices": [{"type": "c", "path": "/dev/loop0", "major": 7},
                                                  {"type": "p", "path": "/dev/pipe"}]}})"));
  REQUIRE_THROWS_WITH(check(R"({"linux": {"devices": [{"type": "x", "path": "/dev/x", "major": 1, "minor": 1}]}})"),
                      Contains("linux.devices[0].type: must be one of c, b, u, p"));
  REQUIRE_THROWS_WITH(check(R"({"linux": {"devices": [{"type": "c", "path": "dev/null", "major": 1, "minor": 3}]}})"),
                      Contains("linux.devices[0].path: must be an absolute path"));
  REQUIRE_THROWS_WITH(check(R"({"linux": {"devices": [{"type": "b", "path": "/dev/sda"}]}})"),
                      Contains("linux.devices[0].major: required for type \"b\""));
  REQUIRE_THROWS_WITH(check(R"({"linux": {"devices": [{"type": "c", "path": "/dev/x", "major": 1, "minor": -1}]}})"),
                      Contains("linux.devices[0].minor"));
  REQUIRE_THROWS_WITH(check(R"({"linux": {"devices": [{"type": "c", "path": "/dev/x", "major": 4096}]}})"),
                      Contains("linux.devices[0].major: must be between 1 and 4095"));
}

TEST_CASE("linux.resources", "[validate]") {
  REQUIRE_THROWS_WITH(check(R"({"linux": {"resources": {"devices": [{"allow": true, "type": "x", "access": "r"}]}}})"),
                      Contains("linux.resources.devices[0].type: must be one of a, c, b"));
  REQUIRE_THROWS_WITH(check(R"({"linux": {"resources": {"devices": [{"allow": true, "access": "rwx"}]}}})"),
                      Contains("linux.resources.devices[0].access: must contain only r, w and m"));
  REQUIRE_THROWS_WITH(check(R"({"linux": {"resources": {"cpu": {"quota": 1000, "burst": 2000}}}})"),
                      Contains("linux.resources.cpu.burst: must not be larger than quota"));
  CHECK_NOTHROW(check(R"({"linux": {"resources": {"cpu": {"quota": -1, "burst": 2000}}}})"));
  REQUIRE_THROWS_WITH(check(R"({"linux": {"resources": {"blockIO": {"weightDevice": [{"major": 8, "minor": 0}]}}}})"),
                      Contains("linux.resources.blockIO.weightDevice[0]: needs weight or leafWeight"));
  REQUIRE_THROWS_WITH(check(R"({"linux": {"resources": {"rdma": {"mlx": {}}}}})"),
                      Contains("linux.resources.rdma[\"mlx\"]: needs hcaHandles or hcaObjects"));
  REQUIRE_THROWS_WITH(check(R"({"linux": {"resources": {"unified": {"../cgroup.procs": "1"}}}})"),
                      Contains("linux.resources.unified[\"../cgroup.procs\"]: must be a cgroup file name"));
  REQUIRE_THROWS_WITH(check(R"({"linux": {"resources": {"hugepageLimits": [{"limit": 1}]}}})"),
                      Contains("linux.resources.hugepageLimits[0].pageSize: required"));
  CHECK_NOTHROW(check(R"({"linux": {"resources": {"hugepageLimits": [{"pageSize": "2MB", "limit": 1},
                                                                      {"pageSize": "64KB", "limit": 1}]}}})"));
  for (const char* bad : {"64kB", "2M", "MB", "0MB", "2MB/../x", "1TB"}) {
    INFO(bad);
    REQUIRE_THROWS_WITH(
        check((std::string(R"({"linux": {"resources": {"hugepageLimits": [{"limit": 1, "pageSize": ")") + bad + "\"}]}}}").c_str()),
        Contains("linux.resources.hugepageLimits[0].pageSize: must be a size like"));
  }
  REQUIRE_THROWS_WITH(check(R"({"linux": {"cgroupsPath": "/a/../../../etc"}})"),
                      Contains("linux.cgroupsPath: must not contain \"..\""));
  CHECK_NOTHROW(check(R"({"linux": {"cgroupsPath": "system.slice:husk:abc"}})"));
}

TEST_CASE("linux.sysctl must stay inside the container's namespaces", "[validate]") {
  CHECK_NOTHROW(check(R"({"linux": {"sysctl": {"net.ipv4.ip_forward": "1", "kernel.shmmax": "1", "fs.mqueue.queues_max": "1",
                                                "kernel.domainname": "x", "net/ipv4/conf/eth0.100/forwarding": "1"}}})"));
  REQUIRE_THROWS_WITH(check(R"({"linux": {"sysctl": {"vm.swappiness": "10"}}})"),
                      Contains("linux.sysctl[\"vm.swappiness\"]: not namespaced"));
  REQUIRE_THROWS_WITH(check(R"({"linux": {"namespaces": [{"type": "mount"}, {"type": "uts"}], "sysctl": {"net.ipv4.ip_forward": "1"}}})"),
                      Contains("linux.sysctl[\"net.ipv4.ip_forward\"]: requires a network namespace"));
  REQUIRE_THROWS_WITH(check(R"({"linux": {"namespaces": [{"type": "mount"}, {"type": "uts"}], "sysctl": {"kernel/sem": "1"}}})"),
                      Contains("linux.sysctl[\"kernel/sem\"]: requires an ipc namespace"));
  REQUIRE_THROWS_WITH(check(R"({"linux": {"sysctl": {"kernel.hostname": "x"}}})"),
                      Contains("linux.sysctl[\"kernel.hostname\"]: \"x\" conflicts with the hostname field"));
  // The same value twice is no conflict (runc, crun).
  CHECK_NOTHROW(check(R"({"hostname": "h", "domainname": "d", "linux": {"sysctl": {"kernel.hostname": "h", "kernel.domainname": "d"}}})"));
  REQUIRE_THROWS_WITH(check(R"({"domainname": "d", "linux": {"sysctl": {"kernel.domainname": "e"}}})"),
                      Contains("linux.sysctl[\"kernel.domainname\"]: \"e\" conflicts with the domainname field \"d\""));
  REQUIRE_THROWS_WITH(check(R"({"linux": {"sysctl": {"net/../../../proc/sysrq-trigger": "b"}}})"),
                      Contains("invalid sysctl name"));
}

TEST_CASE("netDevices", "[validate]") {
  CHECK_NOTHROW(check(R"({"linux": {"netDevices": {"eth1": {"name": "c%d"}}}})"));
  REQUIRE_THROWS_WITH(check(R"({"linux": {"netDevices": {"eth1": {"name": "../x"}}}})"),
                      Contains("linux.netDevices[\"eth1\"].name: invalid network device name"));
  REQUIRE_THROWS_WITH(check(R"({"linux": {"netDevices": {"averyveryverylongname": {}}}})"),
                      Contains("linux.netDevices[\"averyveryverylongname\"]: invalid network device name"));
  REQUIRE_THROWS_WITH(check(R"({"linux": {"namespaces": [{"type": "mount"}, {"type": "uts"}], "netDevices": {"eth1": {}}}})"),
                      Contains("linux.netDevices: requires a network namespace"));
}

TEST_CASE("rootfsPropagation, personality, paths, labels", "[validate]") {
  for (const char* v : {"", "shared", "slave", "private", "unbindable", "rshared", "rslave", "rprivate", "runbindable"}) {
    CHECK_NOTHROW(check(linux_patch(std::string("\"rootfsPropagation\": \"") + v + "\"").c_str()));
  }
  REQUIRE_THROWS_WITH(check(R"({"linux": {"rootfsPropagation": "recursive"}})"),
                      Contains("linux.rootfsPropagation: unknown value \"recursive\""));
  CHECK_NOTHROW(check(R"({"linux": {"personality": {"domain": "LINUX"}}})"));
  REQUIRE_THROWS_WITH(check(R"({"linux": {"personality": {"domain": "SVR4"}}})"),
                      Contains("linux.personality.domain: unknown domain \"SVR4\""));
  REQUIRE_THROWS_WITH(check(R"({"linux": {"maskedPaths": ["/proc/kcore", "proc/keys"]}})"),
                      Contains("linux.maskedPaths[1]: must be an absolute path"));
  REQUIRE_THROWS_WITH(check(R"({"linux": {"readonlyPaths": ["sys"]}})"),
                      Contains("linux.readonlyPaths[0]: must be an absolute path"));
  REQUIRE_THROWS_WITH(check(R"({"mounts": null, "linux": {"namespaces": [{"type": "uts"}], "maskedPaths": ["/proc/kcore"]}})"),
                      Contains("linux.maskedPaths: requires a mount namespace"));
}

TEST_CASE("memoryPolicy, intelRdt, seccomp structure", "[validate]") {
  CHECK_NOTHROW(check(R"({"linux": {"memoryPolicy": {"mode": "MPOL_PREFERRED"}}})"));
  REQUIRE_THROWS_WITH(check(R"({"linux": {"memoryPolicy": {"mode": "MPOL_RANDOM"}}})"),
                      Contains("linux.memoryPolicy.mode: unknown mode \"MPOL_RANDOM\""));
  REQUIRE_THROWS_WITH(check(R"({"linux": {"memoryPolicy": {"mode": "MPOL_BIND"}}})"),
                      Contains("linux.memoryPolicy.nodes: required for MPOL_BIND"));
  REQUIRE_THROWS_WITH(check(R"({"linux": {"memoryPolicy": {"mode": "MPOL_LOCAL", "nodes": "0"}}})"),
                      Contains("linux.memoryPolicy.nodes: must be empty for MPOL_LOCAL"));
  REQUIRE_THROWS_WITH(check(R"({"linux": {"memoryPolicy": {"mode": "MPOL_BIND", "nodes": "0", "flags": ["MPOL_F_X"]}}})"),
                      Contains("linux.memoryPolicy.flags[0]: unknown flag \"MPOL_F_X\""));
  REQUIRE_THROWS_WITH(check(R"({"linux": {"intelRdt": {"closID": "../x"}}})"),
                      Contains("linux.intelRdt.closID: must be \"/\" or a directory name"));
  REQUIRE_THROWS_WITH(check(R"({"linux": {"intelRdt": {"memBwSchema": "L3:0=1"}}})"),
                      Contains("linux.intelRdt.memBwSchema: must start with \"MB:\""));
  REQUIRE_THROWS_WITH(check(R"({"linux": {"seccomp": {"defaultAction": "SCMP_ACT_ALLOW", "listenerMetadata": "m"}}})"),
                      Contains("linux.seccomp.listenerMetadata: must not be set without listenerPath"));
  REQUIRE_THROWS_WITH(check(R"({"linux": {"seccomp": {"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": [], "action": "SCMP_ACT_ERRNO"}]}}})"),
                      Contains("linux.seccomp.syscalls[0].names: must not be empty"));
  // Action and architecture names belong to seccomp/, not here.
  CHECK_NOTHROW(check(R"({"linux": {"seccomp": {"defaultAction": "SCMP_ACT_SOMETHING_NEW"}}})"));
}

TEST_CASE("less common rules", "[validate]") {
  // The whole st_mode, as podman writes it: 020666 (S_IFCHR | 0666), not 060666 (S_IFBLK).
  CHECK_NOTHROW(check(R"({"linux": {"devices": [{"type": "c", "path": "/dev/x", "major": 1, "fileMode": 8630}]}})"));
  REQUIRE_THROWS_WITH(check(R"({"linux": {"devices": [{"type": "c", "path": "/dev/x", "major": 1, "fileMode": 25014}]}})"),
                      Contains("linux.devices[0].fileMode: must be permission bits, optionally with the file type bits of type \"c\""));
  REQUIRE_THROWS_WITH(check(R"({"linux": {"devices": [{"type": "c", "path": "/dev/../etc/x", "major": 1}]}})"),
                      Contains("linux.devices[0].path: must not contain \"..\""));
  REQUIRE_THROWS_WITH(check(R"({"linux": {"personality": {"domain": "LINUX", "flags": ["ADDR_NO_RANDOMIZE"]}}})"),
                      Contains("linux.personality.flags[0]: unknown flag \"ADDR_NO_RANDOMIZE\""));
  REQUIRE_THROWS_WITH(check(R"({"linux": {"seccomp": {"syscalls": []}}})"),
                      Contains("linux.seccomp.defaultAction: required"));
  REQUIRE_THROWS_WITH(check(R"({"linux": {"intelRdt": {"schemata": ["L3:0=f", "MB:0=1\nL3:1=f"]}}})"),
                      Contains("linux.intelRdt.schemata[1]: must not contain newlines"));
  REQUIRE_THROWS_WITH(check(R"({"mounts": null, "linux": {"namespaces": [{"type": "uts"}], "readonlyPaths": ["/proc/sys"]}})"),
                      Contains("linux.readonlyPaths: requires a mount namespace"));
  REQUIRE_THROWS_WITH(check(R"({"linux": {"sysctl": {"user.max_user_namespaces": "0"}}})"),
                      Contains("linux.sysctl[\"user.max_user_namespaces\"]: requires a user namespace"));
  REQUIRE_THROWS_WITH(check(R"({"process": {"env": ["A=1"]}, "hooks": {"poststart": [{"path": "/h", "env": ["BAD"]}]}})"),
                      Contains("hooks.poststart[0].env[0]: must be of the form KEY=value"));
  REQUIRE_THROWS_WITH(
      check(R"({"linux": {"namespaces": [{"type": "mount"}, {"type": "uts"}, {"type": "user"}],
                          "uidMappings": [{"containerID": 4294967295, "hostID": 0, "size": 2}],
                          "gidMappings": [{"containerID": 0, "hostID": 0, "size": 1}]}})"),
      Contains("linux.uidMappings[0]: containerID + size overflows uint32"));

  nlohmann::json many = nlohmann::json::array();
  for (uint32_t i = 0; i < 341; ++i) many.push_back({{"containerID", i}, {"hostID", 1000 + i}, {"size", 1}});
  auto j = nlohmann::json::parse(kBase);
  j["linux"]["namespaces"].push_back({{"type", "user"}});
  j["linux"]["uidMappings"] = many;
  j["linux"]["gidMappings"] = many;
  REQUIRE_THROWS_WITH(validate(parse(j.dump()), true), Contains("linux.uidMappings: at most 340 mappings"));
  many.erase(many.end() - 1);
  j["linux"]["uidMappings"] = many;
  j["linux"]["gidMappings"] = many;
  CHECK_NOTHROW(validate(parse(j.dump()), true));
}

TEST_CASE("validate_resources checks a standalone resources object", "[validate]") {
  Resources r;
  r.devices.push_back({true, "c", 1, 3, "rwq"});
  REQUIRE_THROWS_WITH(validate_resources(r), "devices[0].access: must contain only r, w and m");
  r.devices.clear();
  r.unified["cgroup.procs"] = "1";
  CHECK_NOTHROW(validate_resources(r));
  r.unified["a/b"] = "1";
  REQUIRE_THROWS_WITH(validate_resources(r), "unified[\"a/b\"]: must be a cgroup file name");
}

TEST_CASE("is_idmapped: mappings or the idmap/ridmap option", "[validate]") {
  using husk::spec::is_idmapped;
  husk::spec::Mount m;
  m.options = {"rbind", "ro"};
  CHECK_FALSE(is_idmapped(m));
  m.options = {"rbind", "idmap"};
  CHECK(is_idmapped(m));
  m.options = {"ridmap"};
  CHECK(is_idmapped(m));
  // config.md: the options "SHOULD contain either idmap or ridmap" with
  // mappings; without them the mappings still apply (runc 1.2 does the same).
  m.options = {"bind"};
  m.uid_mappings = {{0, 1000, 1}};
  m.gid_mappings = {{0, 1000, 1}};
  CHECK(is_idmapped(m));
  m.uid_mappings.clear();
  CHECK(is_idmapped(m));  // half a mapping is still meant as one (validation rejects it)
  // Lookalikes are filesystem data, not the option.
  m = {};
  m.options = {"idmap=1", "xidmap"};
  CHECK_FALSE(is_idmapped(m));
}

TEST_CASE("process.user ids must be mapped in a user namespace made for the container", "[validate]") {
  auto config = [](const char* user) {
    auto j = nlohmann::json::parse(linux_patch(
        R"("namespaces": [{"type": "pid"}, {"type": "mount"}, {"type": "uts"}, {"type": "user"}],
           "uidMappings": [{"containerID": 0, "hostID": 1000, "size": 1}, {"containerID": 1, "hostID": 100000, "size": 999}],
           "gidMappings": [{"containerID": 0, "hostID": 1000, "size": 1}])"));
    j["process"] = {{"user", nlohmann::json::parse(user)}};
    return j.dump();
  };
  CHECK_NOTHROW(check(config(R"({"uid": 0, "gid": 0})").c_str()));
  CHECK_NOTHROW(check(config(R"({"uid": 999, "gid": 0})").c_str()));
  REQUIRE_THROWS_WITH(check(config(R"({"uid": 1000, "gid": 0})").c_str()),
                      Contains("process.user.uid: 1000 is not mapped in the container's user namespace (linux.uidMappings)"));
  REQUIRE_THROWS_WITH(check(config(R"({"uid": 0, "gid": 1000})").c_str()),
                      Contains("process.user.gid: 1000 is not mapped in the container's user namespace (linux.gidMappings)"));
  REQUIRE_THROWS_WITH(check(config(R"({"uid": 0, "gid": 0, "additionalGids": [0, 5]})").c_str()),
                      Contains("process.user.additionalGids[1]: 5 is not mapped"));
  // A joined user namespace's mappings are not in the config: nothing to check.
  auto joined = nlohmann::json::parse(
      R"({"linux": {"namespaces": [{"type": "mount"}, {"type": "uts"}, {"type": "user", "path": "/proc/1/ns/user"}]},
          "process": {"user": {"uid": 1000, "gid": 1000}}})");
  CHECK_NOTHROW(check(joined.dump().c_str()));
}
