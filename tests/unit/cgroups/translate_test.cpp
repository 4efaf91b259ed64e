// linux.resources -> cgroup file writes, for v2 and v1, and the conversions.
#include <catch2/catch.hpp>

#include "cgroups/translate.h"

using husk::Error;
using husk::cgroups::Write;
namespace cg = husk::cgroups;
namespace spec = husk::spec;

namespace {

// Writes to a file, in order.
std::vector<std::string> values_of(const std::vector<Write>& ws, const std::string& file) {
  std::vector<std::string> out;
  for (const auto& w : ws)
    if (w.file == file) out.push_back(w.value);
  return out;
}

std::string one(const std::vector<Write>& ws, const std::string& file) {
  auto v = values_of(ws, file);
  INFO("file " << file);
  REQUIRE(v.size() == 1);
  return v[0];
}

bool has(const std::vector<Write>& ws, const std::string& file) { return !values_of(ws, file).empty(); }

spec::Resources mem(std::optional<int64_t> limit, std::optional<int64_t> swap = std::nullopt) {
  spec::Resources r;
  r.memory = spec::Memory{};
  r.memory->limit = limit;
  r.memory->swap = swap;
  return r;
}

}  // namespace

TEST_CASE("cpu shares convert to cpu.weight with runc's linear formula") {
  CHECK(cg::shares_to_weight(0) == 0);
  CHECK(cg::shares_to_weight(2) == 1);
  CHECK(cg::shares_to_weight(1024) == 39);
  CHECK(cg::shares_to_weight(262144) == 10000);
  // Out-of-range shares are clamped like the kernel clamps cpu.shares.
  CHECK(cg::shares_to_weight(1) == 1);
  CHECK(cg::shares_to_weight(1000000) == 10000);
}

TEST_CASE("blkio weight converts to io.weight 1..10000") {
  CHECK(cg::blkio_weight_to_io_weight(0) == 0);
  CHECK(cg::blkio_weight_to_io_weight(10) == 1);
  CHECK(cg::blkio_weight_to_io_weight(500) == 4950);
  CHECK(cg::blkio_weight_to_io_weight(1000) == 10000);
}

TEST_CASE("swap converts to memory.swap.max = swap - limit") {
  CHECK(cg::v2_swap_max(100 << 20, 300 << 20) == std::to_string(200 << 20));
  CHECK(cg::v2_swap_max(100, 100) == "0");
  CHECK(cg::v2_swap_max(100, -1) == "max");
  CHECK(cg::v2_swap_max(-1, std::nullopt) == "max");
  CHECK(cg::v2_swap_max(-1, -1) == "max");
  CHECK(cg::v2_swap_max(100, std::nullopt) == std::nullopt);
  CHECK(cg::v2_swap_max(std::nullopt, std::nullopt) == std::nullopt);
  CHECK_THROWS_WITH(cg::v2_swap_max(std::nullopt, 100), Catch::Contains("linux.resources.memory.swap"));
  CHECK_THROWS_WITH(cg::v2_swap_max(-1, 100), Catch::Contains("positive memory.limit"));
  CHECK_THROWS_WITH(cg::v2_swap_max(200, 100), Catch::Contains("at least memory.limit"));
}

TEST_CASE("v2 memory") {
  auto r = mem(64 << 20, 128 << 20);
  r.memory->reservation = 32 << 20;
  auto w = cg::v2_writes(r);
  CHECK(one(w, "memory.max") == std::to_string(64 << 20));
  CHECK(one(w, "memory.swap.max") == std::to_string(64 << 20));
  CHECK(one(w, "memory.low") == std::to_string(32 << 20));
  for (const auto& x : w) CHECK(x.controller.empty());

  auto unl = cg::v2_writes(mem(-1));
  CHECK(one(unl, "memory.max") == "max");
  CHECK(one(unl, "memory.swap.max") == "max");

  // v1-only knobs have no v2 file; runc ignores them there too.
  auto v1only = mem(64 << 20);
  v1only.memory->swappiness = 10;
  v1only.memory->disable_oom_killer = true;
  v1only.memory->use_hierarchy = true;
  v1only.memory->kernel = 1 << 20;
  v1only.memory->kernel_tcp = 1 << 20;
  CHECK(cg::v2_writes(v1only) == std::vector<Write>{{"", "memory.max", std::to_string(64 << 20)}});
}

