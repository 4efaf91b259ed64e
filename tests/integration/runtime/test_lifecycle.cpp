// create/start/state/kill/delete/list and the CLI conventions engines rely on.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <future>
#include <map>
#include <thread>

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

using namespace hit;
namespace fs = std::filesystem;

TEST_CASE("create, start, exit: created -> running -> stopped", "[lifecycle]") {
  Container c("life");
  c.args({"sh", "-c", "read line; echo got-$line"});
  // stdin of the container: a pipe we keep open until we want it to exit.
  int p[2];
  REQUIRE(::pipe2(p, O_CLOEXEC) == 0);
  Fd rd(p[0]), wr(p[1]);
  auto r = c.create({}, SpawnOpts{.extra_fds = {{rd.get(), 0}}});
  INFO(r.err);
  REQUIRE(r.ok());
  auto st = c.state();
  CHECK(st.value("status", "") == "created");
  CHECK(st.value("id", "") == c.id);
  CHECK(st.value("bundle", "") == c.bundle);
  CHECK(st.contains("ociVersion"));
  int pid = st.value("pid", 0);
  REQUIRE(pid > 0);
  CHECK(alive(pid));
  CHECK(c.container_out().empty());  // the user process has not run yet

  auto s = c.start();
  INFO(s.err);
  REQUIRE(s.ok());
  CHECK(c.status() == "running");
  CHECK(c.pid() == pid);
  auto s2 = c.start();
  CHECK(s2.code != 0);  // already running
  CHECK(c.status() == "running");

  REQUIRE(::write(wr.get(), "x\n", 2) == 2);
  CHECK(c.wait_status("stopped"));
  CHECK(c.container_out() == "got-x\n");
  CHECK(c.start().code != 0);  // stopped containers cannot be started again
  auto d = c.del();
  INFO(d.err);
  REQUIRE(d.ok());
  CHECK(leftovers(c).empty());
}

// An engine polls `state` while `create` runs and deletes what it sees
// stopped: a create under way must read "creating" (or "created"), never
// "stopped", from the moment its state.json exists.
TEST_CASE("state polled during create never says stopped", "[lifecycle][state]") {
  std::map<std::string, int> seen;
  for (int i = 0; i < 20; ++i) {
    Container c("state-poll");
    c.args({"true"});
    auto create = std::async(std::launch::async, [&c] { return c.create(); });
    while (create.wait_for(0ms) != std::future_status::ready) {
      auto r = c.rt({"state", c.id});
      if (r.ok()) ++seen[json::parse(r.out).at("status").get<std::string>()];
    }
    auto made = create.get();
    INFO(made.err);
    REQUIRE(made.ok());
    CHECK(c.status() == "created");
  }
  INFO("statuses seen while creating: " << json(seen).dump());
  CHECK(seen.count("stopped") == 0);
  CHECK(seen.size() > 0);
}

// create checks that the program exists; execve can still fail after start
// (a script whose interpreter is missing). runc's start then succeeds, prints
// the error, and the container exits with status 1: engines report that
// status, not a failed start (126/127), and ctr run --rm cleans up.
TEST_CASE("an exec failing after start: start succeeds and the container exits 1", "[lifecycle][start]") {
  Container c("exec-fails");
  write_file(c.rootfs + "/bad.sh", "#!/no/such/interpreter\n", 0755);
  c.args({"/bad.sh"});
  // The init outlives create: reparented to us, its status can be read.
  REQUIRE(::prctl(PR_SET_CHILD_SUBREAPER, 1) == 0);
  auto made = c.create();
  INFO(made.err);
  REQUIRE(made.ok());
  const int pid = c.pid();
  auto started = c.start();
  INFO(started.err);
  CHECK(started.ok());
  if (!runtime_is_runc()) CHECK(contains(started.err, "/bad.sh"));  // runc 1.1.5 says nothing
  int status = 0;
  CHECK(::waitpid(pid, &status, 0) == pid);
  ::prctl(PR_SET_CHILD_SUBREAPER, 0);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 1);
  CHECK(c.status() == "stopped");
  REQUIRE(c.del().ok());
  CHECK(leftovers(c).empty());
}

