// The lifecycle verbs driven without root: create, state, start, kill and
// delete through container/'s own code, with a fake init launcher and no
// cgroup (as husk sandbox has none). The fake forks a process that acts the
// init's part of the exec.fifo protocol: it opens the fifo for writing
// (blocking until start reads), writes its byte, and execs sleep.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "container/commands.h"
#include "launch/init.h"
#include "launch/launch.h"
#include "spec/defaults.h"
#include "unit/temp_dir.h"

using namespace husk::rt;
namespace fs = std::filesystem;
namespace spec = husk::spec;

namespace {

class FakeInit final : public Launcher {
 public:
  explicit FakeInit(int fifo_fd, pid_t& launched) : fifo_fd_(fifo_fd), launched_(launched) {}
  pid_t launch(Pipeline& p) override {
    pid_t pid = ::fork();
    if (pid == 0) {
      // As the real init does: nothing of husk's stays open (the container
      // directory's lock least of all), but the fifo.
      for (int fd = 3; fd < 1024; ++fd)
        if (fd != fifo_fd_) ::close(fd);
      const std::string path = "/proc/self/fd/" + std::to_string(fifo_fd_);
      int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
      if (fd < 0 || ::write(fd, "0", 1) != 1) _exit(1);
      ::execl("/bin/sleep", "sleep", "60", static_cast<char*>(nullptr));
      _exit(1);
    }
    REQUIRE(pid > 0);
    launched_ = pid;
    p.place(pid, {});
    return pid;
  }

 private:
  int fifo_fd_;
  pid_t& launched_;
};

struct Fixture {
  husk_test::TempDir root{"husk-unit-root-"}, bundle{"husk-unit-bundle-"};
  Context g;
  CreateOptions o;
  CreateExtras none;  // no cgroup: nothing of the host's is made
  pid_t init = -1;

  Fixture() {
    fs::create_directory(bundle.path + "/rootfs");
    auto config = nlohmann::json::parse(spec::default_config_json({}));
    config["process"]["terminal"] = false;
    std::ofstream(bundle.path + "/config.json") << config.dump();
    g.root = root.path;
    g.rootless = true;
    g.init_launcher = [this](const InitRequest& r) { return std::make_unique<FakeInit>(r.fifo_fd, init); };
    o.id = "c1";
    o.bundle = bundle.path;
    none.no_cgroup_reason = "a unit test";
    none.quiet_no_cgroup = true;
  }
  ~Fixture() {
    if (init > 0) {
      ::kill(init, SIGKILL);
      ::waitpid(init, nullptr, 0);
    }
  }
  std::string status() const { return container_state(g, o.id).status; }
};

}  // namespace

TEST_CASE("lifecycle: create then start then kill then delete through the verbs") {
  Fixture f;
  REQUIRE(cmd_create(f.g, f.o, f.none) == 0);
  REQUIRE(f.init > 0);
  spec::State st = container_state(f.g, "c1");
  CHECK(st.status == "created");
  CHECK(st.pid == f.init);
  CHECK(list_containers(f.g).size() == 1);
  CHECK_THROWS_WITH(cmd_delete(f.g, "c2", false), Catch::Contains("\"c2\""));

  CHECK(start(f.g, "c1").empty());  // released, and exec'd: no late error
  CHECK(f.status() == "running");
  CHECK_THROWS_WITH(start(f.g, "c1"), "cannot start an already running container");
  CHECK_THROWS_WITH(cmd_delete(f.g, "c1", false),
                    "cannot delete container \"c1\" that is not stopped: running");

  REQUIRE(cmd_kill(f.g, "c1", "KILL", false) == 0);
  int ws = 0;
  REQUIRE(::waitpid(f.init, &ws, 0) == f.init);
  CHECK(WIFSIGNALED(ws));
  CHECK(WTERMSIG(ws) == SIGKILL);
  f.init = -1;
  CHECK(f.status() == "stopped");
  CHECK(container_state(f.g, "c1").pid == 0);
  CHECK_THROWS_WITH(cmd_kill(f.g, "c1", "KILL", false), "container not running");
  CHECK_THROWS_WITH(start(f.g, "c1"), "cannot start a container that has stopped");

  REQUIRE(cmd_delete(f.g, "c1", false) == 0);
  CHECK(list_containers(f.g).empty());
  CHECK(fs::is_empty(f.root.path));
}

TEST_CASE("lifecycle: a created container is deleted without --force and its init killed") {
  Fixture f;
  REQUIRE(cmd_create(f.g, f.o, f.none) == 0);
  REQUIRE(f.status() == "created");
  REQUIRE(cmd_delete(f.g, "c1", false) == 0);
  int ws = 0;
  CHECK(::waitpid(f.init, &ws, 0) == f.init);
  f.init = -1;
  CHECK(list_containers(f.g).empty());
}

TEST_CASE("lifecycle: a duplicate id is refused and leaves the first alone") {
  Fixture f;
  REQUIRE(cmd_create(f.g, f.o, f.none) == 0);
  const pid_t first = f.init;
  CHECK_THROWS(cmd_create(f.g, f.o, f.none));
  CHECK(f.init == first);  // no second init was launched
  CHECK(f.status() == "created");
}
