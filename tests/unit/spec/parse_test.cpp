// spec::parse: every field of config.json reaches the model; JSON type
// errors and malformed JSON name where they are.
#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>

#include "spec/spec.h"

using namespace husk::spec;
using Catch::Contains;
using Catch::StartsWith;
using json = nlohmann::json;

namespace {

const char* kFull = R"json({
  "ociVersion": "1.2.0",
  "root": {"path": "rootfs", "readonly": true},
  "mounts": [
    {"destination": "/proc", "type": "proc", "source": "proc"},
    {"destination": "/data", "type": "none", "source": "/vol", "options": ["rbind", "ro", "idmap"],
     "uidMappings": [{"containerID": 0, "hostID": 100000, "size": 65536}],
     "gidMappings": [{"containerID": 0, "hostID": 200000, "size": 1000}]}
  ],
  "process": {
    "terminal": true,
    "consoleSize": {"height": 24, "width": 80},
    "user": {"uid": 1000, "gid": 1001, "umask": 18, "additionalGids": [5, 6], "username": "me"},
    "args": ["sh", "-c", "echo hi"],
    "env": ["PATH=/bin", "TERM=xterm"],
    "cwd": "/work",
    "capabilities": {
      "bounding": ["CAP_KILL", "CAP_CHOWN"],
      "effective": ["CAP_KILL"],
      "inheritable": ["CAP_NET_RAW"],
      "permitted": ["CAP_KILL", "CAP_SYS_ADMIN"],
      "ambient": ["CAP_CHECKPOINT_RESTORE"]
    },
    "rlimits": [{"type": "RLIMIT_NOFILE", "hard": 1024, "soft": 512},
                {"type": "RLIMIT_CORE", "hard": 18446744073709551615, "soft": 18446744073709551615}],
    "apparmorProfile": "husk-default",
    "noNewPrivileges": true,
    "oomScoreAdj": -500,
    "scheduler": {"policy": "SCHED_DEADLINE", "nice": 0, "priority": 0, "flags": ["SCHED_FLAG_RECLAIM"],
                  "runtime": 10000, "deadline": 20000, "period": 30000},
    "selinuxLabel": "system_u:system_r:container_t:s0",
    "ioPriority": {"class": "IOPRIO_CLASS_BE", "priority": 4},
    "execCPUAffinity": {"initial": "0-1", "final": "2-3"}
  },
  "hostname": "box",
  "domainname": "example.org",
  "hooks": {
    "prestart": [{"path": "/bin/pre", "args": ["pre", "x"], "env": ["A=1"], "timeout": 5}],
    "createRuntime": [{"path": "/bin/cr"}],
    "createContainer": [{"path": "/bin/cc"}],
    "startContainer": [{"path": "/bin/sc"}],
    "poststart": [{"path": "/bin/ps"}],
    "poststop": [{"path": "/bin/pst"}, {"path": "/bin/pst2"}]
  },
  "annotations": {"org.example.key": "value"},
  "linux": {
    "namespaces": [{"type": "pid"}, {"type": "network", "path": "/var/run/netns/a"}, {"type": "mount"},
                   {"type": "ipc"}, {"type": "uts"}, {"type": "user"}, {"type": "cgroup"}, {"type": "time"}],
    "uidMappings": [{"containerID": 0, "hostID": 1000, "size": 32000}],
    "gidMappings": [{"containerID": 0, "hostID": 2000, "size": 16000}],
    "timeOffsets": {"monotonic": {"secs": -86400, "nanosecs": 5}, "boottime": {"secs": 7}},
    "devices": [{"type": "c", "path": "/dev/fuse", "major": 10, "minor": 229, "fileMode": 438, "uid": 0, "gid": 0},
                {"type": "p", "path": "/dev/fifo"}],
    "netDevices": {"eth1": {"name": "ctr1"}, "eth2": {}},
    "cgroupsPath": "/myRuntime/myContainer",
    "resources": {
      "devices": [{"allow": false, "access": "rwm"}, {"allow": true, "type": "c", "major": 10, "minor": 229, "access": "rw"}],
      "memory": {"limit": -1, "reservation": 1048576, "swap": 2097152, "kernel": -1, "kernelTCP": 4096,
                 "swappiness": 60, "disableOOMKiller": true, "useHierarchy": false, "checkBeforeUpdate": true},
      "cpu": {"shares": 1024, "quota": 100000, "burst": 5000, "period": 100000, "realtimeRuntime": 950000,
              "realtimePeriod": 1000000, "cpus": "0-3", "mems": "0", "idle": 1},
      "pids": {"limit": 32771},
      "blockIO": {"weight": 500, "leafWeight": 300,
                  "weightDevice": [{"major": 8, "minor": 0, "weight": 600, "leafWeight": 200}],
                  "throttleReadBpsDevice": [{"major": 8, "minor": 0, "rate": 600}],
                  "throttleWriteBpsDevice": [{"major": 8, "minor": 16, "rate": 700}],
                  "throttleReadIOPSDevice": [{"major": 8, "minor": 32, "rate": 800}],
                  "throttleWriteIOPSDevice": [{"major": 8, "minor": 48, "rate": 900}]},
      "hugepageLimits": [{"pageSize": "2MB", "limit": 209715200}],
      "network": {"classID": 1048577, "priorities": [{"name": "eth0", "priority": 500}]},
      "rdma": {"mlx5_1": {"hcaHandles": 3, "hcaObjects": 10000}},
      "unified": {"memory.high": "max", "io.weight": "default 100"}
    },
    "intelRdt": {"closID": "guaranteed", "l3CacheSchema": "L3:0=7f0", "memBwSchema": "MB:0=20",
                 "schemata": ["L2:0=ff"], "enableMonitoring": true},
    "sysctl": {"net.ipv4.ip_forward": "1", "kernel.shmmax": "4096"},
    "seccomp": {"defaultAction": "SCMP_ACT_ERRNO", "defaultErrnoRet": 38,
                "architectures": ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86"], "flags": ["SECCOMP_FILTER_FLAG_LOG"],
                "listenerPath": "/run/agent.sock", "listenerMetadata": "meta",
                "syscalls": [{"names": ["getcwd", "chmod"], "action": "SCMP_ACT_ALLOW", "errnoRet": 1,
                              "args": [{"index": 1, "value": 18446744073709551615, "valueTwo": 2, "op": "SCMP_CMP_MASKED_EQ"}]}]},
    "rootfsPropagation": "rslave",
    "maskedPaths": ["/proc/kcore"],
    "readonlyPaths": ["/proc/sys"],
    "mountLabel": "system_u:object_r:svirt_sandbox_file_t:s0:c715,c811",
    "personality": {"domain": "LINUX32"},
    "memoryPolicy": {"mode": "MPOL_INTERLEAVE", "nodes": "2-3", "flags": ["MPOL_F_STATIC_NODES"]}
  }
})json";

}  // namespace