// `run` says why the exec failed as soon as start is done, before it waits
// and deletes (whose poststop hook speaks after it), as runc does.
TEST_CASE("run prints a late exec error before the poststop hooks", "[lifecycle][start]") {
  Container c("exec-fails-run");
  write_file(c.rootfs + "/bad.sh", "#!/no/such/interpreter\n", 0755);
  c.args({"/bad.sh"});
  c.cfg["hooks"]["poststop"] = json::array({{{"path", "/bin/sh"}, {"args", {"sh", "-c", "echo poststop-ran >&2"}}}});
  auto r = c.run();
  INFO(r.err);
  CHECK(r.code == 1);
  const auto hook = r.err.find("poststop-ran"), error = r.err.find("/bad.sh");
  REQUIRE(error != std::string::npos);
  if (!runtime_is_runc()) {  // runc 1.1.5 does not pass the hook's stderr on
    REQUIRE(hook != std::string::npos);
    CHECK(error < hook);
  }
  CHECK(leftovers(c).empty());
}

TEST_CASE("kill accepts KILL, 9 and SIGKILL", "[lifecycle][kill]") {
  for (std::string sig : {"KILL", "9", "SIGKILL"}) {
    Container c("kill");
    INFO("signal " << sig);
    int pid = c.start_process({"sleep", "60"});
    auto k = c.rt({"kill", c.id, sig});
    INFO(k.err);
    CHECK(k.ok());
    CHECK(c.wait_status("stopped"));
    CHECK(gone_soon(pid));
    auto again = c.rt({"kill", c.id, sig});
    CHECK(again.code != 0);
    CHECK(contains(again.err, "container not running"));
    REQUIRE(c.del().ok());
    CHECK(leftovers(c).empty());
  }
}

// Engines probe a container with signal 0: it succeeds while the init lives
// and delivers nothing; once it is gone the answer is "not running".
TEST_CASE("kill ID 0 tells whether the container is alive", "[lifecycle][kill]") {
  Container c("kill-zero");
  int pid = c.start_process({"sleep", "60"});
  auto probe = c.rt({"kill", c.id, "0"});
  INFO(probe.err);
  CHECK(probe.ok());
  CHECK(c.state().at("status") == "running");
  REQUIRE(c.rt({"kill", c.id, "KILL"}).ok());
  CHECK(c.wait_status("stopped"));
  CHECK(gone_soon(pid));
  auto dead = c.rt({"kill", c.id, "0"});
  CHECK(dead.code != 0);
  CHECK(contains(dead.err, "container not running"));
  REQUIRE(c.del().ok());
}

TEST_CASE("kill delivers the named signal", "[lifecycle][kill]") {
  Container c("kill-term");
  c.args({"sh", "-c", "trap 'echo got-term; exit 0' TERM; echo ready; while true; do sleep 0.05; done"});
  REQUIRE(c.create().ok());
  REQUIRE(c.start().ok());
  for (int i = 0; i < 200 && c.container_out().empty(); ++i) std::this_thread::sleep_for(10ms);
  REQUIRE(c.container_out() == "ready\n");
  auto k = c.rt({"kill", c.id, "TERM"});
  INFO(k.err);
  REQUIRE(k.ok());
  CHECK(c.wait_status("stopped"));
  CHECK(c.container_out() == "ready\ngot-term\n");
}