TEST_CASE("memory values are validated with the field name") {
  CHECK_THROWS_WITH(cg::v2_writes(mem(-2)), "linux.resources.memory.limit: must be -1 or positive");
  CHECK_THROWS_WITH(cg::v1_writes(mem(-5)), "linux.resources.memory.limit: must be -1 or positive");
  CHECK_THROWS_WITH(cg::v2_writes(mem((int64_t{1} << 62) + 1)), Catch::Contains("linux.resources.memory.limit: must be at most"));
  auto res = mem(std::nullopt);
  res.memory->reservation = -3;
  CHECK_THROWS_WITH(cg::v2_writes(res), Catch::StartsWith("linux.resources.memory.reservation:"));
  auto sw = mem(100, 50);
  CHECK_THROWS_WITH(cg::v1_writes(sw), Catch::StartsWith("linux.resources.memory.swap:"));
  auto swp = mem(std::nullopt);
  swp.memory->swappiness = 101;
  CHECK_THROWS_WITH(cg::v1_writes(swp), "linux.resources.memory.swappiness: must be between 0 and 100");
  // 0 means unset, as runc treats it.
  CHECK(cg::v2_writes(mem(0)).empty());
}

TEST_CASE("v1 memory") {
  auto r = mem(64 << 20, 128 << 20);
  r.memory->reservation = 32 << 20;
  r.memory->swappiness = 0;
  r.memory->disable_oom_killer = true;
  r.memory->use_hierarchy = true;
  r.memory->kernel_tcp = 8 << 20;
  r.memory->kernel = 8 << 20;  // removed from the kernel: ignored
  auto w = cg::v1_writes(r);
  for (const auto& x : w) CHECK(x.controller == "memory");
  CHECK(one(w, "memory.limit_in_bytes") == std::to_string(64 << 20));
  CHECK(one(w, "memory.memsw.limit_in_bytes") == std::to_string(128 << 20));
  CHECK(one(w, "memory.soft_limit_in_bytes") == std::to_string(32 << 20));
  CHECK(one(w, "memory.swappiness") == "0");
  CHECK(one(w, "memory.oom_control") == "1");
  CHECK(one(w, "memory.use_hierarchy") == "1");
  CHECK(one(w, "memory.kmem.tcp.limit_in_bytes") == std::to_string(8 << 20));
  CHECK_FALSE(has(w, "memory.kmem.limit_in_bytes"));
  CHECK(one(cg::v1_writes(mem(-1)), "memory.limit_in_bytes") == "-1");
}

TEST_CASE("v2 cpu") {
  spec::Resources r;
  r.cpu = spec::Cpu{};
  r.cpu->shares = 1024;
  r.cpu->quota = 50000;
  r.cpu->period = 100000;
  r.cpu->burst = 10000;
  r.cpu->idle = 1;
  r.cpu->cpus = "0-1";
  r.cpu->mems = "0";
  auto w = cg::v2_writes(r);
  CHECK(w == std::vector<Write>{{"", "cpu.weight", "39"},
                                {"", "cpu.max", "50000 100000"},
                                {"", "cpu.max.burst", "10000"},
                                {"", "cpu.idle", "1"},
                                {"", "cpuset.cpus", "0-1"},
                                {"", "cpuset.mems", "0"}});
  spec::Resources q;
  q.cpu = spec::Cpu{};
  q.cpu->quota = -1;
  q.cpu->period = 100000;
  CHECK(one(cg::v2_writes(q), "cpu.max") == "max 100000");
  q.cpu->period.reset();
  q.cpu->quota = 20000;
  CHECK(one(cg::v2_writes(q), "cpu.max") == "20000");
  q.cpu->quota = -7;
  CHECK_THROWS_WITH(cg::v2_writes(q), "linux.resources.cpu.quota: must be -1 or positive");
  q.cpu->quota.reset();
  q.cpu->idle = 2;
  CHECK_THROWS_WITH(cg::v2_writes(q), "linux.resources.cpu.idle: must be 0 or 1");
  q.cpu->idle.reset();
  q.cpu->realtime_runtime = 950000;
  CHECK_THROWS_WITH(cg::v2_writes(q), "linux.resources.cpu.realtimeRuntime: not supported on cgroup v2");
  q.cpu->realtime_runtime.reset();
  q.cpu->cpus = "0-";
  CHECK_THROWS_WITH(cg::v2_writes(q), Catch::StartsWith("linux.resources.cpu.cpus: invalid list"));
}

