// The sandbox's Landlock plan: the mount view of sandbox_config said again.
#include <catch2/catch.hpp>
#include <set>

#include "sandbox/internal.h"
#include "sandbox/proxy.h"
#include "sandbox/socks.h"
#include "sandbox/sandbox.h"
#include "unit/sandbox/fake_host.h"

using namespace husk::rt;

namespace {

// /usr, /etc (with shadow), /var, /home/ann (uid 1000) working in ~/proj.
SandboxHost host() {
  return test::fake_host({"etc", "home", "proc", "tmp", "usr", "var"},
                         {"/", "/usr", "/etc", "/var", "/var/tmp", "/home", "/home/ann", "/home/ann/proj",
                          "/home/ann/.ssh", "/etc/shadow", "/srv/data"});
}

SandboxOptions cmd() { return test::make_command(); }

// "path rw|ro" of each tree.
std::set<std::string> trees(const husk::landlock::Plan& p) {
  std::set<std::string> out;
  for (const auto& t : p.trees) out.insert(t.path + (t.write ? " rw" : " ro"));
  return out;
}

}  // namespace

TEST_CASE("sandbox landlock: read everywhere shown, writes where the mounts allow", "[sandbox]") {
  SandboxOptions o = cmd();
  o.ro = {"/srv/data"};
  const husk::landlock::Plan p = sandbox_config(o, host(), "r").landlock;
  const std::set<std::string> t = trees(p);
  CHECK(t.count("/ ro"));
  for (const char* w : {"/home/ann/proj rw", "/home/ann rw", "/tmp rw", "/var/tmp rw", "/dev/shm rw", "/dev/pts rw",
                        "/dev/null rw", "/dev/tty rw"})
    CHECK(t.count(w));
  // Fresh, yet nothing is kept there; --ro; the host's root directories.
  for (const char* r : {"/run", "/home", "/root", "/srv/data", "/usr", "/etc", "/dev", "/proc"}) {
    CHECK_FALSE(t.count(std::string(r) + " rw"));
  }
  CHECK(p.scope_abstract_unix);
  CHECK(p.scope_signal);
  CHECK_FALSE(p.limit_tcp);
}

TEST_CASE("sandbox landlock: hidden paths outside the kernel views, tcp to the proxy only", "[sandbox]") {
  SandboxOptions o = cmd();
  o.hide = {"/usr"};
  o.allow_hosts = {"example.org"};
  const husk::landlock::Plan p = sandbox_config(o, host(), "r").landlock;
  const std::set<std::string> hidden(p.hidden.begin(), p.hidden.end());
  CHECK(hidden.count("/etc/shadow"));
  CHECK(hidden.count("/usr"));
  for (const auto& h : hidden) {
    CHECK(h.rfind("/proc", 0) != 0);
    CHECK(h.rfind("/sys", 0) != 0);
  }
  CHECK(p.limit_tcp);
  CHECK(p.connect_ports == std::vector<uint16_t>{kProxyPort, husk::rt::socks::kPort});
}

TEST_CASE("sandbox landlock: the working directory at home: its credentials left to the mount view", "[sandbox]") {
  SandboxHost h = host();
  h.cwd = "/home/ann";
  const husk::landlock::Plan p = sandbox_config(cmd(), h, "r").landlock;
  CHECK(std::find(p.hidden.begin(), p.hidden.end(), "/home/ann/.ssh") != p.hidden.end());
  const husk::landlock::Rights r = husk::landlock::rights(p, 7);
  CHECK(std::find(r.not_hidden.begin(), r.not_hidden.end(), "/home/ann/.ssh") != r.not_hidden.end());
  CHECK_FALSE(trees(p).count("/etc/shadow rw"));
  CHECK(std::find(r.hidden.begin(), r.hidden.end(), "/etc/shadow") != r.hidden.end());
}

TEST_CASE("sandbox landlock: a pinned directory is no tree of its own: the working directory's grants it",
          "[sandbox]") {
  SandboxHost h = host();
  const auto real = h.real;
  h.real = [real](const std::string& p) -> std::optional<std::string> {
    if (p == "/home/ann/proj/conf" || p == "/home/ann/proj/conf/key") return p;
    return real(p);
  };
  SandboxOptions o = cmd();
  o.hide = {"conf/key"};
  const SandboxConfig sc = sandbox_config(o, h, "r");
  bool pinned = false;
  for (const auto& m : sc.config["mounts"]) pinned |= m["destination"] == "/home/ann/proj/conf";
  CHECK(pinned);
  const std::set<std::string> t = trees(sc.landlock);
  CHECK(t.count("/home/ann/proj rw"));
  CHECK_FALSE(t.count("/home/ann/proj/conf rw"));
}

TEST_CASE("sandbox landlock: --overlay makes the shown directories writable trees", "[sandbox]") {
  SandboxOptions o = cmd();
  o.overlay = true;
  SandboxHost h = host();
  const std::set<std::string> t = trees(sandbox_config(o, h, "r", "/ov").landlock);
  CHECK(t.count("/usr rw"));
  CHECK(t.count("/home/ann/proj rw"));
}