TEST_CASE("parse maps every top-level and process field", "[parse]") {
  Spec s = parse(kFull);
  CHECK(s.oci_version == "1.2.0");
  REQUIRE(s.root);
  CHECK(s.root->path == "rootfs");
  CHECK(s.root->readonly);
  CHECK(s.hostname == "box");
  CHECK(s.domainname == "example.org");
  CHECK(s.annotations == std::map<std::string, std::string>{{"org.example.key", "value"}});

  REQUIRE(s.mounts.size() == 2);
  CHECK(s.mounts[0].destination == "/proc");
  CHECK(s.mounts[0].type == "proc");
  CHECK(s.mounts[0].source == "proc");
  CHECK(s.mounts[0].options.empty());
  CHECK(s.mounts[1].options == std::vector<std::string>{"rbind", "ro", "idmap"});
  REQUIRE(s.mounts[1].uid_mappings.size() == 1);
  CHECK(s.mounts[1].uid_mappings[0].host_id == 100000);
  CHECK(s.mounts[1].uid_mappings[0].size == 65536);
  REQUIRE(s.mounts[1].gid_mappings.size() == 1);
  CHECK(s.mounts[1].gid_mappings[0].host_id == 200000);

  REQUIRE(s.process);
  const Process& p = *s.process;
  CHECK(p.terminal);
  REQUIRE(p.console_size);
  CHECK(p.console_size->height == 24);
  CHECK(p.console_size->width == 80);
  CHECK(p.user.uid == 1000);
  CHECK(p.user.gid == 1001);
  CHECK(p.user.umask == 18u);
  CHECK(p.user.additional_gids == std::vector<uint32_t>{5, 6});
  CHECK(p.user.username == "me");
  CHECK(p.args == std::vector<std::string>{"sh", "-c", "echo hi"});
  CHECK(p.env == std::vector<std::string>{"PATH=/bin", "TERM=xterm"});
  CHECK(p.cwd == "/work");
  REQUIRE(p.capabilities);
  CHECK(p.capabilities->bounding == std::vector<std::string>{"CAP_KILL", "CAP_CHOWN"});
  CHECK(p.capabilities->effective == std::vector<std::string>{"CAP_KILL"});
  CHECK(p.capabilities->inheritable == std::vector<std::string>{"CAP_NET_RAW"});
  CHECK(p.capabilities->permitted == std::vector<std::string>{"CAP_KILL", "CAP_SYS_ADMIN"});
  CHECK(p.capabilities->ambient == std::vector<std::string>{"CAP_CHECKPOINT_RESTORE"});
  REQUIRE(p.rlimits.size() == 2);
  CHECK(p.rlimits[0].type == "RLIMIT_NOFILE");
  CHECK(p.rlimits[0].soft == 512);
  CHECK(p.rlimits[0].hard == 1024);
  CHECK(p.apparmor_profile == "husk-default");
  CHECK(p.no_new_privileges);
  CHECK(p.oom_score_adj == -500);
  REQUIRE(p.scheduler);
  CHECK(p.scheduler->policy == "SCHED_DEADLINE");
  CHECK(p.scheduler->flags == std::vector<std::string>{"SCHED_FLAG_RECLAIM"});
  CHECK(p.scheduler->runtime == 10000);
  CHECK(p.scheduler->deadline == 20000);
  CHECK(p.scheduler->period == 30000);
  CHECK(p.selinux_label == "system_u:system_r:container_t:s0");
  REQUIRE(p.io_priority);
  CHECK(p.io_priority->klass == "IOPRIO_CLASS_BE");
  CHECK(p.io_priority->priority == 4);
  REQUIRE(p.exec_cpu_affinity);
  CHECK(p.exec_cpu_affinity->initial == "0-1");
  CHECK(p.exec_cpu_affinity->final == "2-3");

  REQUIRE(s.hooks.prestart.size() == 1);
  CHECK(s.hooks.prestart[0].path == "/bin/pre");
  CHECK(s.hooks.prestart[0].args == std::vector<std::string>{"pre", "x"});
  CHECK(s.hooks.prestart[0].env == std::vector<std::string>{"A=1"});
  CHECK(s.hooks.prestart[0].timeout == 5);
  CHECK(s.hooks.create_runtime.at(0).path == "/bin/cr");
  CHECK_FALSE(s.hooks.create_runtime.at(0).timeout);
  CHECK(s.hooks.create_container.at(0).path == "/bin/cc");
  CHECK(s.hooks.start_container.at(0).path == "/bin/sc");
  CHECK(s.hooks.poststart.at(0).path == "/bin/ps");
  CHECK(s.hooks.poststop.size() == 2);

  CHECK_NOTHROW(validate(s, true));
}

