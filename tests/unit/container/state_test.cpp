#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "base/error.h"
#include "container/state.h"
#include "base/process.h"
#include "base/time.h"
#include "unit/temp_dir.h"

using namespace husk::rt;
namespace fs = std::filesystem;

namespace {
struct TempRoot : husk_test::TempDir {
  TempRoot() : husk_test::TempDir("husk-state-") {}
};
}  // namespace

TEST_CASE("container ids follow runc's rules") {
  CHECK_NOTHROW(Store::check_id("abc-DEF_1.2+x"));
  for (const char* bad : {"", ".", "..", "a/b", "a b", "../x", "x\n"})
    REQUIRE_THROWS_WITH(Store::check_id(bad), Catch::Contains("invalid container id"));
}

TEST_CASE("an error naming a hostile id stays one printable line") {
  CHECK(husk::quote("a\nb\"c\\\x1b\xff") == "\"a\\nb\\\"c\\\\\\x1b\\xff\"");
  TempRoot t;
  Store store(t.path);
  for (const std::string& id : {std::string("a\nb"), std::string("x\r\x1b[2J")}) {
    std::string msg;
    try {
      Store::check_id(id);
    } catch (const husk::Error& e) {
      msg = e.what();
    }
    CHECK(msg.find_first_of("\n\r\x1b") == std::string::npos);
    CHECK(msg.rfind("invalid container id " + husk::quote(id), 0) == 0);
  }
  // Valid ids are quoted the same way (runc: "container ... does not exist").
  REQUIRE_THROWS_WITH(Handle::open(store, "nope"), "container \"nope\" does not exist");
}

TEST_CASE("a record round-trips through state.json and duplicates are refused") {
  TempRoot root;
  Store store(root.path + "/nested/root");
  {
    Handle h = Handle::create(store, "c1");
    Record r;
    r.oci.oci_version = "1.2.0";
    r.oci.id = "c1";
    r.oci.status = "created";
    r.oci.pid = 4242;
    r.oci.bundle = "/b";
    r.oci.rootfs = "/b/rootfs";
    r.oci.created = husk::base::now_rfc3339();
    r.oci.annotations = {{"k", "v"}};
    r.start_time = 77;
    r.cgroup_path = "/husk/c1";
    h.save(r);
  }
  REQUIRE_THROWS_WITH(Handle::create(store, "c1"), Catch::Contains("already exists"));
  Handle h = Handle::open(store, "c1");
  Record r = h.load();
  CHECK(r.oci.pid == 4242);
  CHECK(r.oci.status == "created");
  CHECK(r.oci.annotations.at("k") == "v");
  CHECK(r.start_time == 77);
  CHECK(r.cgroup_path == "/husk/c1");
  CHECK(store.ids() == std::vector<std::string>{"c1"});
  h.remove();
  CHECK(!fs::exists(store.dir("c1")));
  REQUIRE_THROWS_WITH(Handle::open(store, "c1"), "container \"c1\" does not exist");
}

TEST_CASE("a container whose init is gone or recycled reads as stopped") {
  pid_t child = fork();
  if (child == 0) {
    pause();
    _exit(0);
  }
  Record r;
  r.oci.status = "running";
  r.oci.pid = child;
  r.start_time = husk::base::process_start_time(child);
  REQUIRE(r.start_time != 0);
  CHECK(live_status(r) == Status::running);
  Record recycled = r;
  recycled.start_time = r.start_time + 1;  // same pid, another process
  CHECK(live_status(recycled) == Status::stopped);
  kill(child, SIGKILL);
  // a zombie counts as stopped before it is reaped
  for (int i = 0; i < 200 && husk::base::process_alive(child, 0); ++i) usleep(5000);
  CHECK(live_status(r) == Status::stopped);
  waitpid(child, nullptr, 0);
  CHECK(live_status(r) == Status::stopped);
}

