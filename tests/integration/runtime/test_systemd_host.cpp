// The systemd cgroup driver where no systemd can be used (these machines:
// no systemd as PID 1, or a hybrid host): errors that name what is wrong,
// nothing left behind, and records in the state root that name a scope husk
// did not start never get it stopped. The driver itself runs in the systemd
// VM (tests/systemd/test-systemd).
#include <catch2/catch.hpp>

#include <filesystem>

#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "harness.h"
#include "skip.h"

using namespace hit;
namespace fs = std::filesystem;

namespace {

bool systemd_usable() { return fs::is_directory("/run/systemd/system") && cgroup2_unified(); }

// Only the v2 hierarchy: the systemd driver's scopes live there.
std::string unified_root() { return cgroup2_unified() ? "/sys/fs/cgroup" : "/sys/fs/cgroup/unified"; }

// husk copied into `dir` with a husk-systemd that only records being run.
std::string husk_with_recording_bridge(const std::string& dir) {
  const std::string husk = dir + "/husk";
  fs::copy_file(runtime(), husk);
  ::chmod(husk.c_str(), 0755);
  write_file(dir + "/husk-systemd", "#!/bin/sh\ncat >> " + dir + "/bridge-calls\necho '{}'\n", 0755);
  return husk;
}

// A stopped container's state dir naming `handle` at `cgroup` (no init).
void plant_stopped(const Container& c, const std::string& handle, const std::string& cgroup) {
  const std::string cdir = c.root + "/" + c.id;
  REQUIRE(::mkdir(cdir.c_str(), 0700) == 0);
  json state = {{"ociVersion", "1.2.0"}, {"id", c.id}, {"status", "stopped"}, {"pid", 0},
                {"bundle", c.bundle}, {"rootfs", c.rootfs}, {"created", "2026-01-01T00:00:00.000000000Z"},
                {"owner", ""}, {"annotations", json::object()}, {"initStartTime", 0},
                {"cgroupPath", cgroup}, {"cgroupCreated", json::array({cgroup})}, {"cgroupHandle", handle}};
  write_file(cdir + "/state.json", state.dump(), 0600);
  write_file(cdir + "/config.json", c.cfg.dump(), 0600);
}

}  // namespace

TEST_CASE("--systemd-cgroup where systemd cannot be used: one clear error, nothing left",
          "[systemd][husk-only]") {
  if (runtime_is_runc()) HUSK_SKIP("husk's own wording");
  if (systemd_usable()) HUSK_SKIP("systemd runs here: tests/systemd/test-systemd covers the driver");
  Container c("sdnone");
  c.cfg["linux"].erase("cgroupsPath");  // husk-<id>.scope in system.slice
  c.write_config();
  auto sd = c.rt({"--systemd-cgroup", "create", "--bundle", c.bundle, c.id});
  INFO(sd.err);
  CHECK(sd.code == 1);
  CHECK(contains(sd.err, "--systemd-cgroup: "));
  CHECK(lines(sd.err).size() == 1);
  CHECK_FALSE(fs::exists(c.root + "/" + c.id));
  CHECK(leftovers(c).empty());
}

TEST_CASE("with --systemd-cgroup a cgroupsPath not of the form slice:prefix:name is an error naming it",
          "[systemd][husk-only]") {
  if (runtime_is_runc()) HUSK_SKIP("husk's own wording (runc: expected cgroupsPath to be of format ...)");
  for (const char* bad : {"foo", "/husk-test/x", "a:b", "system.slice:p:pod.slice", "a--b.slice:p:n"}) {
    INFO(bad);
    Container c("sdpath");
    c.cfg["linux"]["cgroupsPath"] = bad;
    c.write_config();
    auto r = c.rt({"--systemd-cgroup", "create", "--bundle", c.bundle, c.id});
    INFO(r.err);
    CHECK(r.code == 1);
    CHECK(contains(r.err, std::string("linux.cgroupsPath: \"") + bad + "\""));
    CHECK_FALSE(fs::exists(c.root + "/" + c.id));
  }
}

// Seen failing before the checks: destroy() called the bridge to stop the
// unit a planted record named.
TEST_CASE("a planted state.json naming a systemd scope husk did not mark never gets it stopped",
          "[systemd][security][husk-only]") {
  if (runtime_is_runc()) HUSK_SKIP("husk's state.json");
  TempDir bin("sdplant");
  const std::string husk = husk_with_recording_bridge(bin.path);
  // Someone else's running scope, as far as husk can tell: its cgroup, unmarked.
  const std::string unit = unique_id("victim") + ".scope";
  const std::string path = "/husk-test/" + unit, dir = unified_root() + path;
  fs::create_directories(dir);
  struct Cleanup {
    std::string dir;
    ~Cleanup() { ::rmdir(dir.c_str()); }
  } cleanup{dir};
  const std::vector<std::pair<std::string, std::string>> records = {
      {"systemd:" + unit, path},                                  // its own name, not our mark
      {"systemd:ssh.service", "/system.slice/ssh.service"},      // not a scope
      {"systemd:" + unit, "/husk-test/other.scope"},             // a cgroup of another name
  };
  for (const auto& [handle, cgroup] : records) {
    INFO(handle << " at " << cgroup);
    Container c("sdplant");
    const std::string cdir = c.root + "/" + c.id;
    plant_stopped(c, handle, cgroup);
    auto d = run({husk, "--root", c.root, "delete", "--force", c.id});
    INFO(d.err);
    CHECK(d.ok());
    CHECK_FALSE(fs::exists(bin.path + "/bridge-calls"));
    CHECK(fs::is_directory(dir));
    CHECK_FALSE(fs::exists(cdir));
  }
}