TEST_CASE("parse maps linux namespaces, id mappings, devices and cgroupsPath", "[parse]") {
  Spec s = parse(kFull);
  REQUIRE(s.linux_);
  const Linux& l = *s.linux_;
  REQUIRE(l.namespaces.size() == 8);
  CHECK(l.namespaces[1].type == "network");
  CHECK(l.namespaces[1].path == "/var/run/netns/a");
  CHECK(l.has_namespace("time"));
  REQUIRE(l.find_namespace("network"));
  CHECK(l.find_namespace("network")->path == "/var/run/netns/a");
  CHECK(l.uid_mappings.at(0).container_id == 0);
  CHECK(l.uid_mappings.at(0).host_id == 1000);
  CHECK(l.uid_mappings.at(0).size == 32000);
  CHECK(l.gid_mappings.at(0).host_id == 2000);
  CHECK(l.time_offsets.at("monotonic").secs == -86400);
  CHECK(l.time_offsets.at("monotonic").nanosecs == 5);
  CHECK(l.time_offsets.at("boottime").secs == 7);
  REQUIRE(l.devices.size() == 2);
  CHECK(l.devices[0].type == "c");
  CHECK(l.devices[0].path == "/dev/fuse");
  CHECK(l.devices[0].major == 10);
  CHECK(l.devices[0].minor == 229);
  CHECK(l.devices[0].file_mode == 438u);
  CHECK(l.devices[0].uid == 0u);
  CHECK(l.devices[0].gid == 0u);
  CHECK_FALSE(l.devices[1].file_mode);
  CHECK(l.net_devices.at("eth1").name == "ctr1");
  CHECK(l.net_devices.at("eth2").name.empty());
  CHECK(l.cgroups_path == "/myRuntime/myContainer");
}

