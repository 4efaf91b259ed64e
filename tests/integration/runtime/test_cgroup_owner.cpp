// husk empties and removes only cgroups it made for the container: each one
// carries the xattr trusted.husk.owner = the container id, which only root
// can set. A config's cgroupsPath naming an existing cgroup, or a planted
// state.json claiming one, never gets another's processes killed or its
// cgroup removed, with or without --force.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <thread>

#include <signal.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "harness.h"

using namespace hit;
namespace fs = std::filesystem;

namespace {

// The directory of cgroup `path` in every hierarchy of this host.
std::vector<std::string> hierarchy_dirs(const std::string& path) {
  if (cgroup2_unified()) return {"/sys/fs/cgroup" + path};
  std::vector<std::string> out;
  for (const auto& m : parse_mountinfo(read_file("/proc/self/mountinfo")))
    if ((m.fstype == "cgroup" || m.fstype == "cgroup2") && m.mount_point.rfind("/sys/fs/cgroup/", 0) == 0)
      out.push_back(m.mount_point + path);
  return out;
}

// The owner mark husk puts on a cgroup it makes; "" when there is none.
std::string owner_mark(const std::string& dir) {
  char buf[256];
  ssize_t n = ::lgetxattr(dir.c_str(), "trusted.husk.owner", buf, sizeof buf);
  return n < 0 ? "" : std::string(buf, n);
}

// Someone else's cgroup /husk-test/<unique>, in every hierarchy, with a
// `sleep` of the test's in it (in the pids hierarchy on v1/hybrid hosts).
struct Victim {
  std::string path = "/husk-test/" + unique_id("victim");
  std::vector<std::string> dirs = hierarchy_dirs(path);
  std::unique_ptr<Child> sleeper;

  Victim() {
    for (const auto& d : dirs) fs::create_directories(d);
  }
  ~Victim() {
    sleeper.reset();  // SIGKILL by pid and reap
    for (const auto& d : dirs)
      for (int i = 0; i < 100 && ::rmdir(d.c_str()) != 0 && errno == EBUSY; ++i) std::this_thread::sleep_for(10ms);
  }
  void enter() {
    std::string procs = (cgroup2_unified() ? "/sys/fs/cgroup" : "/sys/fs/cgroup/pids") + path + "/cgroup.procs";
    sleeper = std::make_unique<Child>(
        std::vector<std::string>{"sh", "-c", "echo $$ > " + procs + " && exec sleep 1000"});
    auto in = [&] {
      auto l = lines(read_file(procs));
      return std::find(l.begin(), l.end(), std::to_string(sleeper->pid())) != l.end();
    };
    for (int i = 0; i < 500 && !in(); ++i) std::this_thread::sleep_for(5ms);
    REQUIRE(in());
  }
  // After a delete that had to leave it alone (`err` its stderr).
  void check_untouched(const std::string& err) const {
    INFO(err);
    CHECK(alive(sleeper->pid()));
    for (const auto& d : dirs) {
      INFO(d);
      CHECK(fs::is_directory(d));
    }
    CHECK(contains(err, "cgroup " + path + " is not marked as made by husk for this container: left alone"));
  }
};

// A container dir as husk makes it, with the given state.json and config.
void plant(const Container& c, const std::string& state) {
  const std::string dir = c.root + "/" + c.id;
  REQUIRE(::mkdir(dir.c_str(), 0700) == 0);
  write_file(dir + "/state.json", state, 0600);
  write_file(dir + "/config.json", c.cfg.dump(), 0600);
}

}  // namespace

// Fails before the fix: the mark was never set.
TEST_CASE("the cgroup husk makes for a container is marked with its id in every hierarchy",
          "[security][husk-only][cgroups][owner]") {
  Container c("ownmark");
  c.args({"sleep", "60"});
  auto r = c.create();
  INFO(r.err);
  REQUIRE(r.ok());
  for (const auto& d : hierarchy_dirs("/husk-test/" + c.id)) {
    INFO(d);
    CHECK(owner_mark(d) == c.id);
  }
  CHECK(c.del(true).ok());
  CHECK(leftovers(c).empty());
}

// What the mark is for, seen from outside: without a pid namespace a process
// the container left behind outlives its init, and only emptying the cgroup
// husk made reaches it. delete --force kills it and removes every directory.
TEST_CASE("delete --force empties and removes the cgroup husk made, reaching a process that outlived the init",
          "[security][husk-only][cgroups][owner]") {
  Container c("ownkill");
  auto& ns = c.cfg["linux"]["namespaces"];
  ns.erase(std::remove_if(ns.begin(), ns.end(), [](const json& n) { return n.at("type") == "pid"; }), ns.end());
  const int init = c.start_process({"sh", "-c", "sleep 1000 & sleep 999; exit 0"});
  const std::string procs = cgroup_file(c.id, "pids", "cgroup.procs");
  int stray = 0;
  REQUIRE(eventually([&] {
    for (const auto& l : lines(read_file(procs)))
      if (std::stoi(l) != init) stray = std::stoi(l);
    return stray != 0;
  }));
  REQUIRE(::kill(init, SIGKILL) == 0);  // the init goes; its background sleep stays
  REQUIRE(eventually([&] { return !alive(init); }));
  REQUIRE(alive(stray));
  auto r = c.del(true);
  INFO(r.err);
  CHECK(r.ok());
  CHECK(eventually([&] { return !alive(stray); }));
  for (const auto& d : hierarchy_dirs("/husk-test/" + c.id)) {
    INFO(d);
    CHECK_FALSE(fs::exists(d));
  }
}

