#include <sched.h>
#include <sys/mount.h>
#include <unistd.h>

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