TEST_CASE("v1 cpu") {
  spec::Resources r;
  r.cpu = spec::Cpu{};
  r.cpu->shares = 512;
  r.cpu->quota = 50000;
  r.cpu->period = 100000;
  r.cpu->burst = 1000;
  r.cpu->realtime_period = 1000000;
  r.cpu->realtime_runtime = 950000;
  r.cpu->idle = 0;
  r.cpu->cpus = "1";
  r.cpu->mems = "0";
  CHECK(cg::v1_writes(r) == std::vector<Write>{{"cpu", "cpu.shares", "512"},
                                                {"cpu", "cpu.cfs_period_us", "100000"},
                                                {"cpu", "cpu.cfs_quota_us", "50000"},
                                                {"cpu", "cpu.cfs_burst_us", "1000"},
                                                {"cpu", "cpu.rt_period_us", "1000000"},
                                                {"cpu", "cpu.rt_runtime_us", "950000"},
                                                {"cpu", "cpu.idle", "0"},
                                                {"cpuset", "cpuset.cpus", "1"},
                                                {"cpuset", "cpuset.mems", "0"}});
  spec::Resources q;
  q.cpu = spec::Cpu{};
  q.cpu->quota = -1;
  CHECK(one(cg::v1_writes(q), "cpu.cfs_quota_us") == "-1");
}

TEST_CASE("pids: a negative limit is unlimited, 0 is a limit") {
  spec::Resources r;
  r.pids_limit = 20;
  CHECK(cg::v2_writes(r) == std::vector<Write>{{"", "pids.max", "20"}});
  CHECK(cg::v1_writes(r) == std::vector<Write>{{"pids", "pids.max", "20"}});
  r.pids_limit = 0;
  CHECK(one(cg::v2_writes(r), "pids.max") == "0");
  CHECK(one(cg::v1_writes(r), "pids.max") == "0");
  r.pids_limit = -1;
  CHECK(one(cg::v1_writes(r), "pids.max") == "max");
}

TEST_CASE("blockIO") {
  spec::Resources r;
  r.block_io = spec::BlockIo{};
  r.block_io->weight = 500;
  spec::WeightDevice wd;
  wd.major = 8;
  wd.minor = 0;
  wd.weight = 100;
  r.block_io->weight_device.push_back(wd);
  r.block_io->throttle_read_bps.push_back({254, 0, 1048576});
  r.block_io->throttle_write_iops.push_back({254, 0, 100});
  r.block_io->throttle_write_bps.push_back({8, 16, 0});

  auto v2 = cg::v2_writes(r);
  CHECK(values_of(v2, "io.weight") == std::vector<std::string>{"4950", "8:0 910"});
  CHECK(values_of(v2, "io.max") == std::vector<std::string>{"254:0 rbps=1048576 wiops=100", "8:16 wbps=max"});
  auto bfq = cg::v2_writes(r, true);
  CHECK(values_of(bfq, "io.bfq.weight") == std::vector<std::string>{"500", "8:0 100"});
  CHECK_FALSE(has(bfq, "io.weight"));

  auto v1 = cg::v1_writes(r);
  CHECK(one(v1, "blkio.weight") == "500");
  CHECK(one(v1, "blkio.weight_device") == "8:0 100");
  CHECK(one(v1, "blkio.throttle.read_bps_device") == "254:0 1048576");
  CHECK(one(v1, "blkio.throttle.write_iops_device") == "254:0 100");
  CHECK(one(v1, "blkio.throttle.write_bps_device") == "8:16 0");
  for (const auto& x : v1) CHECK(x.controller == "blkio");

  r.block_io->weight = 5;
  CHECK_THROWS_WITH(cg::v2_writes(r), "linux.resources.blockIO.weight: must be between 10 and 1000");
  r.block_io->weight = 500;
  r.block_io->leaf_weight = 300;
  CHECK_THROWS_WITH(cg::v2_writes(r), "linux.resources.blockIO.leafWeight: not supported on cgroup v2");
  CHECK(one(cg::v1_writes(r), "blkio.leaf_weight") == "300");
  r.block_io->leaf_weight.reset();
  r.block_io->throttle_read_iops.push_back({-1, 0, 5});
  CHECK_THROWS_WITH(cg::v2_writes(r), Catch::StartsWith("linux.resources.blockIO.throttleReadIOPSDevice[0]:"));
}