TEST_CASE("parse maps every linux.resources field", "[parse]") {
  Spec s = parse(kFull);
  REQUIRE(s.linux_);
  const Linux& l = *s.linux_;
  REQUIRE(l.resources);
  const Resources& r = *l.resources;
  REQUIRE(r.devices.size() == 2);
  CHECK_FALSE(r.devices[0].allow);
  CHECK(r.devices[0].access == "rwm");
  CHECK_FALSE(r.devices[0].major);
  CHECK(r.devices[1].allow);
  CHECK(r.devices[1].type == "c");
  CHECK(r.devices[1].major == 10);
  CHECK(r.devices[1].minor == 229);
  REQUIRE(r.memory);
  CHECK(r.memory->limit == -1);
  CHECK(r.memory->reservation == 1048576);
  CHECK(r.memory->swap == 2097152);
  CHECK(r.memory->kernel == -1);
  CHECK(r.memory->kernel_tcp == 4096);
  CHECK(r.memory->swappiness == 60u);
  CHECK(r.memory->disable_oom_killer == true);
  CHECK(r.memory->use_hierarchy == false);
  CHECK(r.memory->check_before_update == true);
  REQUIRE(r.cpu);
  CHECK(r.cpu->shares == 1024u);
  CHECK(r.cpu->quota == 100000);
  CHECK(r.cpu->burst == 5000u);
  CHECK(r.cpu->period == 100000u);
  CHECK(r.cpu->realtime_runtime == 950000);
  CHECK(r.cpu->realtime_period == 1000000u);
  CHECK(r.cpu->cpus == "0-3");
  CHECK(r.cpu->mems == "0");
  CHECK(r.cpu->idle == 1);
  CHECK(r.pids_limit == 32771);
  REQUIRE(r.block_io);
  CHECK(r.block_io->weight == 500);
  CHECK(r.block_io->leaf_weight == 300);
  REQUIRE(r.block_io->weight_device.size() == 1);
  CHECK(r.block_io->weight_device[0].major == 8);
  CHECK(r.block_io->weight_device[0].weight == 600);
  CHECK(r.block_io->weight_device[0].leaf_weight == 200);
  CHECK(r.block_io->throttle_read_bps.at(0).rate == 600);
  CHECK(r.block_io->throttle_write_bps.at(0).minor == 16);
  CHECK(r.block_io->throttle_write_bps.at(0).rate == 700);
  CHECK(r.block_io->throttle_read_iops.at(0).rate == 800);
  CHECK(r.block_io->throttle_write_iops.at(0).rate == 900);
  REQUIRE(r.hugepage_limits.size() == 1);
  CHECK(r.hugepage_limits[0].page_size == "2MB");
  CHECK(r.hugepage_limits[0].limit == 209715200);
  REQUIRE(r.network);
  CHECK(r.network->class_id == 1048577u);
  CHECK(r.network->priorities.at(0).name == "eth0");
  CHECK(r.network->priorities.at(0).priority == 500);
  CHECK(r.rdma.at("mlx5_1").hca_handles == 3u);
  CHECK(r.rdma.at("mlx5_1").hca_objects == 10000u);
  CHECK(r.unified.at("memory.high") == "max");
  CHECK(r.unified.at("io.weight") == "default 100");
}