TEST_CASE("created timestamps are RFC3339 UTC with nanoseconds") {
  // The same clock read before and after: the stamp's second is one of the two.
  timespec before{}, after{};
  clock_gettime(CLOCK_REALTIME, &before);
  std::string t = husk::base::now_rfc3339();
  clock_gettime(CLOCK_REALTIME, &after);
  REQUIRE(t.size() == 30);
  CHECK(t[4] == '-');
  CHECK(t[10] == 'T');
  CHECK(t[19] == '.');
  CHECK(t.back() == 'Z');
  auto second = [](time_t s) {
    tm g{};
    gmtime_r(&s, &g);
    char out[32];
    strftime(out, sizeof out, "%Y-%m-%dT%H:%M:%S", &g);
    return std::string(out);
  };
  CHECK((t.substr(0, 19) == second(before.tv_sec) || t.substr(0, 19) == second(after.tv_sec)));
}

TEST_CASE("state.json keeps the cgroup driver's handle, and one from before handles still loads") {
  const std::string old_format =
      R"({"ociVersion":"1.2.0","id":"c1","status":"created","pid":1,"bundle":"/b","rootfs":"/b/rootfs",)"
      R"("created":"2026-01-01T00:00:00Z","initStartTime":5,"cgroupPath":"/husk/c1","cgroupCreated":["/husk/c1"]})";
  Record old = parse_record(old_format);
  CHECK(old.cgroup_handle.empty());
  CHECK(cgroup_config(old).path == "/husk/c1");

  TempRoot root;
  Store store(root.path);
  Handle h = Handle::create(store, "c1");
  Record r = old;
  r.cgroup_handle = "/husk/c1";
  h.save(r);
  CHECK(h.load().cgroup_handle == "/husk/c1");
  h.remove();

  std::string wrong_type = old_format;
  wrong_type.insert(wrong_type.size() - 1, R"(,"cgroupHandle":7)");
  REQUIRE_THROWS_WITH(parse_record(wrong_type), Catch::Contains("cgroupHandle"));
}

TEST_CASE("a state.json whose cgroupCreated names anything but cgroupPath or its ancestors is refused") {
  const std::string head =
      R"({"ociVersion":"1.2.0","id":"c1","status":"stopped","pid":1,"bundle":"/b","rootfs":"/b/rootfs",)"
      R"("created":"2026-01-01T00:00:00Z","initStartTime":5,"cgroupPath":"/husk/c1","cgroupCreated":)";
  CHECK_NOTHROW(parse_record(head + R"(["/husk","/husk/c1"]})"));
  // "" would be the hierarchy's root once joined to a mount point.
  for (const char* bad : {R"([""])", R"(["/"])", R"(["/other"])", R"(["/husk/c1x"])", R"(["husk"])", R"([7])"})
    REQUIRE_THROWS_WITH(parse_record(head + bad + "}"), Catch::Contains("cgroupCreated"));
}


TEST_CASE("state.json keeps whether the cgroup is a rootless one, or why there is none") {
  TempRoot root;
  Store store(root.path);
  Handle h = Handle::create(store, "c1");
  Record r;
  r.oci.id = "c1";
  r.oci.status = "created";
  r.cgroup_path = "/deleg/c1";
  r.cgroup_rootless = true;
  h.save(r);
  Record back = h.load();
  CHECK(back.cgroup_rootless);
  CHECK(cgroup_config(back).rootless);
  CHECK(cgroup_config(back).driver == husk::cgroups::Driver::cgroupfs);

  r.cgroup_path.clear();
  r.cgroup_rootless = false;
  r.no_cgroup = "the host has cgroup v1";
  h.save(r);
  back = h.load();
  CHECK(back.no_cgroup == "the host has cgroup v1");
  auto none = open_cgroup(back);
  REQUIRE(none);
  CHECK_THROWS_WITH(none->freeze(), "pause: container c1 has no cgroup: the host has cgroup v1");
  h.remove();

  const std::string base = R"({"ociVersion":"1.2.0","id":"c1","status":"created","pid":1,"bundle":"/b",)";
  REQUIRE_THROWS_WITH(parse_record(base + R"("cgroupRootless":"yes"})"), Catch::Contains("cgroupRootless"));
  REQUIRE_THROWS_WITH(parse_record(base + R"("cgroupPath":"/husk/c1","noCgroup":"why"})"),
                      Catch::Contains("noCgroup: given with a cgroupPath"));
}
