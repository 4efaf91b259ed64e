// LSM labels: process.apparmorProfile, process.selinuxLabel, linux.mountLabel,
// exec --apparmor / --process-label. On a host whose kernel enforces no
// AppArmor (or SELinux) a label must fail create/exec with an error naming
// the field and leave nothing behind; with AppArmor (test-lsm-vm, next to
// this file, boots one) a profile loaded here must confine the container's
// process, checked from the host through /proc/<pid>/attr and by what it may
// read; with SELinux (test-lsm-vm selinux: a policy loaded, permissive) the
// labels must be the ones the host sees on the processes and mounts.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <filesystem>
#include <optional>

#include "harness.h"
#include "skip.h"

using namespace hit;
namespace fs = std::filesystem;

namespace {

bool host_apparmor() {
  struct stat st;
  if (::stat("/sys/kernel/security/apparmor", &st) != 0) return false;
  try {
    return read_file("/sys/module/apparmor/parameters/enabled").rfind('Y', 0) == 0;
  } catch (const std::exception&) {
    return false;
  }
}

// An attr or xattr value without the NUL SELinux ends it with.
std::string label_text(std::string s) {
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return trim(s);
}

// As husk decides: selinuxfs mounted and a policy loaded (a process's label
// is "kernel" until then).
bool host_selinux() {
  if (!fs::exists("/sys/fs/selinux/enforce")) return false;
  try {
    return label_text(read_file("/proc/self/attr/current")) != "kernel";
  } catch (const std::exception&) {
    return false;
  }
}

std::string apparmor_parser() {
  for (const char* p : {"/usr/sbin/apparmor_parser", "/sbin/apparmor_parser"})
    if (::access(p, X_OK) == 0) return p;
  return "";
}

// Why the AppArmor tests cannot run here, or "".
std::string apparmor_missing() {
  if (!host_apparmor())
    return "AppArmor is not enabled on this host "
           "(tests/integration/runtime/test-lsm-vm BUILD apparmor runs these in a VM)";
  if (apparmor_parser().empty()) return "apparmor_parser is not installed (scripts/setup installs it)";
  return "";
}

const char* kProfile = "husk-it-deny";
const char* kSecret = "/husk-it-secret";

// A profile that allows everything but reading kSecret, loaded (replaced)
// for the test's lifetime.
struct LoadedProfile {
  TempDir dir{"husk-it-aa-"};
  std::string file = dir.path + "/profile";
  Result loaded;
  LoadedProfile() {
    write_file(file, std::string("profile ") + kProfile +
                         " flags=(attach_disconnected,mediate_deleted) {\n"
                         "  file,\n  capability,\n  network,\n  signal,\n  ptrace,\n  unix,\n"
                         "  mount,\n  umount,\n  pivot_root,\n"
                         "  deny " + kSecret + " r,\n}\n");
    loaded = run({apparmor_parser(), "-r", file});
  }
  ~LoadedProfile() { run({apparmor_parser(), "-R", file}); }
};

// The current label of a host pid, as AppArmor shows it ("name (enforce)").
std::string label_of(int pid) {
  std::string base = "/proc/" + std::to_string(pid) + "/attr/";
  return trim(read_file(fs::exists(base + "apparmor/current") ? base + "apparmor/current" : base + "current"));
}

void secret_in(const Container& c) { write_file(c.rootfs + kSecret, "top secret\n"); }

// The loaded policy accepts `ctx` (selinuxfs validates what is written to it).
bool selinux_valid(const std::string& ctx) {
  int fd = ::open("/sys/fs/selinux/context", O_RDWR | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = ::write(fd, ctx.data(), ctx.size()) == static_cast<ssize_t>(ctx.size());
  ::close(fd);
  return ok;
}

std::string policy_dir() {
  std::string type = "default";
  try {
    for (auto& l : lines(read_file("/etc/selinux/config")))
      if (l.rfind("SELINUXTYPE=", 0) == 0) type = trim(l.substr(12));
  } catch (const std::exception&) {
  }
  return "/etc/selinux/" + type;
}

// A container context of the loaded policy, read from the policy's own
// lists: lxc_contexts' `key` (container_t, a module not every policy has),
// then `virt_file` (svirt_t); its level replaced by s0:<cats> when the
// policy has MLS/MCS, so the label has a comma to pass intact. "" if none.
std::string policy_context(const std::string& key, const std::string& virt_file, const std::string& cats) {
  std::vector<std::string> candidates;
  try {
    for (auto& l : lines(read_file(policy_dir() + "/contexts/lxc_contexts"))) {
      auto eq = l.find('=');
      if (eq == std::string::npos || trim(l.substr(0, eq)) != key) continue;
      std::string v = trim(l.substr(eq + 1));
      if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
      candidates.push_back(v);
    }
  } catch (const std::exception&) {
  }
  try {
    for (auto& l : lines(read_file(policy_dir() + "/contexts/" + virt_file))) candidates.push_back(trim(l));
  } catch (const std::exception&) {
  }
  bool mls = false;
  try {
    mls = trim(read_file("/sys/fs/selinux/mls")) == "1";
  } catch (const std::exception&) {
  }
  for (auto c : candidates) {
    if (mls) {
      // user:role:type:level
      size_t p = std::string::npos;
      for (int i = 0; i < 3; ++i)
        if ((p = c.find(':', p + 1)) == std::string::npos) break;
      if (p == std::string::npos) continue;
      c = c.substr(0, p) + ":s0:" + cats;
    }
    if (selinux_valid(c)) return c;
  }
  return "";
}

std::string process_context(const std::string& cats) {
  return policy_context("process", "virtual_domain_context", cats);
}
std::string file_context(const std::string& cats) { return policy_context("file", "virtual_image_context", cats); }

// Why the SELinux tests cannot run here, or "".
std::string selinux_missing() {
  if (!host_selinux())
    return "SELinux is not enabled on this host "
           "(tests/integration/runtime/test-lsm-vm BUILD selinux runs these in a VM)";
  if (process_context("c1,c2").empty() || file_context("c1,c2").empty())
    return "the loaded policy (" + policy_dir() + ") has no container context husk's tests know";
  return "";
}

std::string selinux_label_of(int pid) {
  return label_text(read_file("/proc/" + std::to_string(pid) + "/attr/current"));
}

// The security.selinux xattr of `path`, "" if none.
std::string selinux_xattr(const std::string& path) {
  char buf[512];
  ssize_t n = ::getxattr(path.c_str(), "security.selinux", buf, sizeof buf);
  return n < 0 ? "" : label_text(std::string(buf, static_cast<size_t>(n)));
}

}  // namespace

TEST_CASE("lsm: a label this host cannot apply fails create, naming the field, and leaves nothing",
          "[lsm][dropin]") {
  struct Field {
    const char* name;
    bool host_has;
    void (*set)(json&);
  };
  const Field fields[] = {
      {"process.apparmorProfile", host_apparmor(), [](json& c) { c["process"]["apparmorProfile"] = "husk-it-p"; }},
      {"process.selinuxLabel", host_selinux(),
       [](json& c) { c["process"]["selinuxLabel"] = "system_u:system_r:container_t:s0"; }},
      {"linux.mountLabel", host_selinux(),
       [](json& c) { c["linux"]["mountLabel"] = "system_u:object_r:container_file_t:s0"; }},
  };
  for (const auto& f : fields) {
    INFO(f.name);
    if (f.host_has) {
      husk_test::record_skip(std::string(f.name) + ": this host has the LSM, the error path cannot be shown");
      continue;
    }
    Container c("lsm-nohost");
    f.set(c.cfg);
    c.args({"sh", "-c", "echo ran > /ran"});
    for (bool use_run : {false, true}) {
      auto r = use_run ? c.run() : c.create();
      INFO(r.out << r.err);
      CHECK(r.code != 0);
      // runc fails too, later and in other words (a write or mount EINVAL).
      if (!runtime_is_runc()) {
        CHECK(contains(r.err, f.name));
        CHECK(contains(r.err, "not enabled on this host"));
      }
      CHECK_FALSE(fs::exists(c.rootfs + "/ran"));
      CHECK(leftovers(c).empty());
    }
  }
}

TEST_CASE("lsm: exec with a label this host cannot apply fails, naming the field", "[lsm][dropin]") {
  if (host_apparmor()) HUSK_SKIP("AppArmor is enabled on this host, the error path cannot be shown");
  Container c("lsm-nohost-exec");
  c.start_process({"sleep", "60"});
  auto flag = c.rt({"exec", "--apparmor", "husk-it-p", c.id, "sh", "-c", "echo ran > /ran"});
  INFO(flag.out << flag.err);
  CHECK(flag.code != 0);
  if (!runtime_is_runc()) CHECK(contains(flag.err, "process.apparmorProfile: AppArmor is not enabled on this host"));
  json proc = c.cfg["process"];
  proc["args"] = {"sh", "-c", "echo ran > /ran"};
  proc["apparmorProfile"] = "husk-it-p";
  write_file(c.bundle + "/process.json", proc.dump());
  auto file = c.rt({"exec", "--process", c.bundle + "/process.json", c.id});
  INFO(file.out << file.err);
  CHECK(file.code != 0);
  if (!runtime_is_runc()) CHECK(contains(file.err, "process.apparmorProfile: AppArmor is not enabled on this host"));
  CHECK_FALSE(fs::exists(c.rootfs + "/ran"));
  CHECK(c.status() == "running");
}

TEST_CASE("lsm: features claims AppArmor and SELinux support, the host's state in annotations",
          "[lsm][husk-only]") {
  auto r = run({runtime(), "features"});
  INFO(r.err);
  REQUIRE(r.ok());
  json f = json::parse(r.out);
  // features-linux.md: "Irrelevant to the availability of AppArmor on the host operating system."
  CHECK(f.at("linux").at("apparmor").at("enabled") == true);
  CHECK(f.at("linux").at("selinux").at("enabled") == true);
  CHECK(f.at("annotations").at("org.husk.apparmor.host") == (host_apparmor() ? "enabled" : "not enabled"));
  CHECK(f.at("annotations").at("org.husk.selinux.host") == (host_selinux() ? "enabled" : "not enabled"));
}

TEST_CASE("lsm: process.apparmorProfile confines the container's process", "[lsm][dropin]") {
  if (auto why = apparmor_missing(); !why.empty()) HUSK_SKIP(why);
  LoadedProfile prof;
  INFO(prof.loaded.out << prof.loaded.err);
  REQUIRE(prof.loaded.ok());

  Container plain("aa-plain");
  secret_in(plain);
  plain.args({"cat", kSecret});
  auto r0 = plain.run();
  INFO(r0.err);
  CHECK(r0.code == 0);
  CHECK(r0.out == "top secret\n");

  Container c("aa-deny");
  secret_in(c);
  c.cfg["process"]["apparmorProfile"] = kProfile;
  c.args({"cat", kSecret});
  auto r = c.run();
  INFO(r.out << r.err);
  CHECK(r.code != 0);
  CHECK(contains(r.err, "Permission denied"));
  CHECK_FALSE(contains(r.out, "top secret"));

  // The init runs under the profile, as the host sees it.
  Container s("aa-label");
  s.cfg["process"]["apparmorProfile"] = kProfile;
  int pid = s.start_process({"sleep", "60"});
  CHECK(label_of(pid) == std::string(kProfile) + " (enforce)");
}

TEST_CASE("lsm: process.apparmorProfile confines a user-namespaced container", "[lsm][dropin][userns]") {
  if (auto why = apparmor_missing(); !why.empty()) HUSK_SKIP(why);
  LoadedProfile prof;
  INFO(prof.loaded.out << prof.loaded.err);
  REQUIRE(prof.loaded.ok());
  Container c("aa-userns", true);
  c.cfg["linux"]["namespaces"].push_back({{"type", "user"}});
  c.cfg["linux"]["uidMappings"] = json::array({{{"containerID", 0}, {"hostID", 100000}, {"size", 65536}}});
  c.cfg["linux"]["gidMappings"] = json::array({{{"containerID", 0}, {"hostID", 100000}, {"size", 65536}}});
  auto& mounts = c.cfg["mounts"];
  for (auto it = mounts.begin(); it != mounts.end();) it = (*it)["type"] == "cgroup" ? mounts.erase(it) : it + 1;
  secret_in(c);
  REQUIRE(run({"chown", "-R", "-h", "100000:100000", c.rootfs}).ok());
  ::chmod(c.bundle.c_str(), 0755);
  c.cfg["process"]["apparmorProfile"] = kProfile;
  c.args({"sh", "-c", "cat /proc/self/attr/current; cat " + std::string(kSecret)});
  auto r = c.run();
  INFO(r.out << r.err);
  CHECK(r.code != 0);
  CHECK(contains(r.out, std::string(kProfile) + " (enforce)"));
  CHECK_FALSE(contains(r.out, "top secret"));
}

TEST_CASE("lsm: exec --apparmor and process.json's apparmorProfile confine the exec'd process", "[lsm][dropin]") {
  if (auto why = apparmor_missing(); !why.empty()) HUSK_SKIP(why);
  LoadedProfile prof;
  INFO(prof.loaded.out << prof.loaded.err);
  REQUIRE(prof.loaded.ok());
  Container c("aa-exec");
  secret_in(c);
  int init = c.start_process({"sleep", "60"});
  CHECK(contains(label_of(init), "unconfined"));

  auto open = c.rt({"exec", c.id, "cat", kSecret});
  INFO(open.err);
  CHECK(open.out == "top secret\n");
  auto denied = c.rt({"exec", "--apparmor", kProfile, c.id, "cat", kSecret});
  INFO(denied.out << denied.err);
  CHECK(denied.code != 0);
  CHECK(contains(denied.err, "Permission denied"));

  std::string pf = c.bundle + "/exec.pid";
  auto d = c.rt({"exec", "-d", "--pid-file", pf, "--apparmor", kProfile, c.id, "sleep", "60"});
  INFO(d.err);
  REQUIRE(d.ok());
  CHECK(label_of(std::stoi(read_file(pf))) == std::string(kProfile) + " (enforce)");

  json proc = c.cfg["process"];
  proc["args"] = {"cat", kSecret};
  proc["apparmorProfile"] = kProfile;
  write_file(c.bundle + "/process.json", proc.dump());
  auto file = c.rt({"exec", "--process", c.bundle + "/process.json", c.id});
  INFO(file.out << file.err);
  CHECK(file.code != 0);
  CHECK(contains(file.err, "Permission denied"));
}

TEST_CASE("lsm: an exec'd process.json without apparmorProfile keeps the container's profile", "[lsm][dropin]") {
  if (auto why = apparmor_missing(); !why.empty()) HUSK_SKIP(why);
  LoadedProfile prof;
  INFO(prof.loaded.out << prof.loaded.err);
  REQUIRE(prof.loaded.ok());
  Container c("aa-exec-inherit");
  secret_in(c);
  c.cfg["process"]["apparmorProfile"] = kProfile;
  c.start_process({"sleep", "60"});
  // What containerd's shim passes: a process.json of its own, here one without the field.
  json proc = c.cfg["process"];
  proc.erase("apparmorProfile");
  proc["args"] = {"cat", kSecret};
  write_file(c.bundle + "/process.json", proc.dump());
  auto file = c.rt({"exec", "--process", c.bundle + "/process.json", c.id});
  INFO(file.out << file.err);
  CHECK(file.code != 0);
  CHECK_FALSE(contains(file.out, "top secret"));
  proc["args"] = {"sleep", "60"};
  write_file(c.bundle + "/process.json", proc.dump());
  std::string pf = c.bundle + "/exec.pid";
  auto d = c.rt({"exec", "-d", "--pid-file", pf, "--process", c.bundle + "/process.json", c.id});
  INFO(d.err);
  REQUIRE(d.ok());
  CHECK(label_of(std::stoi(read_file(pf))) == std::string(kProfile) + " (enforce)");
}

TEST_CASE("lsm: an AppArmor profile that is not loaded fails create with a clear error", "[lsm][dropin]") {
  if (auto why = apparmor_missing(); !why.empty()) HUSK_SKIP(why);
  Container c("aa-missing");
  c.cfg["process"]["apparmorProfile"] = "husk-it-no-such-profile";
  c.args({"sh", "-c", "echo ran > /ran"});
  auto r = c.run();
  INFO(r.out << r.err);
  CHECK(r.code != 0);
  // runc says only "no such file or directory", not which profile.
  if (!runtime_is_runc()) CHECK(contains(r.err, "process.apparmorProfile: apply \"husk-it-no-such-profile\""));
  CHECK_FALSE(fs::exists(c.rootfs + "/ran"));
  CHECK(leftovers(c).empty());
  Container e("aa-missing-exec");
  e.start_process({"sleep", "60"});
  auto x = e.rt({"exec", "--apparmor", "husk-it-no-such-profile", e.id, "sh", "-c", "echo ran > /ran"});
  INFO(x.out << x.err);
  CHECK(x.code != 0);
  if (!runtime_is_runc()) CHECK(contains(x.err, "process.apparmorProfile: apply \"husk-it-no-such-profile\""));
  CHECK_FALSE(fs::exists(e.rootfs + "/ran"));
}

TEST_CASE("lsm: exec --apparmor refuses a /proc the container replaced, and writes nothing there",
          "[lsm][security]") {
  if (auto why = apparmor_missing(); !why.empty()) HUSK_SKIP(why);
  LoadedProfile prof;
  INFO(prof.loaded.out << prof.loaded.err);
  REQUIRE(prof.loaded.ok());
  Container c("aa-fakeproc");
  secret_in(c);
  for (auto set : {"bounding", "effective", "permitted"}) c.cfg["process"]["capabilities"][set].push_back("CAP_SYS_ADMIN");
  // The container covers its /proc with a tmpfs of files named like procfs'
  // attr files (thread-self a plain directory), then waits.
  c.args({"sh", "-c",
          "mount -t tmpfs tmpfs /proc && mkdir -p /proc/thread-self/attr/apparmor && "
          "echo FAKE > /proc/thread-self/attr/apparmor/exec && echo FAKE > /proc/thread-self/attr/exec && "
          "touch /ready && exec sleep 60"});
  REQUIRE(c.create().ok());
  REQUIRE(c.start().ok());
  for (int i = 0; i < 100 && !fs::exists(c.rootfs + "/ready"); ++i) ::usleep(50000);
  REQUIRE(fs::exists(c.rootfs + "/ready"));
  auto x = c.rt({"exec", "--apparmor", kProfile, c.id, "cat", kSecret});
  INFO(x.out << x.err);
  CHECK(x.code != 0);
  CHECK_FALSE(contains(x.out, "top secret"));
  if (!runtime_is_runc()) CHECK(contains(x.err, "process.apparmorProfile: /proc is not procfs"));
  // Read from the host, through the init's root (runc cannot exec at all here).
  std::string fake = "/proc/" + std::to_string(c.pid()) + "/root/proc/thread-self/attr/";
  CHECK(read_file(fake + "apparmor/exec") == "FAKE\n");
  CHECK(read_file(fake + "exec") == "FAKE\n");
}

TEST_CASE("lsm: process.selinuxLabel labels the container's init", "[lsm][dropin]") {
  if (auto why = selinux_missing(); !why.empty()) HUSK_SKIP(why);
  const std::string label = process_context("c1,c2");
  INFO(label);
  Container plain("se-plain");
  int plain_pid = plain.start_process({"sleep", "60"});
  CHECK(selinux_label_of(plain_pid) != label);

  Container c("se-label");
  c.cfg["process"]["selinuxLabel"] = label;
  int pid = c.start_process({"sleep", "60"});
  CHECK(selinux_label_of(pid) == label);
  // And what the container's process sees of itself.
  Container r("se-self");
  r.cfg["process"]["selinuxLabel"] = label;
  r.args({"cat", "/proc/self/attr/current"});
  auto out = r.run();
  INFO(out.err);
  CHECK(out.code == 0);
  CHECK(label_text(out.out) == label);
}

TEST_CASE("lsm: exec --process-label and process.json's selinuxLabel label the exec'd process", "[lsm][dropin]") {
  if (auto why = selinux_missing(); !why.empty()) HUSK_SKIP(why);
  const std::string own = process_context("c1,c2"), flag = process_context("c3,c4"),
                    file = process_context("c5,c6");
  INFO(own << " " << flag << " " << file);
  Container c("se-exec");
  c.cfg["process"]["selinuxLabel"] = own;
  int init = c.start_process({"sleep", "60"});
  CHECK(selinux_label_of(init) == own);
  std::string pf = c.bundle + "/exec.pid";
  auto exec_label = [&](std::vector<std::string> args) {
    std::vector<std::string> a{"exec", "-d", "--pid-file", pf};
    a.insert(a.end(), args.begin(), args.end());
    auto d = c.rt(a);
    INFO(d.out << d.err);
    REQUIRE(d.ok());
    return selinux_label_of(std::stoi(read_file(pf)));
  };
  CHECK(exec_label({"--process-label", flag, c.id, "sleep", "60"}) == flag);

  json proc = c.cfg["process"];
  proc["args"] = {"sleep", "60"};
  proc["selinuxLabel"] = file;
  write_file(c.bundle + "/process.json", proc.dump());
  CHECK(exec_label({"--process", c.bundle + "/process.json", c.id}) == file);
  // Without one, the container's own label (as containerd's shim passes it).
  proc.erase("selinuxLabel");
  write_file(c.bundle + "/process.json", proc.dump());
  CHECK(exec_label({"--process", c.bundle + "/process.json", c.id}) == own);
}

TEST_CASE("lsm: linux.mountLabel labels the container's tmpfs and devpts mounts", "[lsm][dropin]") {
  if (auto why = selinux_missing(); !why.empty()) HUSK_SKIP(why);
  const std::string label = file_context("c1,c2");
  INFO(label);
  Container c("se-mount");
  c.cfg["linux"]["mountLabel"] = label;
  c.cfg["mounts"].push_back({{"destination", "/mnt"}, {"type", "tmpfs"}, {"source", "tmpfs"},
                             {"options", {"nosuid", "nodev"}}});
  int pid = c.start_process({"sleep", "60"});
  const std::string proc = "/proc/" + std::to_string(pid);
  auto mounts = parse_mountinfo(read_file(proc + "/mountinfo"));
  for (const char* dest : {"/mnt", "/dev/pts", "/dev/shm"}) {
    INFO(dest);
    const MountEntry* m = find_mount(mounts, dest);
    REQUIRE(m);
    CHECK(contains(m->super_options, "context=\"" + label + "\""));
    CHECK(selinux_xattr(proc + "/root" + dest) == label);
  }
  // Not proc (no SELinux labels of its own to set).
  const MountEntry* p = find_mount(mounts, "/proc");
  REQUIRE(p);
  CHECK_FALSE(contains(p->super_options, "context="));
}

TEST_CASE("lsm: an SELinux context the policy does not know fails create and exec, naming the field",
          "[lsm][dropin]") {
  if (auto why = selinux_missing(); !why.empty()) HUSK_SKIP(why);
  const std::string bad = "system_u:system_r:husk_it_no_such_t:s0";
  REQUIRE_FALSE(selinux_valid(bad));
  Container c("se-bad");
  c.cfg["process"]["selinuxLabel"] = bad;
  c.args({"sh", "-c", "echo ran > /ran"});
  for (bool use_run : {false, true}) {
    auto r = use_run ? c.run() : c.create();
    INFO(r.out << r.err);
    CHECK(r.code != 0);
    // runc: "write /proc/self/attr/exec: invalid argument", not which field.
    if (!runtime_is_runc()) CHECK(contains(r.err, "process.selinuxLabel: \"" + bad + "\""));
    CHECK_FALSE(fs::exists(c.rootfs + "/ran"));
    CHECK(leftovers(c).empty());
  }
  const std::string bad_file = "system_u:object_r:husk_it_no_such_t:s0";
  Container m("se-bad-mount");
  m.cfg["linux"]["mountLabel"] = bad_file;
  m.args({"sh", "-c", "echo ran > /ran"});
  auto rm = m.run();
  INFO(rm.out << rm.err);
  CHECK(rm.code != 0);
  // runc: "mount tmpfs on /dev: invalid argument", the label not named.
  if (!runtime_is_runc()) CHECK(contains(rm.err, "linux.mountLabel: \"" + bad_file + "\""));
  CHECK_FALSE(fs::exists(m.rootfs + "/ran"));
  CHECK(leftovers(m).empty());
  Container e("se-bad-exec");
  e.start_process({"sleep", "60"});
  auto x = e.rt({"exec", "--process-label", bad, e.id, "sh", "-c", "echo ran > /ran"});
  INFO(x.out << x.err);
  CHECK(x.code != 0);
  if (!runtime_is_runc()) CHECK(contains(x.err, "process.selinuxLabel: \"" + bad + "\""));
  CHECK_FALSE(fs::exists(e.rootfs + "/ran"));
  CHECK(e.status() == "running");
}
