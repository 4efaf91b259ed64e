#include <catch2/catch.hpp>

#include "base/error.h"
#include "launch/lsm.h"
#include "namespaces/namespaces.h"

using namespace husk;
using namespace husk::rt;

namespace {

std::string error_of(const lsm::HostLsm& host, const spec::Process& p, const spec::Linux* l) {
  try {
    lsm::check_supported(host, p, l);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

spec::Mount mount(const std::string& type, std::vector<std::string> options = {}) {
  spec::Mount m;
  m.destination = "/x";
  m.source = type;
  m.type = type;
  m.options = std::move(options);
  return m;
}

}  // namespace

TEST_CASE("lsm: a label the host cannot apply is an error naming the field", "[lsm]") {
  spec::Process p;
  spec::Linux l;
  const lsm::HostLsm none, aa{true, false}, se{false, true};
  CHECK(error_of(none, p, &l).empty());
  CHECK(error_of(none, p, nullptr).empty());

  p.apparmor_profile = "husk-test";
  CHECK(error_of(none, p, &l) == "process.apparmorProfile: AppArmor is not enabled on this host");
  CHECK(error_of(se, p, &l) == "process.apparmorProfile: AppArmor is not enabled on this host");
  CHECK(error_of(aa, p, &l).empty());

  p = {};
  p.selinux_label = "system_u:system_r:container_t:s0";
  CHECK(error_of(aa, p, &l) == "process.selinuxLabel: SELinux is not enabled on this host");
  CHECK(error_of(se, p, &l).empty());

  p = {};
  l.mount_label = "system_u:object_r:container_file_t:s0:c1,c2";
  CHECK(error_of(aa, p, &l) == "linux.mountLabel: SELinux is not enabled on this host");
  CHECK(error_of(se, p, &l).empty());
}

TEST_CASE("lsm: values the kernel would cut or mount data would split are refused", "[lsm]") {
  const lsm::HostLsm both{true, true};
  spec::Process p;
  p.apparmor_profile = std::string("husk\0unconfined", 15);
  CHECK(error_of(both, p, nullptr) == "process.apparmorProfile: must not contain a NUL byte");
  p = {};
  p.selinux_label = std::string("a\0b", 3);
  CHECK(error_of(both, p, nullptr) == "process.selinuxLabel: must not contain a NUL byte");
  p = {};
  spec::Linux l;
  l.mount_label = "a\",mode=777,\"b";
  CHECK(error_of(both, p, &l) == "linux.mountLabel: must not contain '\"'");
}

TEST_CASE("lsm: AppArmor's exec attr and text", "[lsm]") {
  CHECK(lsm::apparmor_exec_text("husk-test") == "exec husk-test");
  CHECK(std::string(lsm::apparmor_exec_attr(true)) == "attr/apparmor/exec");
  CHECK(std::string(lsm::apparmor_exec_attr(false)) == "attr/exec");
}

TEST_CASE("lsm: which mounts take linux.mountLabel", "[lsm]") {
  CHECK(lsm::takes_mount_label(mount("tmpfs", {"nosuid"})));
  CHECK(lsm::takes_mount_label(mount("devpts", {"newinstance"})));
  CHECK(lsm::takes_mount_label(mount("shm")));
  for (const char* t : {"proc", "sysfs", "mqueue", "cgroup", "bind"}) {
    INFO(t);
    CHECK_FALSE(lsm::takes_mount_label(mount(t)));
  }
  CHECK_FALSE(lsm::takes_mount_label(mount("none", {"rbind", "ro"})));
  CHECK_FALSE(lsm::takes_mount_label(mount("tmpfs", {"bind"})));
  CHECK_FALSE(lsm::takes_mount_label(mount("ext4", {"idmap"})));
}

TEST_CASE("lsm: with_mount_label adds a quoted context= to those mounts only", "[lsm]") {
  spec::Spec s;
  s.linux_.emplace();
  s.mounts = {mount("proc"), mount("tmpfs", {"nosuid", "mode=755"}), mount("bind", {"rbind"}), mount("devpts")};
  CHECK(lsm::with_mount_label(s).mounts[1].options == s.mounts[1].options);  // no label: unchanged

  s.linux_->mount_label = "system_u:object_r:container_file_t:s0:c1,c2";
  spec::Spec out = lsm::with_mount_label(s);
  const std::string ctx = "context=\"system_u:object_r:container_file_t:s0:c1,c2\"";
  CHECK(out.mounts[0].options.empty());
  CHECK(out.mounts[1].options == std::vector<std::string>{"nosuid", "mode=755", ctx});
  CHECK(out.mounts[2].options == std::vector<std::string>{"rbind"});
  CHECK(out.mounts[3].options == std::vector<std::string>{ctx});
  // It ends up in the filesystem's data, the comma inside the quotes included.
  CHECK(husk::spec::parse_mount_options(out.mounts[1].options).data == "mode=755," + ctx);
}
