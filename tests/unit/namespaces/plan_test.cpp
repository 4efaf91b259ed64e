#include <sched.h>
#include <sys/mount.h>
#include <unistd.h>

#include <algorithm>
#include <functional>

#include <catch2/catch.hpp>

#include "namespaces/namespaces.h"

using namespace husk;
using namespace husk::ns;

namespace {

spec::Linux linux_with(std::vector<spec::Namespace> nss) {
  spec::Linux l;
  l.namespaces = std::move(nss);
  return l;
}

spec::Spec spec_with_sysctl(std::vector<spec::Namespace> nss, std::map<std::string, std::string> sysctl) {
  spec::Spec s;
  s.linux_ = linux_with(std::move(nss));
  s.linux_->sysctl = std::move(sysctl);
  return s;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("clone_flag maps every spec namespace type") {
  CHECK(clone_flag("pid") == CLONE_NEWPID);
  CHECK(clone_flag("network") == CLONE_NEWNET);
  CHECK(clone_flag("mount") == CLONE_NEWNS);
  CHECK(clone_flag("ipc") == CLONE_NEWIPC);
  CHECK(clone_flag("uts") == CLONE_NEWUTS);
  CHECK(clone_flag("user") == CLONE_NEWUSER);
  CHECK(clone_flag("cgroup") == CLONE_NEWCGROUP);
  CHECK(clone_flag("time") == 0x80);
  CHECK_THROWS_WITH(clone_flag("net"), Catch::Contains("unknown namespace type \"net\""));
}

TEST_CASE("plan_namespaces: new namespaces become clone flags, paths become ordered joins") {
  auto l = linux_with({{"mount", "/proc/9/ns/mnt"},
                       {"pid", ""},
                       {"network", "/var/run/netns/x"},
                       {"user", "/proc/9/ns/user"},
                       {"uts", ""},
                       {"ipc", "/proc/9/ns/ipc"},
                       {"cgroup", "/proc/9/ns/cgroup"},
                       {"time", "/proc/9/ns/time"}});
  NamespacePlan p = plan_namespaces(l);
  CHECK(p.clone_flags == (CLONE_NEWPID | CLONE_NEWUTS));
  std::vector<std::string> order;
  for (const auto& j : p.joins) order.push_back(j.type);
  CHECK(order == std::vector<std::string>{"user", "ipc", "network", "cgroup", "time", "mount"});
  CHECK(p.joins.front().path == "/proc/9/ns/user");
  CHECK(p.joins.front().flag == CLONE_NEWUSER);
  CHECK(p.joins.back().flag == CLONE_NEWNS);
  CHECK(p.joins[2].path == "/var/run/netns/x");
}

TEST_CASE("plan_namespaces: no namespaces, and unknown types are refused") {
  NamespacePlan p = plan_namespaces(spec::Linux{});
  CHECK(p.clone_flags == 0);
  CHECK(p.joins.empty());
  CHECK_THROWS_AS(plan_namespaces(linux_with({{"bogus", ""}})), Error);
}

TEST_CASE("namespace_kinds: every type once, in the join order, with its /proc/<pid>/ns file") {
  std::vector<std::string> order;
  for (const auto& k : namespace_kinds()) {
    order.emplace_back(k.type);
    CHECK(clone_flag(std::string(k.type)) == k.flag);
    std::string file = "/proc/self/ns/" + std::string(k.proc_file);
    if (k.type == "time" && ::access(file.c_str(), F_OK) != 0) continue;  // kernel before 5.6
    CHECK(::access(file.c_str(), F_OK) == 0);
  }
  CHECK(order == std::vector<std::string>{"user", "ipc", "uts", "network", "pid", "cgroup", "time", "mount"});
}

TEST_CASE("id_map_text writes one line per mapping") {
  CHECK(id_map_text({}).empty());
  CHECK(id_map_text({{0, 1000, 1}, {1, 100000, 65536}}) == "0 1000 1\n1 100000 65536\n");
}

TEST_CASE("parse_mount_options: flags are set and cleared in order") {
  auto mo = parse_mount_options({"nosuid", "noexec", "nodev", "ro"});
  CHECK(mo.flags == (MS_NOSUID | MS_NOEXEC | MS_NODEV | MS_RDONLY));
  CHECK(mo.data.empty());
  CHECK_FALSE(mo.bind);

  CHECK(parse_mount_options({"ro", "rw"}).flags == 0);
  CHECK(parse_mount_options({"rw", "ro"}).flags == MS_RDONLY);
  CHECK(parse_mount_options({"nosuid", "suid", "nodev", "dev", "noexec", "exec"}).flags == 0);
  CHECK(parse_mount_options({"defaults"}).flags == 0);
  CHECK(parse_mount_options({"sync"}).flags == MS_SYNCHRONOUS);
  CHECK(parse_mount_options({"sync", "async"}).flags == 0);
  CHECK(parse_mount_options({"dirsync", "remount", "mand"}).flags == (MS_DIRSYNC | MS_REMOUNT | MS_MANDLOCK));
  CHECK(parse_mount_options({"mand", "nomand"}).flags == 0);
  CHECK(parse_mount_options({"noatime", "nodiratime"}).flags == (MS_NOATIME | MS_NODIRATIME));
  CHECK(parse_mount_options({"noatime", "atime", "nodiratime", "diratime"}).flags == 0);
  CHECK(parse_mount_options({"relatime", "strictatime"}).flags == (MS_RELATIME | MS_STRICTATIME));
  CHECK(parse_mount_options({"relatime", "norelatime", "strictatime", "nostrictatime"}).flags == 0);
  CHECK(parse_mount_options({"lazytime"}).flags == MS_LAZYTIME);
  CHECK(parse_mount_options({"lazytime", "nolazytime"}).flags == 0);
  CHECK(parse_mount_options({"nosymfollow"}).flags == MS_NOSYMFOLLOW);
}

TEST_CASE("parse_mount_options: bind and rbind") {
  auto b = parse_mount_options({"bind", "ro"});
  CHECK(b.bind);
  CHECK_FALSE(b.recursive_bind);
  CHECK(b.flags == MS_RDONLY);
  auto r = parse_mount_options({"rbind"});
  CHECK(r.bind);
  CHECK(r.recursive_bind);
  // MS_BIND is not left in flags: bind mounts are done with open_tree, not mount(2) flags.
  CHECK((r.flags & MS_BIND) == 0);
}

TEST_CASE("parse_mount_options: propagation, last one wins") {
  CHECK(parse_mount_options({"shared"}).propagation == MS_SHARED);
  CHECK(parse_mount_options({"rshared"}).propagation == (MS_SHARED | MS_REC));
  CHECK(parse_mount_options({"slave"}).propagation == MS_SLAVE);
  CHECK(parse_mount_options({"rslave"}).propagation == (MS_SLAVE | MS_REC));
  CHECK(parse_mount_options({"private"}).propagation == MS_PRIVATE);
  CHECK(parse_mount_options({"rprivate"}).propagation == (MS_PRIVATE | MS_REC));
  CHECK(parse_mount_options({"unbindable"}).propagation == MS_UNBINDABLE);
  CHECK(parse_mount_options({"runbindable"}).propagation == (MS_UNBINDABLE | MS_REC));
  CHECK(parse_mount_options({"rshared", "private"}).propagation == MS_PRIVATE);
  CHECK(parse_mount_options({"rbind", "rprivate"}).flags == 0);
}

TEST_CASE("parse_mount_options: recursive attributes") {
  auto m = parse_mount_options({"rro", "rnosuid", "rnodev", "rnoexec", "rnosymfollow", "rnodiratime"});
  CHECK(m.attr_set == (MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC |
                       MOUNT_ATTR_NOSYMFOLLOW | MOUNT_ATTR_NODIRATIME));
  CHECK(m.attr_clr == 0);
  CHECK(m.flags == 0);

  auto c = parse_mount_options({"rrw", "rsuid", "rdev", "rexec", "rsymfollow", "rdiratime"});
  CHECK(c.attr_set == 0);
  CHECK(c.attr_clr == (MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC |
                       MOUNT_ATTR_NOSYMFOLLOW | MOUNT_ATTR_NODIRATIME));

  // Later options override earlier ones for the same attribute.
  auto o = parse_mount_options({"rro", "rrw"});
  CHECK(o.attr_set == 0);
  CHECK(o.attr_clr == MOUNT_ATTR_RDONLY);
  auto o2 = parse_mount_options({"rrw", "rro"});
  CHECK(o2.attr_set == MOUNT_ATTR_RDONLY);
  CHECK(o2.attr_clr == 0);
}

TEST_CASE("parse_mount_options: atime attributes always clear the whole atime field") {
  // The kernel rejects a partial MOUNT_ATTR__ATIME in attr_clr.
  for (const char* o : {"rnoatime", "rstrictatime", "rrelatime", "ratime", "rnostrictatime"}) {
    auto m = parse_mount_options({o});
    INFO(o);
    CHECK(m.attr_clr == MOUNT_ATTR__ATIME);
  }
  CHECK(parse_mount_options({"rnoatime"}).attr_set == MOUNT_ATTR_NOATIME);
  CHECK(parse_mount_options({"rstrictatime"}).attr_set == MOUNT_ATTR_STRICTATIME);
  CHECK(parse_mount_options({"rnoatime", "rrelatime"}).attr_set == MOUNT_ATTR_RELATIME);
  CHECK(parse_mount_options({"rnoatime", "ratime"}).attr_set == MOUNT_ATTR_RELATIME);
}

TEST_CASE("parse_mount_options: unknown options are filesystem data, in order") {
  auto m = parse_mount_options({"nosuid", "mode=755", "strictatime", "size=65536k"});
  CHECK(m.data == "mode=755,size=65536k");
  CHECK(m.flags == (MS_NOSUID | MS_STRICTATIME));
  CHECK(parse_mount_options({"newinstance", "ptmxmode=0666", "mode=0620", "gid=5"}).data ==
        "newinstance,ptmxmode=0666,mode=0620,gid=5");
}

TEST_CASE("parse_mount_options: idmap and tmpcopyup") {
  // Consumed as options, never passed to mount(2) as data.
  CHECK(parse_mount_options({"idmap"}).data.empty());
  CHECK(parse_mount_options({"ridmap"}).data.empty());
  CHECK_FALSE(parse_mount_options({"rbind", "idmap"}).recursive_idmap);
  CHECK(parse_mount_options({"rbind", "ridmap"}).recursive_idmap);
  CHECK(parse_mount_options({"tmpcopyup", "mode=755"}).tmpcopyup);
  CHECK(parse_mount_options({"tmpcopyup", "mode=755"}).data == "mode=755");
  CHECK_FALSE(parse_mount_options({"mode=755"}).tmpcopyup);
}

TEST_CASE("rootfs_propagation_flag") {
  CHECK(rootfs_propagation_flag("") == (MS_SLAVE | MS_REC));
  CHECK(rootfs_propagation_flag("rslave") == (MS_SLAVE | MS_REC));
  CHECK(rootfs_propagation_flag("slave") == MS_SLAVE);
  CHECK(rootfs_propagation_flag("rshared") == (MS_SHARED | MS_REC));
  CHECK(rootfs_propagation_flag("shared") == MS_SHARED);
  CHECK(rootfs_propagation_flag("private") == MS_PRIVATE);
  CHECK(rootfs_propagation_flag("rprivate") == (MS_PRIVATE | MS_REC));
  CHECK(rootfs_propagation_flag("unbindable") == MS_UNBINDABLE);
  CHECK(rootfs_propagation_flag("runbindable") == (MS_UNBINDABLE | MS_REC));
  CHECK_THROWS_WITH(rootfs_propagation_flag("bogus"), Catch::Contains("linux.rootfsPropagation"));
}

TEST_CASE("clean_path never climbs above /") {
  CHECK(clean_path("/") == "/");
  CHECK(clean_path("") == "/");
  CHECK(clean_path("//a///b/") == "/a/b");
  CHECK(clean_path("/a/./b/.") == "/a/b");
  CHECK(clean_path("/a/b/../c") == "/a/c");
  CHECK(clean_path("/a/../../etc") == "/etc");
  CHECK(clean_path("/../../../tmp/escape") == "/tmp/escape");
  CHECK(clean_path("/..") == "/");
  CHECK(clean_path("a/b") == "/a/b");
  CHECK(clean_path("/a/..b/c..") == "/a/..b/c..");
}

TEST_CASE("sysctl_namespace classifies keys") {
  CHECK(sysctl_namespace("net.ipv4.ip_forward") == "network");
  CHECK(sysctl_namespace("kernel.msgmax") == "ipc");
  CHECK(sysctl_namespace("kernel.sem") == "ipc");
  CHECK(sysctl_namespace("kernel.shmmax") == "ipc");
  CHECK(sysctl_namespace("kernel.shm_rmid_forced") == "ipc");
  CHECK(sysctl_namespace("fs.mqueue.queues_max") == "ipc");
  CHECK(sysctl_namespace("kernel.hostname") == "uts");
  CHECK(sysctl_namespace("kernel.domainname") == "uts");
  CHECK(sysctl_namespace("vm.swappiness") == "");
  CHECK(sysctl_namespace("kernel.pid_max") == "");
  CHECK(sysctl_namespace("network.x") == "");
}

TEST_CASE("check_sysctl accepts namespaced keys the container isolates") {
  CHECK_NOTHROW(check_sysctl(spec::Spec{}));
  CHECK_NOTHROW(check_sysctl(spec_with_sysctl(
      {{"network", ""}, {"ipc", ""}, {"uts", ""}},
      {{"net.ipv4.ip_forward", "1"}, {"kernel.shmmax", "1"}, {"fs.mqueue.msg_max", "10"},
       {"kernel.domainname", "x"}})));
  // A joined namespace is the container's own as far as this pure check goes.
  CHECK_NOTHROW(check_sysctl(spec_with_sysctl({{"network", "/var/run/netns/a"}}, {{"net.core.somaxconn", "1"}})));
}

TEST_CASE("check_sysctl refuses host-global and unisolated keys") {
  CHECK(error_of([] { check_sysctl(spec_with_sysctl({{"network", ""}}, {{"vm.swappiness", "0"}})); }) ==
        "linux.sysctl: \"vm.swappiness\" is not namespaced; refusing to change it for the whole host");
  CHECK_THROWS_WITH(check_sysctl(spec_with_sysctl({{"ipc", ""}}, {{"net.ipv4.ip_forward", "1"}})),
                    Catch::Contains("needs its own network namespace"));
  CHECK_THROWS_WITH(check_sysctl(spec_with_sysctl({{"network", ""}}, {{"kernel.msgmax", "1"}})),
                    Catch::Contains("needs its own ipc namespace"));
  CHECK_THROWS_WITH(check_sysctl(spec_with_sysctl({{"network", ""}}, {{"kernel.hostname", "x"}})),
                    Catch::Contains("needs its own uts namespace"));
}

TEST_CASE("check_sysctl refuses keys that could leave /proc/sys") {
  for (const char* k : {"net/ipv4/ip_forward", "net..ipv4", "net.ipv4.conf.all.", ".net.x", "", "net.a/../../b"}) {
    INFO(k);
    CHECK_THROWS_WITH(check_sysctl(spec_with_sysctl({{"network", ""}}, {{k, "1"}})),
                      Catch::Contains("is not a valid sysctl name"));
  }
}

TEST_CASE("known_mount_options lists only options parse_mount_options understands") {
  auto all = known_mount_options();
  CHECK(all.size() > 60);
  for (const auto& o : all) {
    INFO(o);
    CHECK(parse_mount_options({o}).data.empty());
  }
  CHECK(std::find(all.begin(), all.end(), "rro") != all.end());
  CHECK(std::find(all.begin(), all.end(), "tmpcopyup") != all.end());
}
