// `spec` and `features`: what callers generate configs from and probe.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "harness.h"
#include "skip.h"

using namespace hit;
namespace fs = std::filesystem;

TEST_CASE("spec writes a config that runs, and never overwrites one", "[cli]") {
  TempDir dir("husk-it-spec-");
  auto r = run({runtime(), "spec", "--bundle", dir.path});
  INFO(r.err);
  REQUIRE(r.ok());
  json cfg = json::parse(read_file(dir.path + "/config.json"));
  CHECK(cfg.at("root").at("path") == "rootfs");
  CHECK(cfg.at("process").at("args") == json::array({"sh"}));
  std::vector<std::string> ns;
  for (auto& n : cfg.at("linux").at("namespaces")) ns.push_back(n.at("type"));
  for (const char* want : {"pid", "network", "ipc", "uts", "mount"})
    CHECK(std::find(ns.begin(), ns.end(), want) != ns.end());

  auto again = run({runtime(), "spec", "--bundle", dir.path});
  CHECK(again.code != 0);
  CHECK(contains(again.err, "exists"));

  // The generated config, with the template's rootfs and a command, runs;
  // its seccomp profile refuses a user namespace, --permissive's does not.
  TempDir loose("husk-it-spec-permissive-");
  REQUIRE(run({runtime(), "spec", "--permissive", "--bundle", loose.path}).ok());
  for (const std::string& bundle : {dir.path, loose.path}) {
    Container c("spec-run");
    json generated = json::parse(read_file(bundle + "/config.json"));
    generated["process"]["terminal"] = false;
    generated["process"]["args"] = {"sh", "-c", "echo from-spec; unshare -U true 2>/dev/null && echo userns"};
    generated["linux"]["cgroupsPath"] = c.cfg["linux"]["cgroupsPath"];
    c.cfg = generated;
    auto out = c.run();
    INFO(bundle << ": " << out.err);
    CHECK(out.out == (bundle == dir.path ? "from-spec\n" : "from-spec\nuserns\n"));
  }
}

TEST_CASE("spec --rootless maps the calling user into a user namespace, with a network namespace", "[cli]") {
  TempDir dir("husk-it-spec-rl-");
  REQUIRE(run({runtime(), "spec", "--rootless", "--bundle", dir.path}).ok());
  json cfg = json::parse(read_file(dir.path + "/config.json"));
  bool userns = false, netns = false;
  for (auto& n : cfg.at("linux").at("namespaces")) {
    userns |= n.at("type") == "user";
    netns |= n.at("type") == "network";
  }
  CHECK(userns);
  CHECK(netns);  // sysfs is mounted fresh, not the host's /sys with its cgroup mounts
  auto& m = cfg.at("linux").at("uidMappings").at(0);
  CHECK(m.at("hostID").get<unsigned>() == ::geteuid());
  CHECK(m.at("containerID").get<unsigned>() == 0);
}

TEST_CASE("features is valid features.json describing this host", "[cli][husk-only]") {
  auto r = run({runtime(), "features"});
  INFO(r.err);
  REQUIRE(r.ok());
  json f = json::parse(r.out);
  CHECK(f.at("ociVersionMin") == "1.0.0");
  CHECK(f.at("ociVersionMax").get<std::string>().rfind("1.", 0) == 0);
  auto has = [](const json& arr, const std::string& v) { return std::find(arr.begin(), arr.end(), v) != arr.end(); };
  for (const char* h : {"prestart", "createRuntime", "createContainer", "startContainer", "poststart", "poststop"})
    CHECK(has(f.at("hooks"), h));
  for (const char* o : {"rbind", "ro", "nosuid", "rro", "idmap"}) CHECK(has(f.at("mountOptions"), o));
  const json& l = f.at("linux");
  for (const char* n : {"cgroup", "ipc", "mount", "network", "pid", "time", "user", "uts"}) CHECK(has(l.at("namespaces"), n));
  CHECK(has(l.at("capabilities"), "CAP_SYS_ADMIN"));
  CHECK(l.at("seccomp").at("enabled") == true);
  CHECK(has(l.at("seccomp").at("actions"), "SCMP_ACT_ERRNO"));
  // cgroup versions as mounted on this host
  struct stat st;
  bool unified_root = fs::exists("/sys/fs/cgroup/cgroup.controllers");
  bool hybrid = ::stat("/sys/fs/cgroup/unified/cgroup.controllers", &st) == 0;
  CHECK(l.at("cgroup").at("v2") == (unified_root || hybrid));
  CHECK(l.at("cgroup").at("v1") == !unified_root);
  // A build with the systemd driver puts husk-systemd next to husk.
  CHECK(l.at("cgroup").at("systemd") == true);
  CHECK(l.at("cgroup").at("systemdUser") == true);
  CHECK(l.at("apparmor").at("enabled") == true);  // support, not the host's (test_lsm.cpp)
}

