// What CRIU is asked for a checkpoint and a restore, from the config and
// runc's flags; and which images a bundle may be restored from.
#include <catch2/catch.hpp>

#include <algorithm>

#include "base/error.h"
#include "checkpoint/plan.h"
#include "spec/spec.h"

using namespace husk;
using namespace husk::ckpt;

namespace {

spec::Spec config(const std::string& extra_mount_source = "/srv/data") {
  return spec::parse(R"({"ociVersion": "1.0.2", "root": {"path": "rootfs"},
    "process": {"args": ["sh", "-c", "count"], "cwd": "/", "user": {"uid": 0, "gid": 0}},
    "mounts": [{"destination": "/proc", "type": "proc", "source": "proc"},
               {"destination": "/data", "type": "bind", "source": ")" + extra_mount_source + R"(", "options": ["rbind"]}],
    "linux": {"namespaces": [{"type": "pid"}, {"type": "mount"}, {"type": "network"}],
              "maskedPaths": ["/proc/kcore", "/proc/acpi"], "cgroupsPath": "/a/b"}})");
}

json find(const json& list, const std::string& key) {
  for (const auto& e : list)
    if (e.value("key", "") == key) return e;
  return nullptr;
}

}  // namespace

TEST_CASE("checkpoint: binds and masked files are external mounts, host stdio files external files") {
  CheckpointFlags f;
  DumpFacts facts;
  facts.pid = 42;
  facts.rootfs = "/b/rootfs";
  facts.images_fd = 7;
  facts.work_fd = 8;
  facts.masked_files = {"/proc/kcore"};
  facts.external_files = {"file[26:5]"};
  const json o = dump_opts(config(), f, facts);
  CHECK(o["pid"] == 42);
  CHECK(o["root"] == "/b/rootfs");
  CHECK(o["images_dir_fd"] == 7);
  CHECK(o["work_dir_fd"] == 8);
  CHECK(o["log_file"] == "dump.log");
  CHECK(find(o["ext_mnt"], "/data")["val"] == "/data");
  CHECK(find(o["ext_mnt"], "/proc/kcore")["val"] == "/proc/kcore");
  CHECK(find(o["ext_mnt"], "/proc").is_null());
  CHECK(o["external"] == json::array({"file[26:5]"}));
  CHECK_FALSE(o.contains("leave_running"));
  CHECK_FALSE(o.contains("track_mem"));
  CHECK_FALSE(o.contains("orphan_pts_master"));
  spec::Spec tty = config();
  tty.process->terminal = true;
  CHECK(dump_opts(tty, f, facts)["orphan_pts_master"] == true);
  CHECK_FALSE(o.contains("freeze_cgroup"));
  // A paused container: CRIU seizes its tasks through the frozen cgroup.
  facts.freeze_cgroup = "/sys/fs/cgroup/a/b";
  CHECK(dump_opts(config(), f, facts)["freeze_cgroup"] == "/sys/fs/cgroup/a/b");
}

TEST_CASE("checkpoint: pre-dump tracks memory; a dump with a parent names it") {
  CheckpointFlags f;
  f.pre_dump = true;
  const json pre = dump_opts(config(), f, {});
  CHECK(pre["track_mem"] == true);
  CHECK(pre["log_file"] == "predump.log");
  CHECK(dump_request(f) == "SINGLE_PRE_DUMP");
  f.pre_dump = false;
  f.parent_path = "../pre";
  const json dump = dump_opts(config(), f, {});
  CHECK(dump["parent_img"] == "../pre");
  CHECK(dump["track_mem"] == true);
}

TEST_CASE("checkpoint: runc's flags map to criu_opts") {
  CheckpointFlags f;
  f.leave_running = true;
  f.criu.tcp_established = f.criu.ext_unix_sk = f.criu.shell_job = f.criu.file_locks = f.criu.auto_dedup = true;
  f.criu.manage_cgroups_mode = "strict";
  f.criu.empty_ns = {"network"};
  f.page_server = "10.0.0.1:27";
  const json o = dump_opts(config(), f, {});
  for (const char* k : {"leave_running", "tcp_established", "ext_unix_sk", "shell_job", "file_locks", "auto_dedup"})
    CHECK(o[k] == true);
  CHECK(o["manage_cgroups_mode"] == "STRICT");
  CHECK(o["empty_ns"] == 0x40000000);
  CHECK(o["ps"] == json({{"address", "10.0.0.1"}, {"port", 27}}));
  f.page_server = "10.0.0.1";
  CHECK_THROWS_WITH(dump_opts(config(), f, {}), Catch::Contains("--page-server 10.0.0.1"));
  f.page_server = "host:99999";
  CHECK_THROWS_WITH(dump_opts(config(), f, {}), Catch::Contains("bad port"));
}