TEST_CASE("hugepage limits") {
  spec::Resources r;
  r.hugepage_limits.push_back({"2MB", 4194304});
  CHECK(cg::v2_writes(r) == std::vector<Write>{{"", "hugetlb.2MB.max", "4194304"}, {"", "hugetlb.2MB.rsvd.max", "4194304"}});
  CHECK(cg::v1_writes(r) == std::vector<Write>{{"hugetlb", "hugetlb.2MB.limit_in_bytes", "4194304"},
                                                {"hugetlb", "hugetlb.2MB.rsvd.limit_in_bytes", "4194304"}});
  r.hugepage_limits.push_back({"2M/../x", 1});
  CHECK_THROWS_WITH(cg::v2_writes(r), Catch::StartsWith("linux.resources.hugepageLimits[1].pageSize:"));
}

TEST_CASE("network is v1 only; rdma on both") {
  spec::Resources r;
  r.network = spec::Network{};
  r.network->class_id = 0x100001;
  r.network->priorities.push_back({"eth0", 5});
  r.rdma["mlx5_0"] = spec::Rdma{3, 100};
  r.rdma["mlx4_0"] = spec::Rdma{std::nullopt, 7};
  auto v1 = cg::v1_writes(r);
  CHECK(v1 == std::vector<Write>{{"net_cls", "net_cls.classid", "1048577"},
                                 {"net_prio", "net_prio.ifpriomap", "eth0 5"},
                                 {"rdma", "rdma.max", "mlx4_0 hca_object=7"},
                                 {"rdma", "rdma.max", "mlx5_0 hca_handle=3 hca_object=100"}});
  CHECK(cg::v2_writes(r) == std::vector<Write>{{"", "rdma.max", "mlx4_0 hca_object=7"},
                                               {"", "rdma.max", "mlx5_0 hca_handle=3 hca_object=100"}});
}

TEST_CASE("unified keys go last on v2 and are refused on v1") {
  spec::Resources r;
  r.pids_limit = 10;
  r.unified["memory.high"] = "50M";
  r.unified["pids.max"] = "12";
  auto w = cg::v2_writes(r);
  CHECK(w == std::vector<Write>{{"", "pids.max", "10"}, {"", "memory.high", "50M"}, {"", "pids.max", "12"}});
  CHECK_THROWS_WITH(cg::v1_writes(r), Catch::StartsWith("linux.resources.unified: requires cgroup v2"));
  spec::Resources bad;
  bad.unified["../x"] = "1";
  CHECK_THROWS_WITH(cg::v2_writes(bad), "linux.resources.unified: key \"../x\" must name a file inside the cgroup");
}

TEST_CASE("unified key validation") {
  CHECK_NOTHROW(cg::validate_unified_key("memory.high"));
  CHECK_NOTHROW(cg::validate_unified_key("hugetlb.2MB.max"));
  CHECK_NOTHROW(cg::validate_unified_key("io.bfq.weight"));
  CHECK_THROWS_WITH(cg::validate_unified_key("a/b.c"), Catch::Contains("must name a file inside the cgroup"));
  CHECK_THROWS_WITH(cg::validate_unified_key("memory..x"), Catch::Contains("must name a file inside the cgroup"));
  CHECK_THROWS_WITH(cg::validate_unified_key("memory"), Catch::Contains("<controller>.<file>"));
  CHECK_THROWS_WITH(cg::validate_unified_key(".max"), Catch::Contains("<controller>.<file>"));
  CHECK_THROWS_WITH(cg::validate_unified_key("memory."), Catch::Contains("<controller>.<file>"));
  CHECK_THROWS_WITH(cg::validate_unified_key("memory.max\n"), Catch::Contains("character"));
  CHECK_THROWS_WITH(cg::validate_unified_key("cgroup.procs"), Catch::Contains("managed by the runtime"));
  CHECK_THROWS_WITH(cg::validate_unified_key("cgroup.kill"), Catch::Contains("managed by the runtime"));
}