// Fails before the fix (both ways): recover_container took the cgroup from
// config.json, SIGKILLed the sleep and removed the cgroup, exit 0.
TEST_CASE("delete --force with a broken state.json leaves a cgroup husk did not make alone",
          "[security][husk-only][cgroups][owner]") {
  for (bool taken_over : {false, true}) {
    INFO((taken_over ? "created, taking over the existing empty cgroup" : "a planted container dir"));
    Victim v;
    Container c("ownrecover");
    c.cfg["linux"]["cgroupsPath"] = v.path;
    if (taken_over) {
      c.args({"sleep", "60"});
      auto r = c.create();
      INFO(r.err);
      REQUIRE(r.ok());
      v.enter();
      write_file(c.root + "/" + c.id + "/state.json", "{broken", 0600);
    } else {
      v.enter();
      plant(c, "{broken");
    }
    auto d = c.del(true);
    CHECK(d.ok());
    v.check_untouched(d.err);
    CHECK_FALSE(fs::exists(c.root + "/" + c.id));
    CHECK(leftovers(c).empty());  // the init is killed all the same
  }
}

// Fails before the fix: parse_record accepted cgroupCreated naming cgroupPath,
// and delete SIGKILLed the sleep and removed the cgroup.
TEST_CASE("delete of a planted stopped state.json claiming another's cgroup leaves it alone",
          "[security][husk-only][cgroups][owner]") {
  Victim v;
  v.enter();
  Container c("ownplant");
  json state = {{"ociVersion", "1.2.0"},
                {"id", c.id},
                {"status", "stopped"},
                {"pid", 0},
                {"bundle", c.bundle},
                {"rootfs", c.rootfs},
                {"created", "2026-01-01T00:00:00.000000000Z"},
                {"owner", ""},
                {"annotations", json::object()},
                {"initStartTime", 0},
                {"cgroupPath", v.path},
                {"cgroupCreated", json::array({"/husk-test", v.path})},
                {"cgroupHandle", v.path}};
  plant(c, state.dump());
  auto d = c.del();
  CHECK(d.ok());
  v.check_untouched(d.err);
  CHECK(fs::is_directory(hierarchy_dirs("/husk-test").front()));
  CHECK_FALSE(fs::exists(c.root + "/" + c.id));
}

// Fails on 7bdf3ce: delete (--force) rightly left the decoy alone, but also
// left the init running (open_init found it outside the recorded cgroup) and
// its own marked cgroup behind, so the id could not be made again. The init
// is known by pid, start time and the mark on the cgroup it is really in.
TEST_CASE("delete (--force) of a state.json rewritten to name a decoy cgroup ends the real container",
          "[security][husk-only][cgroups][owner]") {
  // A created container is deleted without --force too.
  const bool force = GENERATE(true, false);
  INFO("--force: " << force);
  Victim v;
  v.enter();
  Container c("owndecoy");
  c.args({"sleep", "60"});
  auto r = c.create();
  INFO(r.err);
  REQUIRE(r.ok());
  const int init = c.pid();
  const std::string file = c.root + "/" + c.id + "/state.json";
  json state = json::parse(read_file(file));
  state["cgroupPath"] = v.path;
  state["cgroupCreated"] = json::array({v.path});
  state["cgroupHandle"] = v.path;
  write_file(file, state.dump(), 0600);
  auto d = c.del(force);
  INFO(d.err);
  CHECK(d.ok());
  v.check_untouched(d.err);
  CHECK(gone_soon(init));
  CHECK(leftovers(c).empty());
  auto again = c.create();
  INFO("create again: " << again.err);
  CHECK(again.ok());
  CHECK(c.del(true).ok());
  CHECK(leftovers(c).empty());
}

// A decoy that passes the ownership test: an empty, unmarked, sticky cgroup
// (what a create killed before its mark leaves) counts as husk's for any id.
// Delete took it for the container's, removed it and left the real init
// running in its own cgroup (found by a review helper).
TEST_CASE("delete --force of a state.json naming an empty sticky leftover ends the real container",
          "[security][husk-only][cgroups][owner]") {
  Container c("ownsticky");
  c.args({"sleep", "60"});
  auto r = c.create();
  INFO(r.err);
  REQUIRE(r.ok());
  const int init = c.pid();
  const std::string decoy = "/husk-test/" + c.id + "-sticky";
  for (const auto& d : hierarchy_dirs(decoy)) REQUIRE(::mkdir(d.c_str(), 01755) == 0);
  const std::string file = c.root + "/" + c.id + "/state.json";
  json state = json::parse(read_file(file));
  state["cgroupPath"] = decoy;
  state["cgroupCreated"] = json::array({decoy});
  state["cgroupHandle"] = decoy;
  write_file(file, state.dump(), 0600);
  auto d = c.del(true);
  INFO(d.err);
  CHECK(d.ok());
  CHECK(gone_soon(init));
  CHECK(leftovers(c).empty());
  for (const auto& dir : hierarchy_dirs(decoy)) {
    INFO(dir);
    CHECK(fs::is_directory(dir));  // not the container's: left alone
    ::rmdir(dir.c_str());
  }
}
