// The sandbox without a user namespace: its Landlock plan, network cut,
// environment and refusals, from the config sandbox_config builds.
#include <catch2/catch.hpp>
#include <set>

#include "sandbox/no_userns.h"
#include "unit/sandbox/fake_host.h"

using namespace husk::rt;
using ojson = nlohmann::ordered_json;

namespace {

// /usr, /etc (with shadow), /run, /home/ann (uid 1000) working in ~/proj.
SandboxHost host() {
  SandboxHost h = test::fake_host({"etc", "home", "proc", "run", "tmp", "usr", "var"},
                                  {"/", "/usr", "/etc", "/var", "/var/tmp", "/home", "/home/ann", "/home/ann/proj",
                                   "/home/ann/.ssh", "/etc/shadow", "/run", "/tmp"});
  h.real = [real = h.real](const std::string& p) -> std::optional<std::string> {
    if (p == "/etc/resolv.conf") return "/run/systemd/resolve/stub-resolv.conf";
    return real(p);
  };
  return h;
}

SandboxOptions cmd() { return test::make_command(); }

const std::string kTmp = "/run/user/1000/husk-sandbox-x/tmp";

husk::landlock::Plan plan_for(const SandboxOptions& o, const SandboxHost& h) {
  const SandboxConfig sc = sandbox_config(o, h, "r");
  return no_userns_plan(sc.config, sc.hidden, kTmp);
}

std::set<std::string> trees(const husk::landlock::Plan& p) {
  std::set<std::string> out;
  for (const auto& t : p.trees) out.insert(t.path + (t.write ? " rw" : " ro"));
  return out;
}

bool has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

}  // namespace

TEST_CASE("sandbox without userns: read below /, writes in the project and TMPDIR only", "[sandbox]") {
  const husk::landlock::Plan p = plan_for(cmd(), host());
  CHECK_FALSE(p.mount_view);
  const std::set<std::string> t = trees(p);
  for (const char* w : {"/ ro", "/home/ann/proj rw", "/dev/null rw", "/dev/urandom rw"}) CHECK(t.count(w));
  CHECK(t.count(kTmp + " rw"));
  // The host's own: shared with other users, or their terminals.
  for (const char* no : {"/tmp", "/var/tmp", "/dev/shm", "/dev/pts", "/dev/ptmx", "/dev/console", "/home/ann"})
    for (const char* m : {" rw", " ro"}) CHECK_FALSE(t.count(no + std::string(m)));
  // What the normal sandbox mounts fresh is hidden, the scratch home too.
  for (const char* h : {"/tmp", "/var/tmp", "/run", "/home", "/root", "/dev", "/home/ann", "/etc/shadow"})
    CHECK(has(p.hidden, h));
  for (const auto& h : p.hidden) CHECK(h.rfind("/proc", 0) != 0);
  CHECK(p.scope_signal);
  CHECK(p.scope_abstract_unix);
}

TEST_CASE("sandbox without userns: credentials inside the working directory are walked around", "[sandbox]") {
  SandboxHost h = host();
  h.cwd = "/home/ann";
  const husk::landlock::Plan p = plan_for(cmd(), h);
  CHECK(trees(p).count("/home/ann rw"));
  const husk::landlock::Rights r = husk::landlock::rights(p, 7);
  CHECK(has(r.hidden, "/home/ann/.ssh"));
  CHECK(r.not_hidden.empty());
  const std::vector<std::string> notes = no_userns_notes(r, p);
  REQUIRE(notes.size() == 1);
  CHECK_THAT(notes[0], Catch::StartsWith("/home/ann holds hidden paths (/home/ann/.ssh"));
  CHECK(no_userns_notes(husk::landlock::rights(plan_for(cmd(), host()), 7), plan_for(cmd(), host())).empty());
}

TEST_CASE("sandbox without userns: a read-only bind below a hidden path is a tree of its own", "[sandbox]") {
  SandboxOptions o = cmd();
  o.net = "host";
  const husk::landlock::Plan p = plan_for(o, host());
  CHECK(trees(p).count("/run/systemd/resolve ro"));
  CHECK(has(p.hidden, "/run"));
}