TEST_CASE("parse maps linux.intelRdt, sysctl, seccomp, personality and memoryPolicy", "[parse]") {
  Spec s = parse(kFull);
  REQUIRE(s.linux_);
  const Linux& l = *s.linux_;
  REQUIRE(l.intel_rdt);
  CHECK(l.intel_rdt->clos_id == "guaranteed");
  CHECK(l.intel_rdt->l3_cache_schema == "L3:0=7f0");
  CHECK(l.intel_rdt->mem_bw_schema == "MB:0=20");
  CHECK(l.intel_rdt->schemata == std::vector<std::string>{"L2:0=ff"});
  CHECK(l.intel_rdt->enable_monitoring);
  CHECK(l.sysctl.at("net.ipv4.ip_forward") == "1");

  REQUIRE(l.seccomp);
  const Seccomp& sc = *l.seccomp;
  CHECK(sc.default_action == "SCMP_ACT_ERRNO");
  CHECK(sc.default_errno_ret == 38u);
  CHECK(sc.architectures == std::vector<std::string>{"SCMP_ARCH_X86_64", "SCMP_ARCH_X86"});
  CHECK(sc.flags == std::vector<std::string>{"SECCOMP_FILTER_FLAG_LOG"});
  CHECK(sc.listener_path == "/run/agent.sock");
  CHECK(sc.listener_metadata == "meta");
  REQUIRE(sc.syscalls.size() == 1);
  CHECK(sc.syscalls[0].names == std::vector<std::string>{"getcwd", "chmod"});
  CHECK(sc.syscalls[0].action == "SCMP_ACT_ALLOW");
  CHECK(sc.syscalls[0].errno_ret == 1u);
  REQUIRE(sc.syscalls[0].args.size() == 1);
  CHECK(sc.syscalls[0].args[0].index == 1);
  CHECK(sc.syscalls[0].args[0].value == UINT64_MAX);
  CHECK(sc.syscalls[0].args[0].value_two == 2);
  CHECK(sc.syscalls[0].args[0].op == "SCMP_CMP_MASKED_EQ");

  CHECK(l.rootfs_propagation == "rslave");
  CHECK(l.masked_paths == std::vector<std::string>{"/proc/kcore"});
  CHECK(l.readonly_paths == std::vector<std::string>{"/proc/sys"});
  CHECK(l.mount_label == "system_u:object_r:svirt_sandbox_file_t:s0:c715,c811");
  REQUIRE(l.personality);
  CHECK(l.personality->domain == "LINUX32");
  REQUIRE(l.memory_policy);
  CHECK(l.memory_policy->mode == "MPOL_INTERLEAVE");
  CHECK(l.memory_policy->nodes == "2-3");
  CHECK(l.memory_policy->flags == std::vector<std::string>{"MPOL_F_STATIC_NODES"});
}

