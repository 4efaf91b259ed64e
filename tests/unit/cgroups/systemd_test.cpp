// The systemd driver, pure: cgroupsPath "slice:prefix:name" -> scope and
// slice, and linux.resources -> unit properties that say what the files say.
#include <catch2/catch.hpp>

#include <algorithm>

#include "cgroups/systemd.h"

using husk::Error;
namespace cg = husk::cgroups;
using Prop = cg::UnitProperty;

namespace {

const Prop* find(const std::vector<Prop>& props, const std::string& name) {
  for (const auto& p : props)
    if (p.name == name) return &p;
  return nullptr;
}

uint64_t u64(const std::vector<Prop>& props, const std::string& name) {
  const Prop* p = find(props, name);
  REQUIRE(p);
  REQUIRE(std::holds_alternative<uint64_t>(p->value));
  return std::get<uint64_t>(p->value);
}

// Weight 500, 8:0 weighted 200 and read-limited to 1 MiB/s.
husk::spec::Resources blkio_resources() {
  husk::spec::Resources r;
  r.block_io = husk::spec::BlockIo{};
  r.block_io->weight = 500;
  r.block_io->weight_device.push_back({8, 0, 200, std::nullopt});
  husk::spec::ThrottleDevice t;
  t.major = 8;
  t.minor = 0;
  t.rate = 1048576;
  r.block_io->throttle_read_bps.push_back(t);
  return r;
}

}  // namespace

TEST_CASE("a kubelet cgroupsPath is a scope in its nested slice") {
  auto u = cg::systemd_unit("kubepods-burstable-pod1234.slice:cri-containerd:abc", "abc", false);
  CHECK(u.slice == "kubepods-burstable-pod1234.slice");
  CHECK(u.unit == "cri-containerd-abc.scope");
  CHECK(u.cgroup ==
        "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1234.slice/cri-containerd-abc.scope");
}

TEST_CASE("an empty or absent cgroupsPath, or an empty slice part, takes the manager's default slice") {
  CHECK(cg::systemd_unit(std::nullopt, "c1", false).cgroup == "/system.slice/husk-c1.scope");
  CHECK(cg::systemd_unit(std::string(), "c1", false).unit == "husk-c1.scope");
  CHECK(cg::systemd_unit(":pfx:n", "c1", false).cgroup == "/system.slice/pfx-n.scope");
  CHECK(cg::systemd_unit(std::nullopt, "c1", true).cgroup == "/user.slice/husk-c1.scope");
  CHECK(cg::systemd_unit("-.slice:p:n", "c1", false).cgroup == "/p-n.scope");
}

TEST_CASE("a cgroupsPath not of the slice:prefix:name form is refused naming it") {
  for (const char* bad : {"foo", "a:b", "/husk/x", "a:b:c:d", "system.slice::n", "system.slice:p:",
                          "a--b.slice:p:n", "-a.slice:p:n", "a-.slice:p:n", "foo:p:n",
                          "system.slice:p:pod.slice", "system.slice:p/q:n", "system.slice:p:n m", ".slice:p:n"}) {
    INFO(bad);
    CHECK_THROWS_WITH(cg::systemd_unit(std::string(bad), "c1", false), Catch::StartsWith("linux.cgroupsPath: "));
  }
}

TEST_CASE("slices nest by their dash-separated prefixes") {
  CHECK(cg::expand_slice("a.slice", "f") == "/a.slice");
  CHECK(cg::expand_slice("a-b-c.slice", "f") == "/a.slice/a-b.slice/a-b-c.slice");
  CHECK(cg::expand_slice("-.slice", "f").empty());
  CHECK_THROWS_WITH(cg::expand_slice("a-b", "f"), Catch::Contains("must end in .slice"));
}

