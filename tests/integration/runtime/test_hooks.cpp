// OCI hooks: order, the state each one gets on stdin, failure handling.
#include <catch2/catch.hpp>

#include <filesystem>

#include "harness.h"

using namespace hit;
namespace fs = std::filesystem;

namespace {

// Appends "<name> <state JSON on one line>" to the log named by $2, exits $3.
const char* kHookScript =
    "#!/bin/sh\n"
    "printf '%s ' \"$1\" >> \"$2\"\n"
    "tr -d '\\n' >> \"$2\"\n"
    "echo >> \"$2\"\n"
    "exit ${3:-0}\n";

struct HookLog {
  std::string name;
  json state;
};

struct HookSetup {
  TempDir dir{"husk-it-hooks-"};
  std::string logdir = dir.path, log, script;

  explicit HookSetup(Container& c) {
    log = logdir + "/log";
    script = c.bundle + "/hook.sh";
    write_file(script, kHookScript, 0755);
    // startContainer runs inside the container: its path and log are there.
    write_file(c.rootfs + "/hook.sh", kHookScript, 0755);
    c.cfg["mounts"].push_back({{"destination", "/hooklog"}, {"type", "bind"}, {"source", logdir},
                               {"options", {"rbind", "rw"}}});
  }

  json host_hook(const std::string& name, int exit_code = 0) const {
    return {{"path", script}, {"args", {"hook.sh", name, log, std::to_string(exit_code)}}};
  }

  std::vector<HookLog> entries() const {
    std::vector<HookLog> v;
    if (!fs::exists(log)) return v;
    for (auto& l : lines(read_file(log))) {
      auto sp = l.find(' ');
      HookLog h{l.substr(0, sp), json::object()};
      try {
        h.state = json::parse(l.substr(sp + 1));
      } catch (...) {
      }
      v.push_back(h);
    }
    return v;
  }

  std::vector<std::string> names() const {
    std::vector<std::string> v;
    for (auto& e : entries()) v.push_back(e.name);
    return v;
  }
};

}  // namespace

TEST_CASE("hooks run in order with the right state", "[hooks]") {
  // poststart is checked on its own below: runc 1.1 runs it during create.
  Container c("hooks");
  HookSetup h(c);
  c.cfg["hooks"] = {
      {"prestart", {h.host_hook("prestart")}},
      {"createRuntime", {h.host_hook("createRuntime")}},
      {"createContainer", {h.host_hook("createContainer")}},
      {"startContainer", {{{"path", "/hook.sh"}, {"args", {"hook.sh", "startContainer", "/hooklog/log"}}}}},
      {"poststop", {h.host_hook("poststop"), h.host_hook("poststop2")}},
  };
  c.args({"sleep", "60"});
  bool pid_ns = false;
  for (const auto& n : c.cfg["linux"]["namespaces"]) pid_ns |= n.value("type", "") == "pid" && !n.contains("path");
  REQUIRE(pid_ns);
  auto r = c.create();
  INFO(r.err);
  REQUIRE(r.ok());
  int pid = c.pid();
  CHECK(h.names() == std::vector<std::string>{"prestart", "createRuntime", "createContainer"});
  auto s = c.start();
  INFO(s.err);
  REQUIRE(s.ok());
  CHECK(h.names() == std::vector<std::string>{"prestart", "createRuntime", "createContainer", "startContainer"});
  REQUIRE(c.rt({"kill", c.id, "KILL"}).ok());
  REQUIRE(c.wait_status("stopped"));
  CHECK(h.names().size() == 4);  // poststop belongs to delete
  auto d = c.del();
  INFO(d.err);
  REQUIRE(d.ok());

  auto e = h.entries();
  REQUIRE(h.names() == std::vector<std::string>{"prestart", "createRuntime", "createContainer", "startContainer",
                                                "poststop", "poststop2"});
  std::map<std::string, std::string> want{{"prestart", "creating"},       {"createRuntime", "creating"},
                                          {"createContainer", "creating"}, {"startContainer", "created"},
                                          {"poststop", "stopped"},        {"poststop2", "stopped"}};
  for (auto& x : e) {
    INFO(x.name << " got " << x.state.dump());
    CHECK(x.state.value("id", "") == c.id);
    CHECK(x.state.value("status", "") == want[x.name]);
    CHECK(x.state.contains("ociVersion"));
    CHECK(x.state.value("bundle", "") == c.bundle);
    if (x.name == "prestart" || x.name == "createRuntime") {
      CHECK(x.state.value("pid", 0) == pid);
    } else if (x.name == "createContainer" || x.name == "startContainer") {
      // These run inside the container's pid namespace, where the
      // container process is 1 (runc reports that): the state is the
      // container's view, not the host's pid put in.
      CHECK(x.state.value("pid", 0) == 1);
    }
  }
  CHECK(leftovers(c).empty());
}

