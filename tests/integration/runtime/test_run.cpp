// `run`: output, exit status and stdio of the container reach the caller.
#include <catch2/catch.hpp>

#include <csignal>

#include <fcntl.h>
#include <unistd.h>
#include <thread>

#include "harness.h"

using namespace hit;

TEST_CASE("run prints from inside the container", "[run]") {
  Container c("run-echo");
  c.args({"sh", "-c", "echo hello-from-$(hostname)"});
  auto r = c.run();
  INFO(r.err);
  CHECK(r.code == 0);
  CHECK(r.out == "hello-from-husk-it\n");
  // `run` deletes the container once its process exited.
  CHECK(leftovers(c).empty());
  auto st = c.rt({"state", c.id});
  CHECK(st.code != 0);
  CHECK(contains(st.err, "does not exist"));
}

TEST_CASE("run exits with the container's exit status", "[run]") {
  Container c("run-exit");
  c.args({"sh", "-c", "exit 3"});
  auto r = c.run();
  INFO(r.err);
  CHECK(r.code == 3);
  CHECK_FALSE(r.signaled);
}

TEST_CASE("run of a container killed by a signal exits 128+n", "[run]") {
  Container c("run-sig");
  // A pid-namespace init ignores default-action signals from inside, so the
  // kill comes from outside, through the pid file.
  c.args({"sleep", "60"});
  c.write_config();
  std::string pidfile = c.bundle + "/pid";
  Child ch({runtime(), "--root", c.root, "run", "--bundle", c.bundle, "--pid-file", pidfile, c.id});
  int pid = 0;
  for (int i = 0; i < 500 && pid == 0; ++i) {
    try {
      pid = std::stoi(read_file(pidfile));
    } catch (...) {
      std::this_thread::sleep_for(10ms);
    }
  }
  REQUIRE(pid > 0);
  // The pid file is written at create: a kill before start would be a
  // failed start, not the exit of a running container.
  REQUIRE(c.wait_status("running"));
  REQUIRE(::kill(pid, SIGKILL) == 0);
  auto r = ch.wait();
  INFO(r.err);
  CHECK(r.code == 128 + SIGKILL);
  CHECK_FALSE(r.signaled);  // the runtime itself exits normally
}

TEST_CASE("run passes stdin through", "[run]") {
  const std::string data = "piped into cat\nsecond line\n";
  SECTION("a pipe, as engines pass it") {
    Container c("run-stdin-pipe");
    c.args({"cat"});
    int p[2];
    REQUIRE(::pipe2(p, O_CLOEXEC) == 0);
    Fd rd(p[0]);
    {
      Fd wr(p[1]);
      REQUIRE(::write(wr.get(), data.data(), data.size()) == static_cast<ssize_t>(data.size()));
    }  // closed: cat sees EOF
    auto r = c.run({}, SpawnOpts{.extra_fds = {{rd.get(), 0}}});
    INFO(r.err);
    CHECK(r.code == 0);
    CHECK(r.out == data);
  }
  SECTION("a regular file") {
    Container c("run-stdin-file");
    c.args({"cat"});
    auto r = c.run({}, SpawnOpts{.stdin_data = data});
    INFO(r.err);
    CHECK(r.code == 0);
    CHECK(r.out == data);
  }
}

TEST_CASE("run passes stderr through", "[run]") {
  Container c("run-stderr");
  c.args({"sh", "-c", "echo to-stderr >&2"});
  auto r = c.run();
  CHECK(r.code == 0);
  CHECK(contains(r.err, "to-stderr\n"));
  CHECK_FALSE(contains(r.out, "to-stderr"));
}

TEST_CASE("run forwards signals it receives to the container", "[run]") {
  Container c("run-fwd");
  // The handler proves the signal reached the container's init; the marker
  // file says the trap is installed before we send it.
  c.args({"sh", "-c", "trap 'echo got-term; exit 7' TERM; touch /tmp/ready; while true; do sleep 0.05; done"});
  c.write_config();
  Child ch({runtime(), "--root", c.root, "run", "--bundle", c.bundle, c.id});
  bool ready = false;
  for (int i = 0; i < 500 && !ready; ++i) {
    ready = ::access((c.rootfs + "/tmp/ready").c_str(), F_OK) == 0;
    if (!ready) std::this_thread::sleep_for(10ms);
  }
  REQUIRE(ready);
  REQUIRE(::kill(ch.pid(), SIGTERM) == 0);  // to the runtime, not the container
  auto r = ch.wait();
  INFO(r.err);
  CHECK(r.code == 7);
  CHECK(r.out == "got-term\n");
}
