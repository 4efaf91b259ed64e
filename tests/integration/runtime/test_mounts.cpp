// The container's mount table, as the container sees it.
#include <catch2/catch.hpp>

#include <filesystem>

#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include "harness.h"
#include "skip.h"

using namespace hit;
namespace fs = std::filesystem;

static std::vector<MountEntry> inner_mounts(Container& c) {
  auto r = c.run_ok({"cat", "/proc/self/mountinfo"});
  return parse_mountinfo(r.out);
}

TEST_CASE("default mounts: proc, dev tmpfs, devpts, ro sysfs", "[mounts]") {
  Container c("mnt-default");
  auto m = inner_mounts(c);
  for (auto [point, type] : std::vector<std::pair<std::string, std::string>>{{"/proc", "proc"},
                                                                            {"/dev", "tmpfs"},
                                                                            {"/dev/pts", "devpts"},
                                                                            {"/sys", "sysfs"},
                                                                            {"/dev/shm", "tmpfs"},
                                                                            {"/dev/mqueue", "mqueue"}}) {
    INFO(point);
    CHECK(mount_at(m, point).fstype == type);
  }
  CHECK(mount_at(m, "/dev").has_opt("nosuid"));
  CHECK(mount_at(m, "/sys").has_opt("ro"));
  // The root is the bundle's rootfs, not the host's.
  CHECK(contains(mount_at(m, "/").root, fs::path(c.bundle).filename().string()));
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
  auto* t = &mount_at(m, "/scratch");
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
    auto* root = &mount_at(m, "/");
    CHECK(root->has_opt("ro"));
    // Mounts on top stay writable.
    auto* dev = &mount_at(m, "/dev");
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

// A bind onto / replaces the root; the mounts after it (the defaults: /proc,
// /dev, /sys) must land on the new root, as runc stacks them. husk resolved
// them from the rootfs under it: the container had no /proc (issue 24).
TEST_CASE("a bind mount onto / is the root the later mounts land on", "[mounts]") {
  Container src("mnt-root-src", true);
  write_file(src.rootfs + "/from-the-bind", "bound\n");
  Container c("mnt-root");
  json mounts = json::array({{{"destination", "/"}, {"type", "bind"}, {"source", src.rootfs}, {"options", {"rbind"}}}});
  for (auto& m : c.cfg["mounts"]) mounts.push_back(m);
  c.cfg["mounts"] = mounts;
  c.args({"sh", "-c", "cat /from-the-bind; cat /proc/self/mountinfo"});
  auto r = c.run();
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(r.out.rfind("bound\n", 0) == 0);
  auto m = parse_mountinfo(r.out.substr(r.out.find('\n') + 1));
  CHECK(mount_at(m, "/proc").fstype == "proc");
  CHECK(mount_at(m, "/dev").fstype == "tmpfs");
  CHECK(mount_at(m, "/sys").fstype == "sysfs");
  CHECK(leftovers(c).empty());
}

// A filesystem onto / (odd, but legal) is the root from then on too. husk
// makes one it can as a detached mount and takes its fd as the root; one
// with a superblock flag (sync) goes through mount(2) and is looked up.
// Both give runc's table: the tmpfs at /, the later mounts on it.
TEST_CASE("a tmpfs mounted onto / is the root the later mounts land on", "[mounts]") {
  Container src("mnt-fsroot-src", true);
  for (const bool sync : {false, true}) {
    DYNAMIC_SECTION((sync ? "with sync: mount(2)" : "made detached")) {
      Container c(sync ? "mnt-fsroot-sync" : "mnt-fsroot");
      json opts = json::array({"size=2m"});
      if (sync) opts.push_back("sync");
      json mounts = json::array({{{"destination", "/"}, {"type", "tmpfs"}, {"source", "tmpfs"}, {"options", opts}},
                                 {{"destination", "/bin"}, {"type", "bind"}, {"source", src.rootfs + "/bin"},
                                  {"options", {"rbind", "ro"}}}});
      for (auto& m : c.cfg["mounts"]) mounts.push_back(m);
      c.cfg["mounts"] = mounts;
      c.args({"sh", "-c", "ls /; echo --; cat /proc/self/mountinfo"});
      auto r = c.run();
      INFO(r.err);
      REQUIRE(r.code == 0);
      // Only the mount points made in it: the rootfs under it (its /etc) is not seen.
      const std::string listing = r.out.substr(0, r.out.find("--\n"));
      CHECK(listing.find("bin\n") != std::string::npos);
      CHECK(listing.find("etc\n") == std::string::npos);
      auto m = parse_mountinfo(r.out.substr(r.out.find("--\n") + 3));
      CHECK(mount_at(m, "/").fstype == "tmpfs");
      CHECK(mount_at(m, "/").has_opt("size=2048k"));
      CHECK(mount_at(m, "/").has_opt("sync") == sync);
      CHECK(mount_at(m, "/bin").has_opt("ro"));
      CHECK(mount_at(m, "/proc").fstype == "proc");
      CHECK(mount_at(m, "/dev").fstype == "tmpfs");
      CHECK(mount_at(m, "/sys").fstype == "sysfs");
      CHECK(leftovers(c).empty());
    }
  }
}

// No procfs at /proc (none mounted, or a tmpfs there): the init reaches
// exec.fifo through a procfs of its own, so create, start and the program run
// (crun runs it too; runc refuses it at create: README). husk reopened the
// fifo through the container's /proc, and its error went out on a socket
// already closed: create succeeded, the container was stopped (issue 24).
TEST_CASE("a container without a procfs at /proc runs", "[mounts][proc]") {
  for (const bool tmpfs : {false, true}) {
    DYNAMIC_SECTION((tmpfs ? "a tmpfs on /proc" : "no /proc mount")) {
      Container c(tmpfs ? "proc-tmpfs" : "no-proc");
      json mounts = json::array();
      for (auto& m : c.cfg["mounts"])
        if (m["destination"] != "/proc") mounts.push_back(m);
      if (tmpfs) mounts.push_back({{"destination", "/proc"}, {"type", "tmpfs"}, {"source", "tmpfs"}});
      c.cfg["mounts"] = mounts;
      c.args({"sh", "-c", "test -e /proc/self && echo a-procfs; echo ran"});
      auto made = c.create();
      INFO(made.err);
      if (runtime_is_runc()) {  // refused at create (README differences)
        CHECK_FALSE(made.ok());
        continue;
      }
      REQUIRE(made.ok());
      CHECK(c.status() == "created");
      auto started = c.start();
      INFO(started.err);
      REQUIRE(started.ok());
      CHECK(c.wait_status("stopped"));
      CHECK(c.container_out() == "ran\n");
      REQUIRE(c.del().ok());
      CHECK(leftovers(c).empty());
    }
  }
}

// Without a pid namespace of its own the init gets no procfs of its own (it
// would show the host's processes): create fails naming /proc, as runc's
// does, instead of an init that dies after create said it was ready.
TEST_CASE("no procfs at /proc and the host's pid namespace: create fails naming /proc", "[mounts][proc]") {
  Container c("no-proc-hostpid");
  json mounts = json::array();
  for (auto& m : c.cfg["mounts"])
    if (m["destination"] != "/proc") mounts.push_back(m);
  c.cfg["mounts"] = mounts;
  json namespaces = json::array();
  for (auto& n : c.cfg["linux"]["namespaces"])
    if (n["type"] != "pid") namespaces.push_back(n);
  c.cfg["linux"]["namespaces"] = namespaces;
  c.args({"true"});
  auto made = c.create();
  CHECK_FALSE(made.ok());
  CHECK(contains(made.err, "/proc"));
  CHECK(leftovers(c).empty());
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
  auto* ro = &mount_at(m, "/rodata");
  CHECK(ro->has_opt("ro"));
  auto* rw = &mount_at(m, "/data");
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

// On a cgroup v1 or hybrid host a "cgroup" mount is, as runc makes it, a
// tmpfs with one directory per host hierarchy, each showing the container's
// own cgroup: through a cgroup namespace, or as a bind of its directory.
TEST_CASE("cgroup mount on a v1/hybrid host: a tmpfs of the container's own hierarchies", "[mounts][cgroups]") {
  struct statfs sf{};
  if (statfs("/sys/fs/cgroup/memory", &sf) != 0 || sf.f_type != CGROUP_SUPER_MAGIC) HUSK_SKIP("no cgroup v1 memory hierarchy on this host");
  // The host's hierarchies directly below /sys/fs/cgroup.
  std::vector<std::string> hierarchies;
  for (auto& e : parse_mountinfo(read_file("/proc/self/mountinfo")))
    if ((e.fstype == "cgroup" || e.fstype == "cgroup2") && e.mount_point.rfind("/sys/fs/cgroup/", 0) == 0 &&
        e.mount_point.find('/', 15) == std::string::npos)
      hierarchies.push_back(e.mount_point);
  REQUIRE(!hierarchies.empty());

  for (bool cgroupns : {false, true}) {
    DYNAMIC_SECTION((cgroupns ? "with" : "without") << " a cgroup namespace") {
      Container c(cgroupns ? "mnt-cg1ns" : "mnt-cg1");
      auto& mounts = c.cfg["mounts"];
      json kept = json::array();
      for (auto& m : mounts)
        if (m.value("type", "") != "cgroup") kept.push_back(m);
      mounts = kept;
      mounts.push_back({{"destination", "/sys/fs/cgroup"}, {"type", "cgroup"}, {"source", "cgroup"},
                        {"options", {"nosuid", "noexec", "nodev", "relatime", "ro"}}});
      if (cgroupns)  // stacked on the first, as the conformance suite does
        mounts.push_back({{"destination", "/sys/fs/cgroup"}, {"type", "cgroup"}, {"source", "cgroup"},
                          {"options", {"nosuid", "noexec", "nodev", "relatime", "rw"}}});
      json nss = json::array();
      for (auto& n : c.cfg["linux"]["namespaces"])
        if (n["type"] != "cgroup") nss.push_back(n);
      if (cgroupns) nss.push_back({{"type", "cgroup"}});
      c.cfg["linux"]["namespaces"] = nss;
      c.cfg["linux"]["resources"]["memory"]["limit"] = 64 * 1024 * 1024;
      c.args({"sh", "-c",
              "echo limit=$(cat /sys/fs/cgroup/memory/memory.limit_in_bytes); "
              "grep -qx $$ /sys/fs/cgroup/memory/cgroup.procs && echo own-procs; "
              "mkdir /sys/fs/cgroup/new 2>/dev/null && echo mkdir-ok; "
              "echo ---; cat /proc/self/mountinfo"});
      auto r = c.run();
      INFO(r.out << r.err);
      REQUIRE(r.code == 0);
      CHECK(contains(r.out, "limit=67108864\n"));
      CHECK(contains(r.out, "own-procs\n"));
      // Read-only, or (stacked) a second tmpfs that is writable.
      CHECK(contains(r.out, "mkdir-ok") == cgroupns);
      auto m = parse_mountinfo(r.out.substr(r.out.find("---\n") + 4));
      auto* top = &mount_at(m, "/sys/fs/cgroup");
      CHECK(top->fstype == "tmpfs");
      CHECK(top->has_opt("mode=755"));
      CHECK(top->has_opt("nosuid"));
      CHECK(top->has_opt("noexec"));
      CHECK(top->has_opt("ro") != cgroupns);
      for (auto& h : hierarchies) {
        INFO(h);
        auto* e = &mount_at(m, h);
        CHECK(e->fstype == (h == "/sys/fs/cgroup/unified" ? "cgroup2" : "cgroup"));
        CHECK(e->has_opt("nosuid"));
        CHECK(e->has_opt("ro") != cgroupns);
      }
      auto* mem = &mount_at(m, "/sys/fs/cgroup/memory");
      // A bind shows the cgroup's host path as its root; a namespace hides it.
      CHECK(mem->root == (cgroupns ? "/" : "/husk-test/" + c.id));
    }
  }
}