TEST_CASE("poststart hooks run during start, after startContainer", "[hooks][husk-only]") {
  // runtime-spec: poststart runs after the user process was started, before
  // `start` returns. runc 1.1 runs it at the end of `create` (status
  // "created"), fixed in runc 1.2.
  Container c("hooks-post");
  HookSetup h(c);
  c.cfg["hooks"] = {
      {"startContainer", {{{"path", "/hook.sh"}, {"args", {"hook.sh", "startContainer", "/hooklog/log"}}}}},
      {"poststart", {h.host_hook("poststart"), h.host_hook("poststart2")}},
  };
  c.args({"sleep", "60"});
  REQUIRE(c.create().ok());
  int pid = c.pid();
  CHECK(h.names().empty());
  REQUIRE(c.start().ok());
  REQUIRE(h.names() == std::vector<std::string>{"startContainer", "poststart", "poststart2"});
  for (auto& x : h.entries()) {
    if (x.name == "startContainer") continue;
    INFO(x.name << " got " << x.state.dump());
    CHECK(x.state.value("status", "") == "running");
    CHECK(x.state.value("pid", 0) == pid);
    CHECK(x.state.value("id", "") == c.id);
  }
}

TEST_CASE("hook env and args are passed", "[hooks]") {
  Container c("hooks-env");
  HookSetup h(c);
  auto out = h.logdir + "/env";
  write_file(c.bundle + "/env.sh", "#!/bin/sh\necho \"$0|$1|$HOOK_VAR|$PATH\" > " + out + "\n", 0755);
  c.cfg["hooks"] = {{"createRuntime", {{{"path", c.bundle + "/env.sh"}, {"args", {"argv0", "one"}},
                                        {"env", {"HOOK_VAR=hv", "PATH=/usr/bin:/bin"}}}}}};
  REQUIRE(c.create().ok());
  CHECK(read_file(out) == c.bundle + "/env.sh|one|hv|/usr/bin:/bin\n");
}

TEST_CASE("a failing prestart hook fails create and leaves nothing", "[hooks]") {
  Container c("hooks-fail");
  HookSetup h(c);
  c.cfg["hooks"] = {{"prestart", {h.host_hook("prestart", 7)}}, {"poststart", {h.host_hook("poststart")}}};
  c.args({"sleep", "60"});
  auto r = c.create();
  CHECK(r.code != 0);
  CHECK_FALSE(r.err.empty());
  CHECK(h.names() == std::vector<std::string>{"prestart"});
  auto st = c.rt({"state", c.id});
  CHECK(st.code != 0);
  CHECK(leftovers(c).empty());
}

TEST_CASE("a failing createRuntime hook fails create and leaves nothing", "[hooks]") {
  Container c("hooks-fail-cr");
  HookSetup h(c);
  c.cfg["hooks"] = {{"createRuntime", {h.host_hook("createRuntime", 1)}}};
  c.args({"sleep", "60"});
  auto r = c.create();
  CHECK(r.code != 0);
  CHECK(leftovers(c).empty());
}

TEST_CASE("a failing poststart hook fails start and stops the container", "[hooks][husk-only]") {
  // runtime-spec 1.3, runtime.md lifecycle step 9: "If any poststart hook
  // fails, the runtime MUST generate an error, stop the container, and
  // continue the lifecycle at step 12." runc 1.1 runs poststart during create
  // and fails the create.
  Container c("hooks-ps");
  HookSetup h(c);
  c.cfg["hooks"] = {{"poststart", {h.host_hook("poststart", 1), h.host_hook("poststart2")}}};
  c.args({"sleep", "60"});
  auto cr = c.create();
  INFO(cr.err);
  REQUIRE(cr.ok());
  auto s = c.start();
  INFO(s.err);
  CHECK(s.code != 0);
  CHECK(c.status() == "stopped");
  CHECK(h.names() == std::vector<std::string>{"poststart"});
}