TEST_CASE("kill --all reaches every process of the container", "[lifecycle][kill]") {
  Container c("kill-all");
  c.cfg["linux"]["namespaces"] = json::array({{{"type", "mount"}}, {{"type", "uts"}}});  // no pid namespace
  c.args({"sh", "-c", "sleep 60 & sleep 61 & wait"});
  REQUIRE(c.create().ok());
  REQUIRE(c.start().ok());
  // Both sleeps are running: three processes in the container's cgroup.
  for (int i = 0; i < 200 && cgroup_pids(c.id).size() < 3; ++i) std::this_thread::sleep_for(10ms);
  CHECK(cgroup_pids(c.id).size() == 3);
  auto k = c.rt({"kill", "--all", c.id, "9"});
  INFO(k.err);
  CHECK(k.ok());
  CHECK(c.wait_status("stopped"));
  for (int i = 0; i < 200 && !cgroup_pids(c.id).empty(); ++i) std::this_thread::sleep_for(10ms);
  CHECK(cgroup_pids(c.id).empty());
  REQUIRE(c.del().ok());
  CHECK(leftovers(c).empty());
}

TEST_CASE("ps --format json lists the container's pids", "[lifecycle]") {
  Container c("ps");
  int pid = c.start_process({"sleep", "60"});
  auto r = c.rt({"ps", "--format", "json", c.id});
  INFO(r.err);
  REQUIRE(r.ok());
  auto j = json::parse(r.out);
  REQUIRE(j.is_array());
  CHECK(j == json::array({pid}));
}

TEST_CASE("pause and resume", "[lifecycle]") {
  Container c("pause");
  int pid = c.start_process({"sleep", "60"});
  auto p = c.rt({"pause", c.id});
  INFO(p.err);
  REQUIRE(p.ok());
  CHECK(c.status() == "paused");
  CHECK(status_field(pid, "State").rfind("D", 0) == 0);  // frozen tasks sleep uninterruptibly
  auto r = c.rt({"resume", c.id});
  INFO(r.err);
  REQUIRE(r.ok());
  CHECK(c.status() == "running");
  CHECK(status_field(pid, "State").rfind("S", 0) == 0);
}

// A frozen process cannot act on SIGKILL: runc thaws a paused container after
// killing it, and engines (podman kill, ctr task delete --force) wait for the
// processes to go.
TEST_CASE("SIGKILL to a paused container ends it within a second", "[lifecycle][kill]") {
  for (bool all : {false, true}) {
    Container c(all ? "pause-kill-all" : "pause-kill");
    INFO((all ? "kill --all" : "kill"));
    int pid = c.start_process({"sleep", "60"});
    REQUIRE(c.rt({"pause", c.id}).ok());
    std::vector<std::string> kill = {"kill", c.id, "KILL"};
    if (all) kill.insert(kill.begin() + 1, "--all");
    auto k = c.rt(kill);
    INFO(k.err);
    CHECK(k.ok());
    CHECK(gone_soon(pid));
    CHECK(c.wait_status("stopped", 1s));
    REQUIRE(c.del().ok());
    CHECK(leftovers(c).empty());
  }
}

TEST_CASE("delete: running fails, --force works, missing ids", "[lifecycle][delete]") {
  Container c("del");
  int pid = c.start_process({"sleep", "60"});
  auto d = c.del();
  CHECK(d.code != 0);
  CHECK(c.status() == "running");
  CHECK(alive(pid));
  auto f = c.del(true);
  INFO(f.err);
  CHECK(f.ok());
  CHECK(gone_soon(pid));
  CHECK(leftovers(c).empty());

  auto gone = c.rt({"delete", "--force", c.id});
  CHECK(gone.code == 0);
  auto del = c.rt({"delete", c.id});
  CHECK(del.code != 0);
  CHECK(contains(del.err, "does not exist"));
  auto st = c.rt({"state", c.id});
  CHECK(st.code != 0);
  CHECK(contains(st.err, "does not exist"));
  auto k = c.rt({"kill", c.id, "KILL"});
  CHECK(k.code != 0);
  CHECK(contains(k.err, "does not exist"));
}

TEST_CASE("delete of a created container kills its init", "[lifecycle][delete]") {
  Container c("del-created");
  c.args({"sleep", "60"});
  REQUIRE(c.create().ok());
  int pid = c.pid();
  auto f = c.del(true);
  INFO(f.err);
  CHECK(f.ok());
  CHECK(gone_soon(pid));
  CHECK(leftovers(c).empty());
}