// systemd escapes a cgroup name that starts with "_" or ".", or with a
// controller's name and a dot (cg_escape: "_foo-x.scope" lives in
// "__foo-x.scope"). Seen failing before: every command on such a container
// said the handle "is not the systemd driver's", delete too.
TEST_CASE("a scope whose cgroup systemd escaped with a '_' is still the container's",
          "[systemd][husk-only]") {
  if (runtime_is_runc()) HUSK_SKIP("husk's state.json");
  TempDir bin("sdesc");
  const std::string husk = husk_with_recording_bridge(bin.path);
  Container c("sdesc");
  const std::string unit = "_x-" + c.id + ".scope", path = "/husk-test/_" + unit, dir = unified_root() + path;
  fs::create_directories(dir);
  struct Cleanup {
    std::string dir;
    ~Cleanup() { ::rmdir(dir.c_str()); }
  } cleanup{dir};
  REQUIRE(::setxattr(dir.c_str(), "trusted.husk.owner", c.id.data(), c.id.size(), 0) == 0);
  plant_stopped(c, "systemd:" + unit, path);
  auto d = run({husk, "--root", c.root, "delete", c.id});
  INFO(d.err);
  CHECK(d.ok());
  CHECK(contains(read_file(bin.path + "/bridge-calls"), "\"method\":\"stop\""));
  CHECK_FALSE(fs::exists(c.root + "/" + c.id));
}

// delete of a stopped container when systemd cannot be asked (no
// husk-systemd next to husk, the bus down): its scope gone already (delete
// would only reset a failed unit of that name) or still there, empty (its
// processes killed; systemd drops an empty scope by itself). runc goes on as
// well when StopUnit or ResetFailedUnit fail. Seen failing before: delete and
// delete --force exited 1 ("systemd: reset ...: run .../husk-systemd (husk's
// sd-bus helper): No such file or directory", "systemd: stop ...: connect to
// the systemd system bus") and kept the state dir forever.
TEST_CASE("delete of a stopped container works without husk-systemd or a bus", "[systemd][husk-only]") {
  if (runtime_is_runc()) HUSK_SKIP("husk's state.json");
  for (const char* bridge : {"", "#!/bin/sh\ncat >/dev/null\necho '{\"error\": \"connect to the systemd system bus: "
                                 "No such file or directory\", \"errno\": 2}'\nexit 1\n"}) {
    TempDir bin("sdgone");
    const std::string husk = bin.path + "/husk";
    fs::copy_file(runtime(), husk);
    ::chmod(husk.c_str(), 0755);
    if (*bridge) write_file(bin.path + "/husk-systemd", bridge, 0755);
    for (bool scope_there : {false, true})
      for (bool force : {false, true}) {
        INFO((*bridge ? "a bridge without a bus" : "no husk-systemd") << (scope_there ? ", scope there" : ", scope gone")
                                                                     << (force ? ", --force" : ""));
        Container c("sdgone");
        const std::string unit = "husk-" + c.id + ".scope", path = "/husk-test/" + unit, dir = unified_root() + path;
        if (scope_there) {
          fs::create_directories(dir);
          REQUIRE(::setxattr(dir.c_str(), "trusted.husk.owner", c.id.data(), c.id.size(), 0) == 0);
        }
        plant_stopped(c, "systemd:" + unit, path);
        std::vector<std::string> argv = {husk, "--root", c.root, "delete", c.id};
        if (force) argv.insert(argv.begin() + 4, "--force");
        auto d = run(argv);
        INFO(d.err);
        CHECK(d.ok());
        CHECK_FALSE(fs::exists(c.root + "/" + c.id));
        CHECK_FALSE(fs::exists(dir));
        ::rmdir(dir.c_str());
      }
  }
}

// husk-systemd is dynamically linked and runs as root: the loader's
// variables (LD_PRELOAD, LD_LIBRARY_PATH) from husk's environment would run
// code in it. It gets only the bus variables. Seen failing before: the
// bridge's environment held LD_LIBRARY_PATH and everything else of husk's.
TEST_CASE("husk-systemd gets only the bus variables of husk's environment", "[systemd][security][husk-only]") {
  if (runtime_is_runc()) HUSK_SKIP("husk's helper");
  TempDir bin("sdenv");
  const std::string husk = bin.path + "/husk";
  fs::copy_file(runtime(), husk);
  ::chmod(husk.c_str(), 0755);
  write_file(bin.path + "/husk-systemd", "#!/bin/sh\nenv >" + bin.path + "/bridge-env\ncat >/dev/null\necho '{}'\n", 0755);
  Container c("sdenv");
  const std::string unit = "husk-" + c.id + ".scope";
  plant_stopped(c, "systemd:" + unit, "/husk-test/" + unit);
  auto d = run({"env", "LD_LIBRARY_PATH=/nonexistent-lib", "HUSK_TEST_OTHER=1", "DBUS_SYSTEM_BUS_ADDRESS=unix:path=/x",
                husk, "--root", c.root, "delete", c.id});
  INFO(d.err);
  CHECK(d.ok());
  const std::string env = read_file(bin.path + "/bridge-env");
  INFO(env);
  CHECK(contains(env, "DBUS_SYSTEM_BUS_ADDRESS=unix:path=/x\n"));
  CHECK_FALSE(contains(env, "LD_LIBRARY_PATH"));
  CHECK_FALSE(contains(env, "HUSK_TEST_OTHER"));
}