TEST_CASE("rlimits at the uint64 maximum keep their value", "[parse]") {
  Spec s = parse(kFull);
  const auto& rl = s.process->rlimits.at(1);
  CHECK(rl.type == "RLIMIT_CORE");
  CHECK(rl.soft == 18446744073709551615ull);
  CHECK(rl.hard == 18446744073709551615ull);
}

TEST_CASE("absent optional sections stay absent; null counts as absent", "[parse]") {
  Spec s = parse(R"({"ociVersion": "1.0.0", "process": null, "mounts": null, "annotations": null,
                     "linux": {"resources": null, "namespaces": null, "seccomp": null}})");
  CHECK_FALSE(s.root);
  CHECK_FALSE(s.process);
  CHECK(s.mounts.empty());
  REQUIRE(s.linux_);
  CHECK_FALSE(s.linux_->resources);
  CHECK_FALSE(s.linux_->seccomp);
  CHECK_FALSE(s.linux_->cgroups_path);
  CHECK(s.linux_->namespaces.empty());
}

TEST_CASE("unknown properties are ignored at every level", "[parse]") {
  Spec s = parse(R"({"ociVersion": "1.0.0", "vendorThing": {"x": [1, 2]},
                     "process": {"args": ["sh"], "cwd": "/", "commandLine": "sh", "futureField": true,
                                 "user": {"uid": 1, "gid": 2, "sid": "S-1"}},
                     "windows": {"layerFolders": []},
                     "linux": {"namespaces": [{"type": "pid", "extra": 1}], "newKnob": 3}})");
  REQUIRE(s.process);
  CHECK(s.process->args == std::vector<std::string>{"sh"});
  CHECK(s.process->user.uid == 1);
  CHECK(s.linux_->namespaces.at(0).type == "pid");
}

TEST_CASE("wrong JSON types name the field and the expected type", "[parse]") {
  REQUIRE_THROWS_WITH(parse(R"({"process": {"args": ["sh", 5]}})"),
                      Contains("process.args[1]: expected string"));
  REQUIRE_THROWS_WITH(parse(R"({"process": {"terminal": "yes"}})"),
                      Contains("process.terminal: expected boolean"));
  REQUIRE_THROWS_WITH(parse(R"({"process": []})"), Contains("process: expected object"));
  REQUIRE_THROWS_WITH(parse(R"({"mounts": {}})"), Contains("mounts: expected array"));
  REQUIRE_THROWS_WITH(parse(R"({"mounts": [{"destination": "/a", "options": "ro"}]})"),
                      Contains("mounts[0].options: expected array"));
  REQUIRE_THROWS_WITH(parse(R"({"annotations": {"a": 1}})"), Contains("annotations[\"a\"]: expected string"));
  REQUIRE_THROWS_WITH(parse(R"({"linux": {"sysctl": {"net.ipv4.ip_forward": 1}}})"),
                      Contains("linux.sysctl[\"net.ipv4.ip_forward\"]: expected string"));
  REQUIRE_THROWS_WITH(parse(R"({"linux": {"resources": {"memory": {"limit": "1G"}}}})"),
                      Contains("linux.resources.memory.limit: expected int64"));
  REQUIRE_THROWS_WITH(parse("[1]"), Contains("expected a JSON object"));
}