TEST_CASE("duplicate id", "[lifecycle]") {
  Container c("dup");
  c.args({"sleep", "60"});
  REQUIRE(c.create().ok());
  int pid = c.pid();
  auto again = c.create();
  CHECK(again.code != 0);
  CHECK_FALSE(again.err.empty());
  // The first container is untouched.
  CHECK(c.status() == "created");
  CHECK(c.pid() == pid);
}

TEST_CASE("pid file holds the bare pid of the init", "[lifecycle]") {
  Container c("pidfile");
  c.args({"sleep", "60"});
  std::string pf = c.bundle + "/init.pid";
  auto r = c.create({"--pid-file", pf});
  INFO(r.err);
  REQUIRE(r.ok());
  auto text = read_file(pf);
  CHECK(text == std::to_string(c.pid()));
  // An existing pid file is replaced, not appended to.
  Container c2("pidfile2");
  c2.args({"sleep", "60"});
  std::string pf2 = c2.bundle + "/init.pid";
  write_file(pf2, "999999999999\n");
  REQUIRE(c2.create({"--pid-file=" + pf2}).ok());
  CHECK(read_file(pf2) == std::to_string(c2.pid()));
}

TEST_CASE("list, list --format json, list -q", "[lifecycle][list]") {
  TempDir shared("husk-it-r-");
  Container a("list-a");
  a.share_root(shared.path);
  a.args({"sleep", "60"});
  REQUIRE(a.create().ok());
  Container b("list-b");
  b.share_root(shared.path);
  b.args({"sleep", "60"});
  REQUIRE(b.create().ok());
  REQUIRE(b.start().ok());

  auto q = a.rt({"list", "-q"});
  INFO(q.err);
  REQUIRE(q.ok());
  auto ids = lines(q.out);
  std::sort(ids.begin(), ids.end());
  std::vector<std::string> want{a.id, b.id};
  std::sort(want.begin(), want.end());
  CHECK(ids == want);

  auto t = a.rt({"list"});
  REQUIRE(t.ok());
  auto tl = lines(t.out);
  REQUIRE(tl.size() == 3);
  CHECK(tl[0].rfind("ID", 0) == 0);
  for (auto& l : tl) {
    if (contains(l, a.id)) CHECK(contains(l, "created"));
    if (contains(l, b.id)) CHECK(contains(l, "running"));
  }

  auto j = a.rt({"list", "--format", "json"});
  REQUIRE(j.ok());
  auto arr = json::parse(j.out);
  REQUIRE(arr.is_array());
  REQUIRE(arr.size() == 2);
  for (auto& e : arr) {
    if (e["id"] == a.id) {
      CHECK(e["status"] == "created");
      CHECK(e["pid"] == a.pid());
    } else {
      CHECK(e["id"] == b.id);
      CHECK(e["status"] == "running");
      CHECK(e["pid"] == b.pid());
    }
    CHECK(e["bundle"].is_string());
  }
}

TEST_CASE("list of an empty or missing root", "[lifecycle][list]") {
  Container c("list-empty");
  auto r = c.rt({"list", "--format", "json"});
  INFO(r.err);
  REQUIRE(r.ok());
  auto j = json::parse(trim(r.out).empty() ? "null" : r.out);
  CHECK((j.is_null() || j == json::array()));
  auto missing = run({runtime(), "--root", c.root + "/nonexistent", "list", "-q"});
  CHECK(missing.ok());
  CHECK(trim(missing.out).empty());
}