TEST_CASE("features does not claim the systemd driver when husk-systemd is not installed with husk",
          "[cli][husk-only][systemd]") {
  TempDir dir("features");
  const std::string alone = dir.path + "/husk";
  fs::copy_file(runtime(), alone);
  fs::permissions(alone, fs::perms::owner_all);
  auto r = run({alone, "features"});
  INFO(r.err);
  REQUIRE(r.ok());
  const json features = json::parse(r.out);
  const json& cg = features.at("linux").at("cgroup");
  CHECK(cg.at("systemd") == false);
  CHECK(cg.at("systemdUser") == false);
}

TEST_CASE("COMMAND --help lists that command's own flags, as runc's does", "[cli][husk-only]") {
  // runc words its help differently (NAME/USAGE/OPTIONS); the flags are the point.
  auto e = run({runtime(), "exec", "--help"});
  INFO(e.err);
  REQUIRE(e.code == 0);
  CHECK(contains(e.out, "usage: husk exec"));
  for (const char* flag : {"--process", "--apparmor", "--process-label", "--preserve-fds", "--cwd"})
    CHECK(contains(e.out, flag));
  CHECK_FALSE(contains(e.out, "--force"));     // delete's
  CHECK_FALSE(contains(e.out, "commands:"));   // not the global usage
  auto k = run({runtime(), "kill", "-h"});
  REQUIRE(k.code == 0);
  CHECK(contains(k.out, "--all"));
  CHECK_FALSE(contains(k.out, "--process"));
  auto bad = run({runtime(), "exec", "--bogus", "x"});
  CHECK(bad.code != 0);
  CHECK(contains(bad.err, "exec"));
  CHECK(contains(bad.err, "--bogus"));
}

// As runc's and crun's: which commit, build and libseccomp this husk is.
TEST_CASE("--version names the commit built, the build and libseccomp", "[cli][husk-only]") {
  if (runtime() != HUSK_IT_DEFAULT_RUNTIME) HUSK_SKIP("$HUSK_RUNTIME is not the husk built from this tree");
  auto head = run({"git", "-C", HUSK_SOURCE_DIR, "rev-parse", "--short", "HEAD"});
  if (head.code != 0) HUSK_SKIP("the source tree is not a git checkout");
  auto v = run({runtime(), "--version"});
  INFO(v.out);
  REQUIRE(v.code == 0);
  CHECK(contains(v.out, "\ncommit: " + trim(head.out)));
  CHECK(contains(v.out, "\nbuild: "));
  CHECK(contains(v.out, "\nlibseccomp: 2."));
  auto f = run({runtime(), "features"});
  REQUIRE(f.code == 0);
  CHECK(json::parse(f.out).at("annotations").at("org.husk.commit").get<std::string>().starts_with(trim(head.out)));
}

// An engine that asks an unknown command for help must not take exit 0 for
// "supported" (ctr and podman probe commands this way).
TEST_CASE("an unknown command fails naming it with or without --help", "[cli]") {
  for (auto args : {std::vector<std::string>{"nosuchcmd"}, {"nosuchcmd", "--help"}, {"nosuchcmd", "-h"}}) {
    args.insert(args.begin(), runtime());
    auto r = run(args);
    INFO(args.back() << ": " << r.err);
    CHECK(r.code != 0);
    CHECK(contains(r.err, "nosuchcmd"));
    CHECK_FALSE(contains(r.out, "commands:"));  // not the global help
    if (!runtime_is_runc()) CHECK(contains(r.err, "unknown command"));
  }
  if (runtime_is_runc()) return;  // runc answers `--help nosuchcmd` with its help, exit 0
  auto r = run({runtime(), "--help", "nosuchcmd"});
  CHECK(r.code != 0);
  CHECK(contains(r.err, "unknown command \"nosuchcmd\""));
}
