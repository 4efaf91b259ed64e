// The container's mount table, as the container sees it.
#include <catch2/catch.hpp>

#include <filesystem>

#include <sys/stat.h>

#include "harness.h"

using namespace hit;
namespace fs = std::filesystem;

static std::vector<MountEntry> inner_mounts(Container& c) {
  c.args({"cat", "/proc/self/mountinfo"});
  auto r = c.run();
  INFO(r.err);
  REQUIRE(r.code == 0);
  return parse_mountinfo(r.out);
}

TEST_CASE("default mounts: proc, dev tmpfs, devpts, ro sysfs", "[mounts]") {
  Container c("mnt-default");
  auto m = inner_mounts(c);
  auto* proc = find_mount(m, "/proc");
  REQUIRE(proc);
  CHECK(proc->fstype == "proc");
  auto* dev = find_mount(m, "/dev");
  REQUIRE(dev);
  CHECK(dev->fstype == "tmpfs");
  CHECK(dev->has_opt("nosuid"));
  auto* pts = find_mount(m, "/dev/pts");
  REQUIRE(pts);
  CHECK(pts->fstype == "devpts");
  auto* sys = find_mount(m, "/sys");
  REQUIRE(sys);
  CHECK(sys->fstype == "sysfs");
  CHECK(sys->has_opt("ro"));
  auto* shm = find_mount(m, "/dev/shm");
  REQUIRE(shm);
  CHECK(shm->fstype == "tmpfs");
  auto* mq = find_mount(m, "/dev/mqueue");
  REQUIRE(mq);
  CHECK(mq->fstype == "mqueue");
  // The root is the bundle's rootfs, not the host's.
  auto* root = find_mount(m, "/");
  REQUIRE(root);
  CHECK(contains(root->root, fs::path(c.bundle).filename().string()));
  // Nothing of the host's mount table beyond what was configured.
  for (auto& e : m) {
    INFO(e.mount_point);
    CHECK((e.mount_point == "/" || e.mount_point.rfind("/proc", 0) == 0 || e.mount_point.rfind("/dev", 0) == 0 ||
           e.mount_point.rfind("/sys", 0) == 0));
  }
}

TEST_CASE("tmpfs mount with size and nosuid,noexec", "[mounts]") {
  Container c("mnt-tmpfs");
  c.cfg["mounts"].push_back({{"destination", "/scratch"},
                             {"type", "tmpfs"},
                             {"source", "tmpfs"},
                             {"options", {"nosuid", "noexec", "nodev", "size=1m", "mode=700"}}});
  auto m = inner_mounts(c);
  auto* t = find_mount(m, "/scratch");
  REQUIRE(t);
  CHECK(t->fstype == "tmpfs");
  CHECK(t->has_opt("nosuid"));
  CHECK(t->has_opt("noexec"));
  CHECK(t->has_opt("nodev"));
  CHECK(t->has_opt("size=1024k"));
  CHECK(t->has_opt("mode=700"));
  CHECK_FALSE(t->has_opt("ro"));
  // Created by the runtime inside the rootfs.
  CHECK(fs::is_directory(c.rootfs + "/scratch"));
}

TEST_CASE("readonly root", "[mounts]") {
  SECTION("root.readonly true") {
    Container c("mnt-ro");
    c.cfg["root"]["readonly"] = true;
    c.args({"touch", "/x"});
    auto r = c.run();
    CHECK(r.code != 0);
    CHECK(contains(r.err, "Read-only file system"));
    CHECK_FALSE(fs::exists(c.rootfs + "/x"));
    Container c2("mnt-ro2");
    c2.cfg["root"]["readonly"] = true;
    auto m = inner_mounts(c2);
    auto* root = find_mount(m, "/");
    REQUIRE(root);
    CHECK(root->has_opt("ro"));
    // Mounts on top stay writable.
    auto* dev = find_mount(m, "/dev");
    REQUIRE(dev);
    CHECK_FALSE(dev->has_opt("ro"));
  }
  SECTION("root.readonly false") {
    Container c("mnt-rw");
    c.args({"touch", "/x"});
    auto r = c.run();
    INFO(r.err);
    CHECK(r.code == 0);
    CHECK(fs::exists(c.rootfs + "/x"));
  }
}