TEST_CASE("memory, pids and cpu limits become the properties systemd writes the same files from") {
  husk::spec::Resources r;
  r.memory = husk::spec::Memory{};
  r.memory->limit = 33554432;
  r.memory->reservation = 16777216;
  r.memory->swap = 67108864;
  r.pids_limit = 20;
  r.cpu = husk::spec::Cpu{};
  r.cpu->shares = 1024;
  r.cpu->quota = 50000;
  r.cpu->period = 100000;
  r.cpu->cpus = "0-1,3";
  auto props = cg::resource_properties(cg::systemd_resources(r));
  CHECK(u64(props, "MemoryMax") == 33554432);
  CHECK(u64(props, "MemoryLow") == 16777216);
  CHECK(u64(props, "MemorySwapMax") == 67108864 - 33554432);
  CHECK(u64(props, "TasksMax") == 20);
  CHECK(u64(props, "CPUWeight") == cg::shares_to_weight(1024));
  CHECK(u64(props, "CPUQuotaPerSecUSec") == 500000);
  CHECK(u64(props, "CPUQuotaPeriodUSec") == 100000);
  REQUIRE(find(props, "AllowedCPUs"));
  CHECK(std::get<std::vector<uint8_t>>(find(props, "AllowedCPUs")->value) == std::vector<uint8_t>{0x0b});
  CHECK(std::string(find(props, "AllowedCPUs")->signature()) == "ay");
}

TEST_CASE("unlimited values are systemd's infinity; pids 0 is TasksMax 1 (systemd refuses 0)") {
  husk::spec::Resources r;
  r.memory = husk::spec::Memory{};
  r.memory->limit = -1;
  r.pids_limit = -1;
  auto props = cg::resource_properties(r);
  CHECK(u64(props, "MemoryMax") == UINT64_MAX);
  CHECK(u64(props, "TasksMax") == UINT64_MAX);
  r.pids_limit = 0;
  CHECK(u64(cg::resource_properties(r), "TasksMax") == 1);
}

TEST_CASE("a CPU quota is rounded up to systemd's whole percent, in the file's value too") {
  husk::spec::Resources r;
  r.cpu = husk::spec::Cpu{};
  r.cpu->quota = 12345;
  r.cpu->period = 50000;
  auto adjusted = cg::systemd_resources(r);
  // 12345 / 50000 = 24.69 % -> 25 % = 12500 us per 50000 us.
  CHECK(adjusted.cpu->quota == 12500);
  auto props = cg::resource_properties(adjusted);
  CHECK(u64(props, "CPUQuotaPerSecUSec") == 250000);
  CHECK(u64(props, "CPUQuotaPeriodUSec") == 50000);
  r.unified["cpu.max"] = "12345 50000";
  CHECK(cg::systemd_resources(r).unified.at("cpu.max") == "12500 50000");
  r.unified["cpu.max"] = "max 50000";
  CHECK(u64(cg::resource_properties(cg::systemd_resources(r)), "CPUQuotaPerSecUSec") == UINT64_MAX);
}

TEST_CASE("a unified key overrides the structured value, in the unit as in the file") {
  husk::spec::Resources r;
  r.memory = husk::spec::Memory{};
  r.memory->limit = 1000000;
  r.unified["memory.max"] = "2000000";
  r.unified["memory.high"] = "max";
  r.unified["hugetlb.2MB.max"] = "0";  // no property: the file alone
  auto props = cg::resource_properties(r);
  CHECK(u64(props, "MemoryMax") == 2000000);
  CHECK(std::count_if(props.begin(), props.end(), [](const Prop& p) { return p.name == "MemoryMax"; }) == 1);
  CHECK(u64(props, "MemoryHigh") == UINT64_MAX);
}

TEST_CASE("block IO weights and throttles name the device by number") {
  auto props = cg::resource_properties(blkio_resources());
  CHECK(u64(props, "IOWeight") == cg::blkio_weight_to_io_weight(500));
  REQUIRE(find(props, "IODeviceWeight"));
  CHECK(std::get<Prop::StrU64s>(find(props, "IODeviceWeight")->value) ==
        Prop::StrU64s{{"/dev/block/8:0", cg::blkio_weight_to_io_weight(200)}});
  REQUIRE(find(props, "IOReadBandwidthMax"));
  CHECK(std::get<Prop::StrU64s>(find(props, "IOReadBandwidthMax")->value) == Prop::StrU64s{{"/dev/block/8:0", 1048576}});
}

