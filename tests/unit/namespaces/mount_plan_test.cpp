// plan_mount / plan_mounts: how prepare_rootfs will mount each spec.mounts
// entry, checked without root.
#include <sys/mount.h>

#include <catch2/catch.hpp>

#include "namespaces/namespaces.h"

using namespace husk;
using namespace husk::ns;
using Kind = MountStep::Kind;

namespace {

spec::Mount mnt(std::string dest, std::string type, std::string source, std::vector<std::string> opts) {
  return spec::Mount{std::move(dest), std::move(source), std::move(type), std::move(opts), {}, {}};
}

MountStep plan(const spec::Mount& m, MountHost host = {}) { return plan_mount(m, 0, host); }

MountHost v1_host(bool cgroup_ns) {
  MountHost h;
  h.cgroup_v1 = true;
  h.cgroup_ns = cgroup_ns;
  return h;
}

MountHost in_user_ns() {
  MountHost h;
  h.user_ns = true;
  return h;
}

}  // namespace

TEST_CASE("plan_mount: a filesystem mount keeps its flags, propagation and data") {
  auto s = plan_mount(mnt("/dev/pts", "devpts", "devpts",
                          {"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5", "rslave"}),
                      3, {});
  CHECK(s.kind == Kind::Filesystem);
  CHECK(s.index == 3);
  CHECK(s.what == "mounts[3] (/dev/pts)");
  CHECK(s.destination == "/dev/pts");
  CHECK(s.type == "devpts");
  CHECK(s.source == "devpts");
  CHECK(s.options.flags == (MS_NOSUID | MS_NOEXEC));
  CHECK(s.options.propagation == (MS_SLAVE | MS_REC));
  CHECK(s.options.data == "newinstance,ptmxmode=0666,mode=0620,gid=5");
  CHECK_FALSE(s.real_directory);
  CHECK_FALSE(s.inherit_mode);
  CHECK_FALSE(s.sysfs_fallback);
}

TEST_CASE("plan_mount: destinations are cleaned, relative ones are relative to /") {
  CHECK(plan(mnt("relative/dest", "tmpfs", "tmpfs", {})).destination == "/relative/dest");
  CHECK(plan(mnt("/a/../../etc", "tmpfs", "tmpfs", {})).destination == "/etc");
  CHECK(plan(mnt("//dev//shm/", "tmpfs", "shm", {})).destination == "/dev/shm");
  // Errors name the mount as the spec wrote it.
  CHECK(plan(mnt("relative/dest", "tmpfs", "tmpfs", {})).what == "mounts[0] (relative/dest)");
}

TEST_CASE("plan_mount: recursive attributes (rro, ratime, ...) are carried to the step") {
  auto s = plan(mnt("/data", "bind", "/srv", {"rbind", "rro", "rnosuid", "rnoatime", "rshared"}));
  CHECK(s.options.attr_set == (MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOATIME));
  CHECK(s.options.attr_clr == MOUNT_ATTR__ATIME);
  CHECK(s.options.propagation == (MS_SHARED | MS_REC));
  CHECK(s.options.flags == 0);
  // ratime goes back to the kernel default, relatime, for the whole tree.
  auto a = plan(mnt("/t", "tmpfs", "tmpfs", {"rnoatime", "ratime"}));
  CHECK(a.options.attr_set == MOUNT_ATTR_RELATIME);
  CHECK(a.options.attr_clr == MOUNT_ATTR__ATIME);
  auto w = plan(mnt("/t", "tmpfs", "tmpfs", {"rro", "rrw"}));
  CHECK(w.options.attr_set == 0);
  CHECK(w.options.attr_clr == MOUNT_ATTR_RDONLY);
}

TEST_CASE("plan_mount: a bind is the type \"bind\" or a bind/rbind option") {
  auto by_type = plan(mnt("/data", "bind", "/srv/data", {"ro"}));
  CHECK(by_type.kind == Kind::Bind);
  CHECK_FALSE(by_type.options.recursive_bind);
  CHECK(by_type.source == "/srv/data");
  CHECK(by_type.options.flags == MS_RDONLY);
  auto by_option = plan(mnt("/etc/resolv.conf", "none", "/etc/resolv.conf", {"rbind", "nosuid"}));
  CHECK(by_option.kind == Kind::Bind);
  CHECK(by_option.options.recursive_bind);
  CHECK(by_option.options.flags == MS_NOSUID);
  // An empty type is fine for a bind, and its source is never replaced.
  auto untyped = plan(mnt("/x", "", "/srv/x", {"bind"}));
  CHECK(untyped.kind == Kind::Bind);
  CHECK(untyped.source == "/srv/x");
  // tmpcopyup and an absent mode= mean nothing for a bind of a tmpfs.
  auto tmpfs_bind = plan(mnt("/run", "tmpfs", "/run", {"bind", "tmpcopyup"}));
  CHECK(tmpfs_bind.kind == Kind::Bind);
  CHECK_FALSE(tmpfs_bind.inherit_mode);
}