TEST_CASE("flags runc refuses are refused, naming the flag") {
  CriuFlags f;
  f.manage_cgroups_mode = "soft";
  CHECK_NOTHROW(check_flags(f));
  f.manage_cgroups_mode = "hard";
  CHECK_THROWS_WITH(check_flags(f), Catch::Contains("--manage-cgroups-mode hard"));
  f.manage_cgroups_mode = "";
  f.empty_ns = {"pid"};
  CHECK_THROWS_WITH(check_flags(f), Catch::Contains("--empty-ns pid"));
}

TEST_CASE("a joined network namespace is external at the dump and inherited at the restore") {
  spec::Spec sp = config();
  sp.linux_->namespaces[2].path = "/run/netns/test";
  DumpFacts facts;
  CHECK_THROWS(dump_opts(sp, {}, facts));
  facts.netns_inode = 4026532000;
  CHECK(dump_opts(sp, {}, facts)["external"] == json::array({"net[4026532000]:extRootNetNS"}));
  RestoreFacts r;
  CHECK_THROWS(restore_opts(sp, {}, r));
  r.netns_fd = 5;
  CHECK(find(restore_opts(sp, {}, r)["inherit_fd"], "extRootNetNS")["fd"] == 5);
}

TEST_CASE("restore: binds from the bundle's sources, the caller's stdio for pipes and host files") {
  RestoreFacts facts;
  facts.rootfs = "/b/rootfs";
  facts.images_fd = 7;
  facts.descriptors = {"file[26:5]", "pipe:[1234]", "/dev/pts/0"};
  facts.masked_files = {"/proc/kcore"};
  facts.cgroups = {{"", "/a/b"}};
  const json o = restore_opts(config("/srv/new"), {}, facts);
  CHECK(o["rst_sibling"] == true);
  CHECK(o["notify_scripts"] == true);
  CHECK(o["log_file"] == "restore.log");
  CHECK_FALSE(o.contains("work_dir_fd"));
  CHECK(find(o["ext_mnt"], "/data")["val"] == "/srv/new");
  CHECK(find(o["ext_mnt"], "/proc/kcore")["val"] == "/dev/null");
  CHECK(find(o["inherit_fd"], "file[26:5]")["fd"] == 0);
  CHECK(find(o["inherit_fd"], "pipe:[1234]")["fd"] == 1);
  CHECK(find(o["inherit_fd"], "/dev/pts/0").is_null());
  CHECK(o["cg_root"] == json::array({{{"ctrl", ""}, {"path", "/a/b"}}}));
  CHECK_FALSE(o.contains("orphan_pts_master"));
  spec::Spec tty = config();
  tty.process->terminal = true;
  CHECK(restore_opts(tty, {}, facts)["orphan_pts_master"] == true);
}

TEST_CASE("an image fits a bundle whose processes find the same things") {
  const spec::Spec image = config();
  CHECK(config_mismatch(image, image) == "");
  // Another bundle of the same container (an engine's new one): sources and cgroup may move.
  spec::Spec moved = config("/srv/elsewhere");
  moved.linux_->cgroups_path = "/other";
  moved.annotations["x"] = "y";
  CHECK(config_mismatch(image, moved) == "");
  spec::Spec other = config();
  other.process->args = {"sleep", "1"};
  CHECK_THAT(config_mismatch(image, other), Catch::StartsWith("process.args"));
  other = config();
  other.mounts[1].destination = "/elsewhere";
  CHECK_THAT(config_mismatch(image, other), Catch::StartsWith("mounts ("));
  // The same mounts in another order (podman's restore --import --name) fit.
  other = config();
  std::reverse(other.mounts.begin(), other.mounts.end());
  CHECK(config_mismatch(image, other) == "");
  other = config();
  other.mounts.pop_back();
  CHECK_THAT(config_mismatch(image, other), Catch::StartsWith("mounts"));
  other = config();
  other.linux_->namespaces.pop_back();
  CHECK(config_mismatch(image, other) == "linux.namespaces");
  other = config();
  other.process->user.uid = 1000;
  CHECK(config_mismatch(image, other) == "process.user");
}