TEST_CASE("v1 devices: deny all, then each rule in order") {
  spec::Resources r;
  r.devices.push_back({false, "", std::nullopt, std::nullopt, "rwm"});
  r.devices.push_back({true, "c", 1, 3, "rw"});
  r.devices.push_back({true, "c", 136, std::nullopt, "rwm"});
  r.devices.push_back({false, "b", std::nullopt, std::nullopt, ""});
  CHECK(cg::v1_writes(r) == std::vector<Write>{{"devices", "devices.deny", "a"},
                                                {"devices", "devices.deny", "a"},
                                                {"devices", "devices.allow", "c 1:3 rw"},
                                                {"devices", "devices.allow", "c 136:* rwm"},
                                                {"devices", "devices.deny", "b *:* rwm"}});
  CHECK(cg::v2_writes(r).empty());  // an eBPF program, not a file
  r.devices.push_back({true, "x", 1, 1, "r"});
  CHECK_THROWS_WITH(cg::v1_writes(r), Catch::StartsWith("linux.resources.devices[4].type:"));
  r.devices.back().type = "c";
  r.devices.back().access = "rx";
  CHECK_THROWS_WITH(cg::v1_writes(r), Catch::StartsWith("linux.resources.devices[4].access:"));
}

TEST_CASE("resolve_path") {
  CHECK(cg::resolve_path(std::nullopt, "abc") == "/husk/abc");
  CHECK(cg::resolve_path(std::string(), "abc") == "/husk/abc");
  CHECK(cg::resolve_path(std::string("/machine/ctr"), "abc") == "/machine/ctr");
  CHECK(cg::resolve_path(std::string("pods/ctr"), "abc") == "/husk/pods/ctr");
  CHECK(cg::resolve_path(std::string("//a/./b/"), "abc") == "/a/b");
  CHECK_THROWS_WITH(cg::resolve_path(std::string("/a/../../etc"), "x"), Catch::StartsWith("linux.cgroupsPath:"));
  CHECK_THROWS_WITH(cg::resolve_path(std::string("../x"), "x"), Catch::Contains("\"..\""));
  CHECK_THROWS_WITH(cg::resolve_path(std::string("/"), "x"), Catch::Contains("root cgroup"));
}

TEST_CASE("cpu lists and the online check") {
  CHECK(cg::parse_cpu_list("0-3,7", "f") == std::vector<unsigned>{0, 1, 2, 3, 7});
  CHECK(cg::parse_cpu_list(" 1 ", "f") == std::vector<unsigned>{1});
  CHECK(cg::parse_cpu_list("", "f").empty());
  for (const char* bad : {"3-1", "a", "1,", ",1", "1-2-3", "-1", "123456"})
    CHECK_THROWS_WITH(cg::parse_cpu_list(bad, "linux.resources.cpu.cpus"), Catch::StartsWith("linux.resources.cpu.cpus: invalid list"));

  spec::Resources r;
  r.cpu = spec::Cpu{};
  r.cpu->cpus = "1,99";
  CHECK_THROWS_WITH(cg::check_cpuset(r, "0-1\n", "0\n"),
                    "linux.resources.cpu.cpus: CPU 99 is not present on this machine (online: 0-1)");
  r.cpu->cpus = "0-1";
  CHECK_NOTHROW(cg::check_cpuset(r, "0-1\n", "0\n"));
  r.cpu->mems = "0,3";
  CHECK_THROWS_WITH(cg::check_cpuset(r, "0-1\n", "0\n"),
                    "linux.resources.cpu.mems: memory node 3 is not present on this machine (online: 0)");
}