TEST_CASE("integers are range-checked against the field's type", "[parse]") {
  REQUIRE_THROWS_WITH(parse(R"({"process": {"user": {"uid": -1}}})"),
                      Contains("process.user.uid: expected uint32 (got -1)"));
  REQUIRE_THROWS_WITH(parse(R"({"process": {"user": {"uid": 4294967296}}})"),
                      Contains("process.user.uid: expected uint32 (got 4294967296)"));
  REQUIRE_THROWS_WITH(parse(R"({"process": {"rlimits": [{"type": "RLIMIT_CORE", "soft": -1, "hard": 0}]}})"),
                      Contains("process.rlimits[0].soft: expected uint64"));
  REQUIRE_THROWS_WITH(parse(R"({"process": {"oomScoreAdj": 1.5}})"),
                      Contains("process.oomScoreAdj: expected int32"));
  REQUIRE_THROWS_WITH(parse(R"({"linux": {"resources": {"blockIO": {"weight": 70000}}}})"),
                      Contains("linux.resources.blockIO.weight: expected uint16"));
  REQUIRE_THROWS_WITH(parse(R"({"linux": {"resources": {"memory": {"limit": 9223372036854775808}}}})"),
                      Contains("linux.resources.memory.limit: expected int64"));
  Spec s = parse(R"({"linux": {"resources": {"memory": {"limit": -9223372036854775808}}}})");
  CHECK(s.linux_->resources->memory->limit == INT64_MIN);
}

// Every property of kFull, at every depth, given a value of another JSON
// type, a fraction or a number no integer field holds: parse throws
// husk::Error (never nlohmann's exception) that starts with that property's path.
TEST_CASE("a wrong type or an out-of-range number anywhere names its field", "[parse]") {
  const json full = json::parse(kFull);
  // Objects whose keys are names, not properties: their paths quote the key.
  const std::set<std::string> maps = {"annotations", "sysctl", "unified", "rdma", "timeOffsets", "netDevices"};
  size_t checked = 0;
  std::function<void(const json&, const json::json_pointer&, const std::string&)> walk =
      [&](const json& node, const json::json_pointer& at, const std::string& path) {
        std::vector<json> bad = {node.is_string() ? json(5) : json("x")};
        if (node.is_number()) {
          bad.push_back(1.5);
          bad.push_back(json::parse("1e300"));
          bad.push_back(json::parse("18446744073709551616"));  // beyond uint64: nlohmann makes it a double
        }
        for (const json& b : bad) {
          json doc = full;
          doc[at] = b;
          INFO(path << " = " << b.dump());
          REQUIRE_THROWS_AS(parse(doc.dump()), husk::Error);
          CHECK_THROWS_WITH(parse(doc.dump()), StartsWith(path + ": expected "));
          ++checked;
        }
        bool is_map = maps.count(at.empty() ? "" : at.back()) > 0;
        if (node.is_object()) {
          for (const auto& [k, v] : node.items())
            walk(v, at / k, is_map ? path + "[" + json(k).dump() + "]" : path + "." + k);
        } else if (node.is_array()) {
          for (size_t i = 0; i < node.size(); ++i) walk(node[i], at / i, path + "[" + std::to_string(i) + "]");
        }
      };
  for (const auto& [k, v] : full.items()) walk(v, json::json_pointer("/" + k), k);
  CHECK(checked > 400);
}

TEST_CASE("required numbers the model cannot show as absent", "[parse]") {
  REQUIRE_THROWS_WITH(parse(R"({"process": {"rlimits": [{"type": "RLIMIT_CORE", "soft": 1}]}})"),
                      Contains("process.rlimits[0].hard: required"));
  REQUIRE_THROWS_WITH(parse(R"({"linux": {"uidMappings": [{"containerID": 0, "hostID": 1}]}})"),
                      Contains("linux.uidMappings[0].size: required"));
}

TEST_CASE("malformed JSON reports line and column", "[parse]") {
  REQUIRE_THROWS_WITH(parse("{\n  \"ociVersion\": \"1.0.0\",\n  \"root\" {}\n}"), Contains("line 3, column "));
  REQUIRE_THROWS_WITH(parse("{\n  \"ociVersion\": \"1.0.0\",\n  \"root\" {}\n}"), Contains("line 3, column 10: "));
  REQUIRE_THROWS_WITH(parse("{\"a\": tru}"), Contains("line 1, column "));
  REQUIRE_THROWS_WITH(parse(""), Contains("line 1, column 1: "));
  REQUIRE_THROWS_WITH(parse("{\"a\": 1} x"), Contains("line 1, column 10: "));
  // A number no double holds is an Error too, not nlohmann's exception (found by fuzz-config).
  REQUIRE_THROWS_AS(parse("{\"hostname\": 1e999}"), husk::Error);
  REQUIRE_THROWS_WITH(parse_resources("{\"cpu\": {\"period\": -1e999}}"), Contains("number overflow"));
}