TEST_CASE("bind mounts of a host directory, rw and ro", "[mounts]") {
  Container c("mnt-bind");
  TempDir hostdir("husk-it-bind-");
  auto& host = hostdir.path;
  write_file(host + "/in", "from-host\n");
  c.cfg["mounts"].push_back(
      {{"destination", "/data"}, {"type", "bind"}, {"source", host}, {"options", {"rbind", "rw"}}});
  c.cfg["mounts"].push_back(
      {{"destination", "/rodata"}, {"type", "bind"}, {"source", host}, {"options", {"rbind", "ro"}}});
  c.args({"sh", "-c", "cat /data/in && echo from-inside > /data/out && "
                      "if echo x > /rodata/out2; then echo ro-write-ok; fi; cat /proc/self/mountinfo"});
  auto r = c.run();
  INFO(r.err);
  CHECK(r.code == 0);
  CHECK(r.out.rfind("from-host\n", 0) == 0);
  CHECK_FALSE(contains(r.out, "ro-write-ok"));
  CHECK(contains(r.err, "Read-only file system"));
  CHECK(read_file(host + "/out") == "from-inside\n");
  CHECK_FALSE(fs::exists(host + "/out2"));
  auto m = parse_mountinfo(r.out);
  auto* ro = find_mount(m, "/rodata");
  REQUIRE(ro);
  CHECK(ro->has_opt("ro"));
  auto* rw = find_mount(m, "/data");
  REQUIRE(rw);
  CHECK_FALSE(rw->has_opt("ro"));
  CHECK(leftovers(c).empty());
}

TEST_CASE("masked and readonly paths", "[mounts]") {
  Container c("mnt-mask");
  fs::create_directories(c.rootfs + "/secret/sub");
  write_file(c.rootfs + "/secret/key", "top-secret\n");
  write_file(c.rootfs + "/secret-file", "also-secret\n");
  // /proc/kcore is the classic target; this kernel may not have it.
  std::string procfile = fs::exists("/proc/kcore") ? "/proc/kcore" : "/proc/timer_list";
  REQUIRE(fs::exists(procfile));
  c.cfg["linux"]["maskedPaths"] = {procfile, "/secret", "/secret-file", "/does/not/exist"};
  c.cfg["linux"]["readonlyPaths"] = {"/proc/sys", "/proc/sysrq-trigger"};
  c.args({"sh", "-c",
          "echo kcore=$(wc -c < " + procfile + "); echo version=$(wc -c < /proc/version); "
          "echo secret=$(ls -A /secret | wc -l); "
          "echo file=$(cat /secret-file | wc -c); "
          "if echo other > /proc/sys/kernel/hostname; then echo sys-write-ok; fi; "
          "echo host=$(hostname)"});
  auto r = c.run();
  INFO(r.out << r.err);
  CHECK(r.code == 0);
  CHECK(contains(r.out, "kcore=0\n"));
  CHECK_FALSE(contains(r.out, "version=0\n"));
  CHECK(contains(r.out, "secret=0\n"));
  CHECK(contains(r.out, "file=0\n"));
  CHECK_FALSE(contains(r.out, "sys-write-ok"));
  CHECK(contains(r.err, "Read-only file system"));
  CHECK(contains(r.out, "host=husk-it\n"));
  // Masking hides, it does not delete.
  CHECK(read_file(c.rootfs + "/secret/key") == "top-secret\n");
}

TEST_CASE("without readonlyPaths /proc/sys is writable in the uts namespace", "[mounts]") {
  // The counterpart of the check above: the write itself works.
  Container c("mnt-nomask");
  c.cfg["linux"]["readonlyPaths"] = json::array();
  c.args({"sh", "-c", "echo other > /proc/sys/kernel/hostname && hostname"});
  auto r = c.run();
  INFO(r.err);
  CHECK(r.code == 0);
  CHECK(r.out == "other\n");
}