TEST_CASE("the effective device rules become a strict allow list systemd can hold") {
  husk::spec::Resources r;
  r.devices = cg::effective_device_rules({}, {});
  auto groups = cg::parse_proc_devices("Character devices:\n  1 mem\n136 pts\n\nBlock devices:\n  8 sd\n");
  CHECK(groups == cg::DeviceGroups{{"char-mem", 1}, {"char-pts", 136}, {"block-sd", 8}});
  auto props = cg::resource_properties(r, false, groups);
  REQUIRE(find(props, "DevicePolicy"));
  CHECK(std::get<std::string>(find(props, "DevicePolicy")->value) == "strict");
  // The reset (empty) list comes first: DeviceAllow appends.
  auto first = std::find_if(props.begin(), props.end(), [](const Prop& p) { return p.name == "DeviceAllow"; });
  REQUIRE(first != props.end());
  CHECK(std::get<Prop::StrPairs>(first->value).empty());
  const auto& allow = std::get<Prop::StrPairs>(props.back().value);
  CHECK(std::find(allow.begin(), allow.end(), std::pair<std::string, std::string>("/dev/char/1:3", "rwm")) != allow.end());
  CHECK(std::find(allow.begin(), allow.end(), std::pair<std::string, std::string>("char-pts", "rwm")) != allow.end());
}

TEST_CASE("device rules systemd cannot express leave the policy to husk's own program") {
  husk::spec::Resources r;
  const auto groups = cg::parse_proc_devices("Character devices:\n136 pts\n");
  r.devices = cg::effective_device_rules({{true, "c", 1, 3, "rwm"}, {false, "c", 1, 3, "w"}}, {});  // a deny among the allows
  CHECK_FALSE(find(cg::resource_properties(r, false, groups), "DevicePolicy"));
  r.devices = cg::effective_device_rules({{false, "c", 1, 3, "rwm"}}, {});  // before any allow: a no-op
  CHECK(find(cg::resource_properties(r, false, groups), "DevicePolicy"));
  r.devices = cg::effective_device_rules({{true, "c", std::nullopt, 5, "r"}}, {});  // "*:5"
  CHECK_FALSE(find(cg::resource_properties(r), "DevicePolicy"));
}

TEST_CASE("a new scope asks for delegation, the init and no default dependencies") {
  auto u = cg::systemd_unit(std::nullopt, "c1", false);
  auto props = cg::scope_properties(u, 4242, {{"MemoryMax", uint64_t{1}}});
  CHECK(std::get<std::string>(find(props, "Slice")->value) == "system.slice");
  CHECK(std::get<bool>(find(props, "Delegate")->value));
  CHECK(std::get<std::vector<uint32_t>>(find(props, "PIDs")->value) == std::vector<uint32_t>{4242});
  CHECK_FALSE(std::get<bool>(find(props, "DefaultDependencies")->value));
  CHECK(props.back().name == "MemoryMax");
}

TEST_CASE("on cgroup v1 the limits become the v1 properties systemd writes the v1 files from") {
  husk::spec::Resources r;
  r.memory = husk::spec::Memory{};
  r.memory->limit = 67108864;
  r.pids_limit = 0;
  r.cpu = husk::spec::Cpu{};
  r.cpu->shares = 512;
  r.cpu->quota = 33333;
  r.cpu->period = 50000;
  auto props = cg::v1_resource_properties(cg::systemd_resources(r));
  CHECK(u64(props, "MemoryLimit") == 67108864);
  CHECK_FALSE(find(props, "MemoryMax"));
  CHECK(u64(props, "CPUShares") == 512);  // raw shares: v1 has no weights
  CHECK_FALSE(find(props, "CPUWeight"));
  CHECK(u64(props, "TasksMax") == 1);
  // 33333 of 50000 is 666660 us/s: up to 670000, which systemd writes back as 33500.
  CHECK(u64(props, "CPUQuotaPerSecUSec") == 670000);
  CHECK(u64(props, "CPUQuotaPeriodUSec") == 50000);
  CHECK(cg::systemd_resources(r).cpu->quota == 33500);
  r.memory->limit = -1;
  r.pids_limit = -1;
  r.cpu = husk::spec::Cpu{};
  r.cpu->quota = -1;
  props = cg::v1_resource_properties(r);
  CHECK(u64(props, "MemoryLimit") == UINT64_MAX);
  CHECK(u64(props, "TasksMax") == UINT64_MAX);
  CHECK(u64(props, "CPUQuotaPerSecUSec") == UINT64_MAX);
  CHECK_FALSE(find(props, "CPUQuotaPeriodUSec"));  // not asked for: the unit keeps its own
}