TEST_CASE("parse_resources reads an update --resources object", "[parse]") {
  Resources r = parse_resources(R"({"memory": {"limit": 1073741824, "swap": -1}, "cpu": {"shares": 512},
                                    "pids": {"limit": -1}, "unified": {"pids.max": "10"}, "whatever": 1})");
  REQUIRE(r.memory);
  CHECK(r.memory->limit == 1073741824);
  CHECK(r.memory->swap == -1);
  CHECK(r.cpu->shares == 512u);
  CHECK(r.pids_limit == -1);
  CHECK(r.unified.at("pids.max") == "10");
  REQUIRE_THROWS_WITH(parse_resources(R"({"memory": {"limit": true}})"), Contains("memory.limit: expected int64"));
  REQUIRE_THROWS_WITH(parse_resources(R"({"unified": {"../../etc/passwd": "x"}})"),
                      Contains("unified[\"../../etc/passwd\"]: must be a cgroup file name"));
  REQUIRE_THROWS_WITH(parse_resources("{\"memory\": }"), Contains("line 1, column "));
}

TEST_CASE("from_json reads a config built in husk as parse reads its text", "[parse]") {
  const Spec s = from_json(nlohmann::ordered_json::parse(kFull));
  CHECK(s.oci_version == "1.2.0");
  CHECK(s.mounts.at(1).options == std::vector<std::string>{"rbind", "ro", "idmap"});
  CHECK(s.process->user.uid == 1000u);
  CHECK(s.process->oom_score_adj == -500);
  CHECK(s.process->rlimits.at(1).hard == UINT64_MAX);
  CHECK(s.linux_->resources->memory->limit == -1);
  CHECK(s.linux_->time_offsets.at("monotonic").secs == -86400);
  // Every field's wrong type is the same error either way.
  const json full = json::parse(kFull);
  int checked = 0;
  std::function<void(const json&, const json::json_pointer&)> walk = [&](const json& node,
                                                                        const json::json_pointer& at) {
    if (node.is_object()) {
      for (const auto& [k, v] : node.items()) walk(v, at / k);
    } else if (node.is_array()) {
      for (size_t i = 0; i < node.size(); ++i) walk(node[i], at / i);
    } else {
      json bad = full;
      bad[at] = node.is_string() ? json(7) : json("x");
      std::string by_text, built;
      try {
        parse(bad.dump());
      } catch (const husk::Error& e) {
        by_text = e.what();
      }
      try {
        from_json(nlohmann::ordered_json::parse(bad.dump()));
      } catch (const husk::Error& e) {
        built = e.what();
      }
      CHECK(built == by_text);
      ++checked;
    }
  };
  walk(full, json::json_pointer());
  CHECK(checked > 150);
  // Built from C++ ints: a non-negative one is read as its text would be.
  nlohmann::ordered_json made = {{"process", {{"user", {{"uid", 1000}, {"gid", int64_t{0}}}}}}};
  CHECK(from_json(made).process->user.uid == 1000u);
  made["process"]["user"]["uid"] = -1;
  REQUIRE_THROWS_WITH(from_json(made), Contains("process.user.uid: expected uint32 (got -1)"));
  REQUIRE_THROWS_WITH(parse(made.dump()), Contains("process.user.uid: expected uint32 (got -1)"));
  // A float JSON cannot write is null in its text: absent.
  const nlohmann::ordered_json nan = {{"process", {{"oomScoreAdj", std::nan("")}}}};
  CHECK(!parse(nan.dump()).process->oom_score_adj);
  CHECK(!from_json(nan).process->oom_score_adj);
}