TEST_CASE("plan_mount: idmap/ridmap or uidMappings make an idmapped bind; idmap needs a bind") {
  CHECK(plan(mnt("/d", "bind", "/srv", {"rbind", "idmap"})).kind == Kind::Idmapped);
  auto r = plan(mnt("/d", "bind", "/srv", {"rbind", "ridmap"}));
  CHECK(r.kind == Kind::Idmapped);
  CHECK(r.options.recursive_idmap);
  spec::Mount mapped = mnt("/d", "none", "/srv", {"bind"});
  mapped.uid_mappings = {{0, 100000, 1000}};
  mapped.gid_mappings = {{0, 100000, 1000}};
  CHECK(plan(mapped).kind == Kind::Idmapped);
  CHECK_THROWS_WITH(plan(mnt("/d", "tmpfs", "tmpfs", {"idmap"})),
                    "mounts[0] (/d): idmap is only supported on bind mounts");
}

TEST_CASE("plan_mount: proc and sysfs only go on real directories, bound or not") {
  CHECK(plan(mnt("/proc", "proc", "proc", {})).real_directory);
  CHECK(plan(mnt("/sys", "sysfs", "sysfs", {"ro"})).real_directory);
  auto bound = plan(mnt("/proc", "proc", "/proc", {"rbind"}));
  CHECK(bound.kind == Kind::Bind);
  CHECK(bound.real_directory);
  CHECK_FALSE(plan(mnt("/tmp", "tmpfs", "tmpfs", {})).real_directory);
}

TEST_CASE("plan_mount: a tmpfs without mode= takes the mode of the directory it covers, as under runc") {
  CHECK(plan(mnt("/tmp", "tmpfs", "tmpfs", {"size=64k"})).inherit_mode);
  CHECK(plan(mnt("/tmp", "tmpfs", "tmpfs", {})).inherit_mode);
  CHECK_FALSE(plan(mnt("/tmp", "tmpfs", "tmpfs", {"size=64k", "mode=700"})).inherit_mode);
  CHECK_FALSE(plan(mnt("/tmp", "tmpfs", "tmpfs", {"mode=1777"})).inherit_mode);
  // Only a mode= option counts, not one that ends in "mode=".
  CHECK(plan(mnt("/tmp", "tmpfs", "tmpfs", {"xmode=1"})).inherit_mode);
  CHECK_FALSE(plan(mnt("/dev/pts", "devpts", "devpts", {})).inherit_mode);
}

TEST_CASE("plan_mount: an empty source is the filesystem type") {
  CHECK(plan(mnt("/tmp", "tmpfs", "", {})).source == "tmpfs");
  CHECK(plan(mnt("/dev/shm", "tmpfs", "shm", {})).source == "shm");
}

TEST_CASE("plan_mount: \"cgroup\" is cgroup2 without options on a unified host") {
  auto s = plan(mnt("/sys/fs/cgroup", "cgroup", "cgroup", {"nosuid", "noexec", "nodev", "relatime", "ro", "memory"}));
  CHECK(s.kind == Kind::Filesystem);
  CHECK(s.type == "cgroup2");
  CHECK(s.source == "cgroup");
  CHECK(s.options.data.empty());  // "memory" would be invalid for cgroup2
  CHECK(s.options.flags == (MS_NOSUID | MS_NOEXEC | MS_NODEV | MS_RELATIME | MS_RDONLY));
  CHECK(plan(mnt("/sys/fs/cgroup", "cgroup", "", {})).source == "cgroup2");
  CHECK(plan(mnt("/sys/fs/cgroup", "cgroup2", "cgroup2", {"nsdelegate"})).options.data == "nsdelegate");
}