TEST_CASE("--log with --log-format json appends an error line", "[lifecycle][log]") {
  Container c("log");
  std::string log = c.bundle + "/log.json";
  write_file(log, "{\"level\":\"info\",\"msg\":\"prefilled\"}\n");
  auto r = run({runtime(), "--root", c.root, "--log", log, "--log-format", "json", "state", c.id});
  CHECK(r.code != 0);
  auto l = lines(read_file(log));
  REQUIRE(l.size() >= 2);
  CHECK(l[0] == "{\"level\":\"info\",\"msg\":\"prefilled\"}");
  bool found = false;
  for (size_t i = 1; i < l.size(); ++i) {
    auto j = json::parse(l[i]);
    INFO(l[i]);
    CHECK(j.contains("time"));
    CHECK(j.contains("msg"));
    if (j.value("level", "") == "error") {
      found = true;
      CHECK(contains(j.value("msg", ""), "does not exist"));
      auto t = j.value("time", "");
      CHECK(t.size() >= 20);  // RFC 3339: 2006-01-02T15:04:05Z
      CHECK(t[10] == 'T');
    }
  }
  CHECK(found);

  // The = forms, and a failing create: the message names the problem.
  auto r2 = run({runtime(), "--root=" + c.root, "--log=" + log, "--log-format=json", "create",
                 "--bundle=" + c.bundle + "/nonexistent", c.id});
  CHECK(r2.code != 0);
  auto l2 = lines(read_file(log));
  CHECK(l2.size() > l.size());
  CHECK(l2[0] == l[0]);
  CHECK(json::parse(l2.back()).value("level", "") == "error");
  CHECK(leftovers(c).empty());
}

// `create` of `sleep 60` spelt as argv(pid_file) gives: the pid file names
// the container process.
static void create_spelt(Container& c, const std::function<std::vector<std::string>(const std::string&)>& argv) {
  c.args({"sleep", "60"});
  c.write_config();
  std::string pf = c.bundle + "/pid";
  auto r = run(argv(pf));
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(read_file(pf) == std::to_string(c.pid()));
}

TEST_CASE("--flag=value forms", "[lifecycle][cli]") {
  Container c("eqforms");
  create_spelt(c, [&](const std::string& pf) {
    return std::vector<std::string>{runtime(), "--root=" + c.root, "create", "--bundle=" + c.bundle,
                                    "--pid-file=" + pf, c.id};
  });
}

TEST_CASE("global flags after the command", "[lifecycle][cli][husk-only]") {
  // runc (urfave/cli) rejects global flags after the command with
  // "flag provided but not defined"; husk accepts them anywhere.
  Container c("lateflags");
  c.args({"sleep", "60"});
  c.write_config();
  auto r = run({runtime(), "create", "--root", c.root, "--bundle", c.bundle, c.id});
  INFO(r.err);
  REQUIRE(r.ok());
  auto s = run({runtime(), "state", c.id, "--root=" + c.root});
  INFO(s.err);
  REQUIRE(s.ok());
  CHECK(json::parse(s.out).value("status", "") == "created");
}

TEST_CASE("run -no-subreaper (single dash, as containerd passes it)", "[lifecycle][cli]") {
  Container c("nosubreaper");
  c.args({"sh", "-c", "echo sd-ok"});
  c.write_config();
  auto r = c.rt({"run", "-no-subreaper", "--bundle", c.bundle, c.id});
  INFO(r.err);
  CHECK(r.code == 0);
  CHECK(r.out == "sd-ok\n");
  CHECK(leftovers(c).empty());
}

TEST_CASE("single-dash long options everywhere", "[lifecycle][cli]") {
  // runc parses flags with Go's flag syntax: -flag, -flag value and
  // -flag=value work for every long option, global ones included.
  Container c("singledash");
  create_spelt(c, [&](const std::string& pf) {
    return std::vector<std::string>{runtime(), "-root", c.root, "create", "-bundle", c.bundle, "-pid-file=" + pf, c.id};
  });
  auto s = run({runtime(), "-root=" + c.root, "delete", "-force", c.id});
  INFO(s.err);
  CHECK(s.code == 0);
  CHECK(leftovers(c).empty());
}

TEST_CASE("run --detach leaves a running container", "[lifecycle]") {
  Container c("detach");
  c.args({"sleep", "60"});
  auto r = c.run({"--detach"});
  INFO(r.err);
  REQUIRE(r.ok());
  CHECK(c.status() == "running");
  REQUIRE(c.del(true).ok());
  CHECK(leftovers(c).empty());
}