TEST_CASE("on cgroup v1 block IO weights and bandwidths are BlockIO properties, by device number") {
  husk::spec::Resources r = blkio_resources();
  r.block_io->throttle_write_bps.push_back(r.block_io->throttle_read_bps[0]);
  r.block_io->throttle_read_iops.push_back(r.block_io->throttle_read_bps[0]);  // no property: the file alone
  auto props = cg::v1_resource_properties(r);
  CHECK(u64(props, "BlockIOWeight") == 500);
  CHECK_FALSE(find(props, "IOWeight"));
  CHECK(std::get<Prop::StrU64s>(find(props, "BlockIODeviceWeight")->value) == Prop::StrU64s{{"/dev/block/8:0", 200}});
  CHECK(std::get<Prop::StrU64s>(find(props, "BlockIOReadBandwidth")->value) ==
        Prop::StrU64s{{"/dev/block/8:0", 1048576}});
  CHECK(std::get<Prop::StrU64s>(find(props, "BlockIOWriteBandwidth")->value) ==
        Prop::StrU64s{{"/dev/block/8:0", 1048576}});
  CHECK(props.size() == 4);
}

TEST_CASE("on cgroup v1 the device rules are systemd's, or refused when it cannot hold them") {
  auto groups = cg::parse_proc_devices("Character devices:\n136 pts\n");
  husk::spec::Resources r;
  // A deny before any allow denies nothing more: a no-op.
  r.devices = cg::effective_device_rules({{false, "a", std::nullopt, std::nullopt, "rwm"}, {false, "c", 1, 5, "r"}}, {});
  auto props = cg::v1_resource_properties(r, groups);
  REQUIRE(find(props, "DevicePolicy"));
  CHECK(std::get<std::string>(find(props, "DevicePolicy")->value) == "strict");
  const auto& allow = std::get<Prop::StrPairs>(props.back().value);
  CHECK(allow.front() == std::pair<std::string, std::string>("char-*", "m"));
  CHECK(std::find(allow.begin(), allow.end(), std::pair<std::string, std::string>("char-pts", "rwm")) != allow.end());
  // Privileged: everything allowed is systemd's own default, said explicitly.
  r.devices = cg::effective_device_rules({{true, "a", std::nullopt, std::nullopt, "rwm"}}, {});
  props = cg::v1_resource_properties(r, groups);
  CHECK(std::get<std::string>(find(props, "DevicePolicy")->value) == "auto");
  CHECK(std::get<Prop::StrPairs>(find(props, "DeviceAllow")->value).empty());
  using Rules = std::vector<husk::spec::DeviceRule>;
  for (const auto& rules : {Rules{{true, "c", 1, 3, "rwm"}, {false, "c", 1, 3, "w"}}, Rules{{true, "c", std::nullopt, 5, "r"}},
                            Rules{{true, "a", std::nullopt, std::nullopt, "rwm"}, {false, "c", 1, 3, "rwm"}}}) {
    r.devices = cg::effective_device_rules(rules, {});
    CHECK_THROWS_WITH(cg::v1_resource_properties(r, groups), Catch::Contains("linux.resources.devices"));
  }
  // A major /proc/devices does not list has no systemd name.
  r.devices = cg::effective_device_rules({}, {});
  CHECK_THROWS_WITH(cg::v1_resource_properties(r, {}), Catch::Contains("linux.resources.devices"));
  r.devices.clear();  // update: the unit keeps its policy
  CHECK(cg::v1_resource_properties(r).empty());
}

TEST_CASE("a new scope on cgroup v1 asks for BlockIO accounting, not IO") {
  auto props = cg::scope_properties(cg::systemd_unit(std::nullopt, "c1", false), 1, {}, true);
  CHECK(find(props, "BlockIOAccounting"));
  CHECK_FALSE(find(props, "IOAccounting"));
  CHECK(find(cg::scope_properties(cg::systemd_unit(std::nullopt, "c1", false), 1, {}), "IOAccounting"));
}