TEST_CASE("plan_mount: \"cgroup\" on a v1/hybrid host is the tmpfs of hierarchies, fresh only in a cgroup namespace") {
  auto bound = plan(mnt("/sys/fs/cgroup", "cgroup", "cgroup", {"ro"}), v1_host(false));
  CHECK(bound.kind == Kind::CgroupV1);
  CHECK_FALSE(bound.cgroup_fresh);
  CHECK(bound.options.flags == MS_RDONLY);
  auto fresh = plan(mnt("/sys/fs/cgroup", "cgroup", "cgroup", {}), v1_host(true));
  CHECK(fresh.kind == Kind::CgroupV1);
  CHECK(fresh.cgroup_fresh);
  // Other filesystems are not affected by the host's cgroup version.
  CHECK(plan(mnt("/sys/fs/cgroup", "cgroup2", "cgroup2", {}), v1_host(false)).kind == Kind::Filesystem);
}

// A container husk gave no cgroup (rootless, nothing delegated) sits in its
// caller's, often each tree's root: its cgroup mounts show none of it.
TEST_CASE("plan_mount: without a cgroup of its own, a cgroup mount is an empty read-only tmpfs") {
  for (bool v1 : {false, true}) {
    for (const char* type : {"cgroup", "cgroup2"}) {
      MountHost host = v1_host(false);
      host.cgroup_v1 = v1;
      host.own_cgroup = false;
      auto s = plan(mnt("/sys/fs/cgroup", type, type, {"nosuid", "noexec", "nodev", "relatime", "rw"}), host);
      INFO(type << (v1 ? " on v1" : " on v2"));
      CHECK(s.kind == Kind::Filesystem);
      CHECK(s.type == "tmpfs");
      CHECK(s.source == "tmpfs");
      CHECK((s.options.flags & (MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)) == (MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC));
      CHECK(s.options.data == "mode=755");
    }
  }
}

TEST_CASE("plan_mount: sysfs falls back to a bind of the host's only in a user namespace") {
  CHECK(plan(mnt("/sys", "sysfs", "sysfs", {"ro"}), in_user_ns()).sysfs_fallback);
  CHECK_FALSE(plan(mnt("/sys", "sysfs", "sysfs", {"ro"})).sysfs_fallback);
  CHECK_FALSE(plan(mnt("/proc", "proc", "proc", {}), in_user_ns()).sysfs_fallback);
}

TEST_CASE("plan_mount: tmpcopyup only on a tmpfs") {
  auto s = plan(mnt("/run", "tmpfs", "tmpfs", {"tmpcopyup", "ro", "mode=755"}));
  CHECK(s.options.tmpcopyup);
  CHECK(s.options.flags == MS_RDONLY);  // the executor applies ro after the copy
  CHECK_THROWS_WITH(plan(mnt("/run", "proc", "proc", {"tmpcopyup"})),
                    "mounts[0] (/run): tmpcopyup is only for tmpfs mounts");
  // On a unified host a "cgroup" is a cgroup2 by then, and refused as well.
  CHECK_THROWS_WITH(plan(mnt("/sys/fs/cgroup", "cgroup", "cgroup", {"tmpcopyup"})),
                    Catch::Contains("tmpcopyup is only for tmpfs mounts"));
}

TEST_CASE("plan_mount: an empty destination or a non-bind mount without a type is refused") {
  CHECK_THROWS_WITH(plan_mount(mnt("", "tmpfs", "tmpfs", {}), 4, {}), "mounts[4].destination: must not be empty");
  CHECK_THROWS_WITH(plan_mount(mnt("/x", "", "/srv", {"ro"}), 2, {}),
                    "mounts[2] (/x): type is required for a non-bind mount");
}

TEST_CASE("plan_mounts: one step per spec.mounts entry, in order, the first bad one refused") {
  spec::Spec s;
  s.mounts = {mnt("/proc", "proc", "proc", {}), mnt("/data", "bind", "/srv", {"rbind"}),
              mnt("/sys/fs/cgroup", "cgroup", "cgroup", {})};
  auto steps = plan_mounts(s, v1_host(true));
  REQUIRE(steps.size() == 3);
  CHECK(steps[0].index == 0);
  CHECK(steps[0].kind == Kind::Filesystem);
  CHECK(steps[1].index == 1);
  CHECK(steps[1].kind == Kind::Bind);
  CHECK(steps[2].index == 2);
  CHECK(steps[2].kind == Kind::CgroupV1);
  CHECK(plan_mounts(spec::Spec{}, {}).empty());
  s.mounts.push_back(mnt("/y", "", "", {}));
  CHECK_THROWS_WITH(plan_mounts(s, {}), "mounts[3] (/y): type is required for a non-bind mount");
}