TEST_CASE("sandbox without userns: the network cut by seccomp", "[sandbox]") {
  auto sockets = [](const ojson& seccomp) {
    std::vector<uint64_t> families;
    for (const auto& r : seccomp["syscalls"])
      if (r["names"] == ojson::array({"socket"})) {
        REQUIRE(r["args"].size() == 1);
        CHECK(r["args"][0]["op"] == "SCMP_CMP_EQ");
        families.push_back(r["args"][0]["value"]);
      }
    return families;
  };
  ojson none = sandbox_config(cmd(), host(), "r").config["linux"]["seccomp"];
  const size_t before = none["syscalls"].size();
  cut_network(none, "none");
  CHECK(sockets(none).empty());
  CHECK(none["syscalls"].size() < before);
  ojson net = sandbox_config(cmd(), host(), "r").config["linux"]["seccomp"];
  cut_network(net, "host");
  const std::vector<uint64_t> families = sockets(net);
  CHECK(families.size() == 43);
  CHECK(std::find(families.begin(), families.end(), 1) == families.end());   // AF_UNIX
  CHECK(std::find(families.begin(), families.end(), 40) == families.end());  // AF_VSOCK
  CHECK(std::find(families.begin(), families.end(), 2) != families.end());   // AF_INET
  // socketpair(2) is untouched: allowed by name.
  CHECK(net["syscalls"][0]["names"].dump().find("\"socketpair\"") != std::string::npos);
}

TEST_CASE("sandbox without userns: TMPDIR, and a scratch HOME where the home is not shown", "[sandbox]") {
  auto env_of = [](const ojson& cfg) {
    std::vector<std::string> env;
    for (const auto& e : cfg["process"]["env"]) env.push_back(e);
    return env;
  };
  ojson cfg = sandbox_config(cmd(), host(), "r").config;
  CHECK(no_userns_env(cfg, kTmp));
  std::vector<std::string> env = env_of(cfg);
  CHECK(has(env, "TMPDIR=" + kTmp));
  CHECK(has(env, "HOME=" + kTmp + "/home"));
  CHECK_FALSE(has(env, "HOME=/home/ann"));
  SandboxHost h = host();
  h.cwd = "/home/ann";
  cfg = sandbox_config(cmd(), h, "r").config;
  CHECK_FALSE(no_userns_env(cfg, kTmp));
  env = env_of(cfg);
  CHECK(has(env, "HOME=/home/ann"));
  CHECK(has(env, "TMPDIR=" + kTmp));
}

TEST_CASE("sandbox without userns: what needs a namespace is refused, naming the flag", "[sandbox]") {
  CHECK_NOTHROW(refuse_without_userns(cmd(), "why"));
  SandboxOptions o = cmd();
  o.overlay = true;
  CHECK_THROWS_WITH(refuse_without_userns(o, "why"), Catch::StartsWith("--overlay: ") && Catch::Contains("why"));
  o = cmd();
  o.keep_changes = "k";
  CHECK_THROWS_WITH(refuse_without_userns(o, "why"), Catch::StartsWith("--keep-changes: "));
  o = cmd();
  o.allow_hosts = {"example.org"};
  CHECK_THROWS_WITH(refuse_without_userns(o, "why"), Catch::StartsWith("--allow-host: "));
}

TEST_CASE("sandbox without userns: the walls said", "[sandbox]") {
  husk::landlock::Plan p;
  p.scope_signal = true;
  const std::string old = walls_line("limit", husk::landlock::rights(p, 5), cmd(), kTmp);
  CHECK_THAT(old,
             Catch::StartsWith("no user namespace here (limit): running with Landlock ABI 5, seccomp, no_new_privs"));
  CHECK_THAT(old, Catch::Contains("Landlock ABI 5 here: signals to processes outside are not refused (ABI 6)"));
  CHECK_THAT(old, Catch::Contains("no network"));
  SandboxOptions o = cmd();
  o.net = "host";
  const std::string now = walls_line("limit", husk::landlock::rights(p, 7), o, kTmp);
  CHECK_THAT(now, Catch::Contains("no Unix sockets"));
  CHECK_THAT(now, Catch::Contains("no signal to processes outside"));
  CHECK_THAT(now, !Catch::Contains("not refused"));
}

TEST_CASE("sandbox without userns: only the init's clone refused falls back", "[sandbox]") {
  using husk::Error;
  for (int err : {EPERM, ENOSPC, EACCES, EINVAL, EUSERS})
    CHECK_FALSE(userns_refused(Error("create sandbox-1: clone container init: x", err), false).empty());
  CHECK_THAT(userns_refused(Error("clone container init: No space left on device", ENOSPC), false),
             Catch::Contains("user"));
  // In the host's own user namespace a limit reached is the user's processes
  // holding them (another sandbox's nested ones): no run with fewer walls.
  for (int err : {ENOSPC, EUSERS})
    CHECK_THROWS_WITH(userns_refused(Error("clone container init: x", err), true),
                      Catch::Contains("not running the command with fewer walls"));
  for (int err : {EPERM, EACCES, EINVAL})
    CHECK_FALSE(userns_refused(Error("clone container init: x", err), true).empty());
  // Another failure, or another errno, is the normal sandbox's to report.
  CHECK(userns_refused(Error("clone container init: Resource temporarily unavailable", EAGAIN), true).empty());
  CHECK(userns_refused(Error("mount proc on /proc: Operation not permitted", EPERM), true).empty());
}
