// sandbox_config: the sandbox's OCI config from options and a made-up host.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "sandbox/sandbox.h"
#include "spec/spec.h"

using namespace husk::rt;
using Catch::Contains;
using Catch::StartsWith;
using ojson = nlohmann::ordered_json;

namespace {

// A host with /usr, /etc, /bin -> usr/bin, /home/ann (uid 1000) and the
// files named in `existing` (plus every directory named).
SandboxHost host(std::set<std::string> existing = {}) {
  SandboxHost h;
  h.uid = 1000;
  h.gid = 1000;
  h.user_name = "ann";
  h.home = "/home/ann";
  h.shell = "/bin/sh";
  h.cwd = "/home/ann/proj";
  h.root_dirs = {"bin", "etc", "home", "proc", "root", "tmp", "usr", "var"};
  h.homes = {"/root", "/home/ann", "/home/bob"};
  for (const char* p : {"/", "/usr", "/usr/bin", "/etc", "/var", "/home", "/home/ann", "/home/ann/proj", "/home/bob",
                        "/root", "/etc/shadow"})
    existing.insert(p);
  h.real = [existing](const std::string& p) -> std::optional<std::string> {
    if (p == "/bin") return "/usr/bin";
    if (p == "/home/ann/link-to-keys") return "/home/ann/.ssh";
    if (!existing.count(p)) return std::nullopt;
    return p;
  };
  h.env = {{"PATH", "/usr/bin:/bin"}, {"TERM", "xterm"}, {"AWS_SECRET_ACCESS_KEY", "s3cr3t"}, {"EDITOR", "vi"}};
  return h;
}

SandboxOptions cmd(std::vector<std::string> args = {"make"}) {
  SandboxOptions o;
  o.args = std::move(args);
  return o;
}

// "dest type options..." of every mount, in order.
std::vector<std::string> mounts(const ojson& cfg) {
  std::vector<std::string> out;
  for (const auto& m : cfg["mounts"]) {
    std::string line = m["destination"].get<std::string>() + " " + m["type"].get<std::string>();
    if (m["type"] == "bind") line += " " + m["source"].get<std::string>();
    for (const auto& o : m.value("options", ojson::array())) line += " " + o.get<std::string>();
    out.push_back(line);
  }
  return out;
}

bool has(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

// The hidden paths: maskedPaths, and what the null device or an empty
// read-only directory is mounted over.
std::vector<std::string> masked(const ojson& cfg) {
  std::vector<std::string> out = cfg["linux"]["maskedPaths"];
  for (const auto& m : cfg["mounts"])
    if (m["source"] == "/dev/null" || (m["type"] == "tmpfs" && m["options"][0] == "ro"))
      out.push_back(m["destination"]);
  return out;
}

}  // namespace

TEST_CASE("sandbox: the host's directories read-only, the working directory writable, homes hidden", "[sandbox]") {
  SandboxConfig sc = sandbox_config(cmd(), host(), "/run/sb/rootfs");
  const ojson& c = sc.config;
  // Valid for the parser and validator every create uses.
  REQUIRE_NOTHROW(husk::spec::validate(husk::spec::parse(c.dump()), true));
  CHECK(c["root"] == ojson({{"path", "/run/sb/rootfs"}, {"readonly", true}}));
  auto m = mounts(c);
  CHECK(has(m, "/usr bind /usr rbind nosuid nodev rro"));
  CHECK(has(m, "/bin bind /usr/bin rbind nosuid nodev rro"));  // a symlink at / shown as its directory
  CHECK(has(m, "/etc bind /etc rbind nosuid nodev rro"));
  for (const char* replaced : {"/proc bind", "/tmp bind", "/home bind", "/root bind"})
    for (const auto& line : m) CHECK(line.rfind(replaced, 0) != 0);
  CHECK(has(m, "/proc proc"));
  CHECK(has(m, "/tmp tmpfs nosuid nodev mode=1777"));
  CHECK(has(m, "/home tmpfs nosuid nodev mode=755"));
  CHECK(has(m, "/root tmpfs nosuid nodev mode=700"));
  CHECK(has(m, "/sys sysfs nosuid noexec nodev ro"));
  // The home, not shown itself, is a private scratch directory; the project is bound writable after it.
  auto home = std::find(m.begin(), m.end(), "/home/ann tmpfs nosuid nodev mode=700");
  auto proj = std::find(m.begin(), m.end(), "/home/ann/proj bind /home/ann/proj rbind nosuid nodev");
  REQUIRE(home != m.end());
  REQUIRE(proj != m.end());
  CHECK(home < proj);

  const ojson& p = c["process"];
  CHECK(p["user"] == ojson({{"uid", 1000}, {"gid", 1000}}));
  CHECK(p["cwd"] == "/home/ann/proj");
  CHECK(p["noNewPrivileges"] == true);
  CHECK(p["terminal"] == false);
  CHECK(p["capabilities"]["bounding"].empty());
  CHECK(p["capabilities"]["effective"].empty());
  // Only what programs need: no secret from the caller's environment.
  std::vector<std::string> env = p["env"];
  CHECK(env == std::vector<std::string>{"HOME=/home/ann", "LOGNAME=ann", "PATH=/usr/bin:/bin", "SHELL=/bin/sh",
                                        "TERM=xterm", "USER=ann"});

  std::vector<std::string> ns;
  for (const auto& n : c["linux"]["namespaces"]) ns.push_back(n["type"]);
  CHECK(ns == std::vector<std::string>{"pid", "ipc", "uts", "mount", "cgroup", "user", "network"});
  CHECK(c["linux"]["uidMappings"] == ojson::parse(R"([{"containerID":1000,"hostID":1000,"size":1}])"));
  CHECK(c["linux"]["seccomp"]["defaultAction"] == "SCMP_ACT_ERRNO");
  CHECK_FALSE(c["linux"].contains("resources"));
  CHECK(has(masked(c), "/etc/shadow"));
  CHECK(sc.notes.empty());
}

TEST_CASE("sandbox: credentials are masked wherever they show, deny wins", "[sandbox]") {
  SandboxHost h = host({"/home/ann/.ssh", "/home/ann/.aws", "/home/bob/.ssh", "/root/.ssh", "/home/ann/link-to-keys",
                         "/home/ann/proj/.env", "/etc/hosts"});
  // The home itself shown: its credentials masked, another user's not shown at all.
  h.cwd = "/home/ann";
  auto c = sandbox_config(cmd(), h, "r").config;
  CHECK(has(masked(c), "/home/ann/.ssh"));
  CHECK(has(masked(c), "/home/ann/.aws"));
  CHECK_FALSE(has(masked(c), "/home/bob/.ssh"));

  // --ro /home/bob shows bob's home: its credentials masked as well.
  SandboxOptions o = cmd();
  o.ro = {"/home/bob"};
  c = sandbox_config(o, h, "r").config;
  CHECK(has(masked(c), "/home/bob/.ssh"));
  CHECK(has(masked(c), "/home/ann/.ssh"));

  // A symlink to the keys, allowed by name: refused, the real path is a credential.
  o = cmd();
  o.rw = {"link-to-keys"};
  REQUIRE_THROWS_WITH(sandbox_config(o, h, "r"), Contains("--rw link-to-keys: is a symlink (or below one) to /home/ann/.ssh"));
  h.cwd = "/home/ann/.ssh";
  REQUIRE_THROWS_WITH(sandbox_config(cmd(), h, "r"), Contains("is inside /home/ann/.ssh"));

  // --hide adds its own.
  h.cwd = "/home/ann/proj";
  o = cmd();
  o.hide = {".env", "/etc/hosts"};
  c = sandbox_config(o, h, "r").config;
  CHECK(has(masked(c), "/home/ann/proj/.env"));
  CHECK(has(masked(c), "/etc/hosts"));
}

TEST_CASE("sandbox: nothing brings back what the fresh mounts hide, no symlink is followed", "[sandbox]") {
  SandboxHost h = host({"/tmp", "/tmp/proj", "/var/tmp"});
  for (const char* p : {"/tmp", "/var/tmp", "/var", "/run", "/home", "/dev"}) {
    SandboxOptions o = cmd();
    o.ro = {p};
    REQUIRE_THROWS_WITH(sandbox_config(o, h, "r"), Contains("which a sandbox replaces"));
  }
  h.cwd = "/tmp";  // the host's /tmp holds tmux, ssh-agent and X11 sockets
  REQUIRE_THROWS_WITH(sandbox_config(cmd(), h, "r"), Contains("the working directory /tmp: would show the host's /tmp"));
  h.cwd = "/tmp/proj";  // a directory of its own below it is fine
  REQUIRE_NOTHROW(sandbox_config(cmd(), h, "r"));
  // husk's seccomp cache of this user: a sandbox that could write it would
  // disarm the next one.
  SandboxHost cache = host({"/tmp", "/tmp/husk-1000", "/run/user/1000/husk"});
  cache.cwd = "/tmp/husk-1000";
  REQUIRE_THROWS_WITH(sandbox_config(cmd(), cache, "r"), Contains("is inside /tmp/husk-1000"));
  SandboxOptions o = cmd();
  o.ro = {"/bin"};  // /bin -> /usr/bin
  REQUIRE_THROWS_WITH(sandbox_config(o, h, "r"), "--ro /bin: is a symlink (or below one) to /usr/bin; name /usr/bin itself");
  o = cmd();
  o.hide = {"/nonexistent"};
  REQUIRE_THROWS_WITH(sandbox_config(o, h, "r"), "--hide /nonexistent: no such file or directory");
}

TEST_CASE("sandbox: a replaced directory that is a symlink has its target covered too", "[sandbox]") {
  // Fedora Atomic: /home -> var/home; /var is shown read-only.
  SandboxHost h = host({"/var/home", "/var/home/ann", "/var/home/ann/proj", "/var/home/bob"});
  auto base_real = h.real;
  h.real = [base_real](const std::string& p) -> std::optional<std::string> {
    if (p == "/home" || p.rfind("/home/", 0) == 0) return base_real("/var" + p);
    return base_real(p);
  };
  h.cwd = "/var/home/ann/proj";
  auto c = sandbox_config(cmd(), h, "r").config;
  auto m = mounts(c);
  CHECK(has(m, "/home tmpfs nosuid nodev mode=755"));
  CHECK(has(m, "/var/home tmpfs nosuid nodev mode=755"));  // bob's home was readable through /var
  // Its own binds come after: the working directory shows above the fresh mount.
  auto at = [&](const std::string& line) { return std::find(m.begin(), m.end(), line) - m.begin(); };
  CHECK(at("/var/home tmpfs nosuid nodev mode=755") < at("/var/home/ann/proj bind /var/home/ann/proj rbind nosuid nodev"));
  SandboxOptions o = cmd();
  o.ro = {"/var/home"};
  REQUIRE_THROWS_WITH(sandbox_config(o, h, "r"), Contains("would show the host's /home (/var/home)"));
  h.cwd = "/var";
  REQUIRE_THROWS_WITH(sandbox_config(cmd(), h, "r"), Contains("which a sandbox replaces"));
}

TEST_CASE("sandbox: the caller's home is private wherever it is, its credentials found through HOME", "[sandbox]") {
  SandboxHost h = host({"/var/lib/pg", "/var/lib/pg/.ssh", "/srv/ldap-home", "/srv/ldap-home/.aws"});
  h.home = "/var/lib/pg";  // under /var, which is shown read-only
  h.cwd = "/var/lib/pg";
  auto c = sandbox_config(cmd(), h, "r").config;
  CHECK(has(masked(c), "/var/lib/pg/.ssh"));  // a home not in h.homes: its credentials still masked
  h.cwd = "/home/ann/proj";
  c = sandbox_config(cmd(), h, "r").config;
  CHECK(has(mounts(c), "/var/lib/pg tmpfs nosuid nodev mode=700"));
  h.home = "/srv/ldap-home";
  h.cwd = "/srv/ldap-home";
  c = sandbox_config(cmd(), h, "r").config;
  CHECK(has(masked(c), "/srv/ldap-home/.aws"));
}

TEST_CASE("sandbox: flags are checked and name themselves", "[sandbox]") {
  SandboxHost h = host();
  SandboxOptions o = cmd({});
  REQUIRE_THROWS_WITH(sandbox_config(o, h, "r"), Contains("no command given"));
  o = cmd();
  o.rw = {"/nonexistent"};
  REQUIRE_THROWS_WITH(sandbox_config(o, h, "r"), "--rw /nonexistent: no such file or directory");
  o = cmd();
  o.ro = {"/"};
  REQUIRE_THROWS_WITH(sandbox_config(o, h, "r"), Contains("--ro /: the host's root is shown read-only"));
  o = cmd();
  o.ro = {"/usr"};
  o.rw = {"/usr/../usr"};
  REQUIRE_THROWS_WITH(sandbox_config(o, h, "r"), "--rw /usr/../usr: already given as --ro");
  o = cmd();
  o.net = "bridge";
  REQUIRE_THROWS_WITH(sandbox_config(o, h, "r"), "--net bridge: must be none or host");
  o = cmd();
  o.env = {"NOPE"};
  REQUIRE_THROWS_WITH(sandbox_config(o, h, "r"), "--env NOPE: not set in husk's environment");
  o = cmd();
  o.memory = "lots";
  REQUIRE_THROWS_WITH(sandbox_config(o, h, "r"), Contains("--memory: invalid size"));
  o = cmd();
  o.cpus = "-1";
  REQUIRE_THROWS_WITH(sandbox_config(o, h, "r"), "--cpus -1: must be a positive number of CPUs");
}

TEST_CASE("sandbox: --env passes a value or the caller's; the working directory given again changes its mode", "[sandbox]") {
  SandboxOptions o = cmd();
  o.env = {"EDITOR", "MODE=ci"};
  o.ro = {"."};
  auto c = sandbox_config(o, host(), "r").config;
  std::vector<std::string> env = c["process"]["env"];
  CHECK(has(env, "EDITOR=vi"));
  CHECK(has(env, "MODE=ci"));
  CHECK(has(mounts(c), "/home/ann/proj bind /home/ann/proj rbind nosuid nodev rro"));
  CHECK_FALSE(has(mounts(c), "/home/ann/proj bind /home/ann/proj rbind nosuid nodev"));
}

TEST_CASE("sandbox: limits go to the cgroup, else to rlimits with a note", "[sandbox]") {
  SandboxOptions o = cmd();
  o.pids = 50;
  o.memory = "64m";
  o.cpus = "0.5";
  SandboxHost h = host();
  h.cgroup = true;
  SandboxConfig sc = sandbox_config(o, h, "r");
  CHECK(sc.config["linux"]["resources"] == ojson::parse(R"({"pids":{"limit":50},
      "memory":{"limit":67108864,"swap":67108864},"cpu":{"quota":50000,"period":100000}})"));
  // Which one applied is said once.
  REQUIRE(sc.notes.size() == 1);
  CHECK_THAT(sc.notes[0], StartsWith("--memory 64m: in the sandbox's cgroup"));
  CHECK(has(mounts(sc.config), "/tmp tmpfs nosuid nodev mode=1777"));  // the cgroup counts its files
  h.systemd_scope = true;  // a transient scope of the user's systemd manager
  CHECK_THAT(sandbox_config(o, h, "r").notes[0],
             StartsWith("--memory 64m: in the sandbox's cgroup (a scope of your systemd manager)"));
  h.systemd_scope = false;

  h.cgroup = false;
  sc = sandbox_config(o, h, "r");
  CHECK_FALSE(sc.config["linux"].contains("resources"));
  CHECK(sc.config["process"]["rlimits"] == ojson::parse(R"([{"type":"RLIMIT_NPROC","hard":50,"soft":50},
      {"type":"RLIMIT_DATA","hard":67108864,"soft":67108864}])"));
  // An rlimit does not count files in a tmpfs: each is as large as --memory
  // at most (a read-only one stays empty).
  for (const auto& line : mounts(sc.config))
    if (line.find(" tmpfs ") != std::string::npos && line.find(" tmpfs ro ") == std::string::npos &&
        line.rfind("/dev", 0) != 0) {
      INFO(line);
      CHECK_THAT(line, Contains("size=67108864"));
    }
  CHECK(has(mounts(sc.config), "/home tmpfs nosuid nodev mode=755 size=67108864"));
  REQUIRE(sc.notes.size() == 3);
  // RLIMIT_AS would refuse the address space V8, the JVM and Go reserve
  // without touching it; RLIMIT_DATA counts what can be written.
  CHECK_THAT(sc.notes[1], StartsWith("--memory 64m: no cgroup of your own here, set as RLIMIT_DATA"));
  CHECK_THAT(sc.notes[1], Contains("size of each tmpfs the sandbox gets"));
  CHECK_THAT(sc.notes[2], Contains("--cpus 0.5: not applied"));
}

TEST_CASE("sandbox: --allow-host points the programs at the proxy and needs --net none", "[sandbox]") {
  SandboxOptions o = cmd();
  o.allow_hosts = {"pypi.org:443"};
  std::vector<std::string> env = sandbox_config(o, host(), "r").config["process"]["env"];
  CHECK(has(env, "HTTPS_PROXY=http://127.0.0.1:3128"));
  CHECK(has(env, "http_proxy=http://127.0.0.1:3128"));
  CHECK(has(env, "NO_PROXY=localhost,127.0.0.1,::1"));
  o.net = "host";
  REQUIRE_THROWS_WITH(sandbox_config(o, host(), "r"), Contains("--allow-host: the proxy is the way out of --net none"));
  o.net = "none";
  o.allow_hosts = {"bad host"};
  REQUIRE_THROWS_WITH(sandbox_config(o, host(), "r"), Contains("--allow-host bad host: not a host name"));
}

TEST_CASE("sandbox: --allow-host binds husk read-only for ssh's ProxyCommand", "[sandbox]") {
  SandboxOptions o = cmd();
  SandboxHost h = host();
  h.husk_binary = "/opt/husk/bin/husk";
  o.allow_hosts = {"git.test:22"};
  SandboxConfig sc = sandbox_config(o, h, "r");
  CHECK(has(mounts(sc.config), "/run/husk/husk bind /opt/husk/bin/husk rbind nosuid nodev ro"));
  std::vector<std::string> env = sc.config["process"]["env"];
  CHECK(has(env, "ALL_PROXY=http://127.0.0.1:3128"));
  CHECK(has(env, "GIT_SSH_COMMAND=ssh -o 'ProxyCommand /run/husk/husk connect %h %p'"));
  // Not without --allow-host, nor in a printed config.
  o.print_config = true;
  for (const auto& line : mounts(sandbox_config(o, h, "r").config)) CHECK_THAT(line, !Contains("/run/husk"));
  o.print_config = false;
  o.allow_hosts.clear();
  for (const auto& line : mounts(sandbox_config(o, h, "r").config)) CHECK_THAT(line, !Contains("/run/husk"));
}

TEST_CASE("sandbox: --print-config prints what runc and crun accept", "[sandbox]") {
  SandboxOptions o = cmd();
  o.allow_hosts = {"pypi.org:443"};
  o.print_config = true;
  SandboxConfig sc = sandbox_config(o, host(), "rootfs");
  const ojson& c = sc.config;
  REQUIRE_NOTHROW(husk::spec::validate(husk::spec::parse(c.dump()), true));
  // crun 1.8 refuses 1.3.0 ("unknown version").
  CHECK(c["ociVersion"] == "1.1.0");
  // runc wants uid 0 mapped ("no user mapping"): the user is uid 0 inside, itself outside.
  CHECK(c["linux"]["uidMappings"] == ojson::parse(R"([{"containerID":0,"hostID":1000,"size":1}])"));
  CHECK(c["linux"]["gidMappings"] == ojson::parse(R"([{"containerID":0,"hostID":1000,"size":1}])"));
  CHECK(c["process"]["user"] == ojson::parse(R"({"uid":0,"gid":0})"));
  CHECK(c["process"]["capabilities"]["bounding"].empty());
  // No proxy runs for it: no variable points at one.
  for (const auto& e : c["process"]["env"]) CHECK_THAT(e.get<std::string>(), !Contains("PROXY") && !Contains("proxy"));
  REQUIRE(sc.notes.size() == 2);
  CHECK_THAT(sc.notes[1], StartsWith("--allow-host: no proxy runs for a printed config"));
  // husk's own run keeps the user itself inside.
  o.print_config = false;
  CHECK(sandbox_config(o, host(), "r").config["linux"]["uidMappings"][0]["containerID"] == 1000);
}

TEST_CASE("sandbox: --net host keeps the host's network and shows its /sys read-only", "[sandbox]") {
  SandboxOptions o = cmd();
  o.net = "host";
  auto c = sandbox_config(o, host(), "r").config;
  for (const auto& n : c["linux"]["namespaces"]) CHECK(n["type"] != "network");
  CHECK(has(mounts(c), "/sys bind /sys rbind nosuid nodev rro"));
}

TEST_CASE("sandbox: --allow-nested loosens only the namespace calls", "[sandbox]") {
  SandboxOptions o = cmd();
  auto strict = sandbox_config(o, host(), "r").config["linux"]["seccomp"];
  o.allow_nested = true;
  auto nested = sandbox_config(o, host(), "r").config["linux"]["seccomp"];
  CHECK(strict != nested);
  CHECK(nested["defaultAction"] == "SCMP_ACT_ERRNO");
}

TEST_CASE("sandbox: --allow-nested leaves /proc and /sys bare and Landlock off the files, credentials hidden",
          "[sandbox]") {
  SandboxOptions o = cmd();
  const SandboxConfig strict = sandbox_config(o, host({"/home/ann/.ssh"}), "r");
  CHECK(has(strict.config["linux"]["maskedPaths"].get<std::vector<std::string>>(), "/proc/kcore"));
  CHECK_FALSE(strict.config["linux"]["readonlyPaths"].empty());
  CHECK(strict.landlock.file_system);
  o.allow_nested = true;
  o.allow_hosts = {"example.org"};
  const SandboxConfig nested = sandbox_config(o, host({"/home/ann/.ssh"}), "r");
  // A nested proc or sysfs is mounted only beside one nothing is mounted over.
  for (const auto& m : masked(nested.config)) {
    CHECK(m.rfind("/proc", 0) != 0);
    CHECK(m.rfind("/sys", 0) != 0);
  }
  CHECK(nested.config["linux"]["readonlyPaths"].empty());
  // The credentials keep their mounts, locked in any namespace made inside.
  CHECK(has(masked(nested.config), "/home/ann/.ssh"));
  CHECK(has(masked(nested.config), "/etc/shadow"));
  // Landlock keeps the network and the scopes, not the files (a file system
  // domain refuses every mount).
  CHECK_FALSE(nested.landlock.file_system);
  CHECK(nested.landlock.limit_tcp);
  CHECK(nested.landlock.scope_signal);
  CHECK(nested.landlock.scope_abstract_unix);
  // The keyring stays closed, as ENOSYS: a runtime inside skips its own.
  bool keyring = false;
  for (const auto& r : nested.config["linux"]["seccomp"]["syscalls"])
    if (has(r["names"].get<std::vector<std::string>>(), "keyctl")) keyring = r["action"] == "SCMP_ACT_ERRNO" && r["errnoRet"] == ENOSYS;
  CHECK(keyring);
}

TEST_CASE("sandbox: --allow-nested refuses a command run as root", "[sandbox]") {
  SandboxOptions o = cmd();
  o.allow_nested = true;
  SandboxHost h = host();
  h.uid = h.gid = 0;
  CHECK_THROWS_WITH(sandbox_config(o, h, "r"), StartsWith("--allow-nested: the command would run as root"));
  o.allow_nested = false;
  CHECK_NOTHROW(sandbox_config(o, h, "r"));
}

TEST_CASE("sandbox: --overlay makes the shown directories and the working directory overlays", "[sandbox]") {
  SandboxOptions o = cmd();
  o.overlay = true;
  SandboxHost h = host();
  h.mount_points = {"/", "/proc", "/etc/secrets.d"};  // a file system mounted below /etc
  SandboxConfig sc = sandbox_config(o, h, "r", "/w/ovl");
  auto m = mounts(sc.config);
  CHECK(has(m, "/usr overlay lowerdir=/usr upperdir=/w/ovl/upper/1-usr workdir=/w/ovl/work/1-usr userxattr nosuid nodev"));
  CHECK(has(m, "/etc bind /etc rbind nosuid nodev rro"));  // the kernel would refuse it as a lower layer
  CHECK(has(m, "/home/ann/proj overlay lowerdir=/home/ann/proj upperdir=/w/ovl/upper/3-proj "
               "workdir=/w/ovl/work/3-proj userxattr nosuid nodev"));
  CHECK(sc.overlay_dirs.size() == 8);  // bin, usr, var, proj: upper and work each
  // What --keep-changes says at exit: each upper layer and what it stands for.
  CHECK(sc.uppers == std::vector<std::pair<std::string, std::string>>{{"/w/ovl/upper/0-bin", "/bin"},
                                                                        {"/w/ovl/upper/1-usr", "/usr"},
                                                                        {"/w/ovl/upper/2-var", "/var"},
                                                                        {"/w/ovl/upper/3-proj", "/home/ann/proj"}});
  REQUIRE(sc.notes.size() == 1);
  CHECK(sc.notes[0] == "--overlay: /etc stays read-only (file systems are mounted below it)");
  // --rw stays a bind: what the user asked to keep.
  o.rw = {"/usr"};
  CHECK(has(mounts(sandbox_config(o, h, "r", "/w/ovl").config), "/usr bind /usr rbind nosuid nodev"));
  o.rw.clear();
  REQUIRE_THROWS_WITH(sandbox_config(o, h, "r", "/w/a,b"), Contains("which overlayfs options cannot carry"));
}

TEST_CASE("sandbox: the kernel views are the ones a user namespace of the user's own can have", "[sandbox]") {
  auto m = mounts(sandbox_config(cmd(), host(), "r").config);
  for (const auto& line : m) {
    CHECK(line.rfind("/sys/fs/cgroup ", 0) != 0);
    if (line.rfind("/dev/pts ", 0) == 0) CHECK_THAT(line, !Contains("gid=5"));
  }
  // /var/tmp gets its fresh mount only where the host has a /var to hold it.
  CHECK(has(m, "/var/tmp tmpfs nosuid nodev mode=1777"));
  SandboxHost h = host();
  h.root_dirs = {"bin", "etc", "home", "usr"};
  for (const auto& line : mounts(sandbox_config(cmd(), h, "r").config)) CHECK(line.rfind("/var/tmp ", 0) != 0);
}

TEST_CASE("sandbox: --net host shows the resolver's directory when it lives in /run", "[sandbox]") {
  SandboxHost h = host({"/run/systemd/resolve/stub-resolv.conf"});
  auto base_real = h.real;
  h.real = [base_real](const std::string& p) -> std::optional<std::string> {
    if (p == "/etc/resolv.conf") return "/run/systemd/resolve/stub-resolv.conf";
    return base_real(p);
  };
  const std::string resolver = "/run/systemd/resolve bind /run/systemd/resolve rbind nosuid nodev rro";
  CHECK_FALSE(has(mounts(sandbox_config(cmd(), h, "r").config), resolver));  // --net none: no resolver needed
  SandboxOptions o = cmd();
  o.net = "host";
  auto m = mounts(sandbox_config(o, h, "r").config);
  auto at = [&](const std::string& line) { return std::find(m.begin(), m.end(), line) - m.begin(); };
  REQUIRE(has(m, resolver));
  CHECK(at("/run tmpfs nosuid nodev mode=755") < at(resolver));  // above the fresh /run
}

TEST_CASE("sandbox: flags that need another flag, and sizes that must be positive", "[sandbox]") {
  SandboxOptions o = cmd();
  o.allow_host_loopback = true;
  REQUIRE_THROWS_WITH(sandbox_config(o, host(), "r"), "--allow-host-loopback: no --allow-host is given");
  o = cmd();
  o.allow_host_private = true;
  REQUIRE_THROWS_WITH(sandbox_config(o, host(), "r"), "--allow-host-private: no --allow-host is given");
  o = cmd();
  o.memory = "0";
  REQUIRE_THROWS_WITH(sandbox_config(o, host(), "r"), "--memory 0: must be a positive size");
  o = cmd();
  o.env = {"=x"};
  REQUIRE_THROWS_WITH(sandbox_config(o, host(), "r"), "--env =x: no variable name");
}

TEST_CASE("sandbox: --overlay refuses a working directory with file systems mounted below it", "[sandbox]") {
  SandboxOptions o = cmd();
  o.overlay = true;
  SandboxHost h = host();
  h.mount_points = {"/", "/home/ann/proj/mnt"};
  REQUIRE_THROWS_WITH(sandbox_config(o, h, "r", "/w/ovl"),
                      "--overlay: the working directory /home/ann/proj has file systems mounted below it");
  // Given with --rw it stays a bind, which mounts below do not stop.
  o.rw = {"."};
  CHECK(has(mounts(sandbox_config(o, h, "r", "/w/ovl").config), "/home/ann/proj bind /home/ann/proj rbind nosuid nodev"));
}

TEST_CASE("remove_tree: a hostile tree goes, nothing outside it is touched", "[sandbox]") {
  char base[] = "/tmp/husk-remove-tree-XXXXXX";
  REQUIRE(mkdtemp(base));
  const std::string b = base;
  // Outside: a file and a directory the tree points at.
  REQUIRE(mkdir((b + "/outside").c_str(), 0755) == 0);
  { std::ofstream(b + "/outside/keep") << "x"; }
  REQUIRE(mkdir((b + "/tree").c_str(), 0755) == 0);
  REQUIRE(symlink((b + "/outside").c_str(), (b + "/tree/link").c_str()) == 0);
  // Deeper than the fds it may hold, with unreadable directories on the way.
  std::string deep = b + "/tree";
  for (int i = 0; i < 300; ++i) {
    deep += "/d";
    REQUIRE(mkdir(deep.c_str(), 0755) == 0);
  }
  { std::ofstream(deep + "/bottom") << "x"; }
  REQUIRE(chmod((b + "/tree/d/d").c_str(), 0) == 0);
  REQUIRE(chmod((b + "/tree/d").c_str(), 0) == 0);
  remove_tree(AT_FDCWD, b + "/tree");
  struct stat st;
  CHECK(lstat((b + "/tree").c_str(), &st) != 0);
  CHECK(lstat((b + "/outside/keep").c_str(), &st) == 0);
  CHECK((lstat((b + "/outside").c_str(), &st) == 0 && (st.st_mode & 07777) == 0755));
  unlink((b + "/outside/keep").c_str());
  rmdir((b + "/outside").c_str());
  rmdir(b.c_str());
}

TEST_CASE("private_dir: made 0700 step by step, a symlink or a directory others may write refused", "[sandbox]") {
  char base[] = "/tmp/husk-private-dir-XXXXXX";
  REQUIRE(mkdtemp(base));
  const std::string b = base;
  husk::base::Fd at(open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  REQUIRE(at);
  struct stat st;
  SECTION("missing components are made 0700 and the last one is returned") {
    husk::base::Fd d = private_dir("a/b", getuid(), 0700, at.get());
    REQUIRE(d);
    REQUIRE(fstat(d.get(), &st) == 0);
    struct stat made;
    REQUIRE(stat((b + "/a/b").c_str(), &made) == 0);
    CHECK(st.st_ino == made.st_ino);
    CHECK((made.st_mode & 07777) == 0700);
    CHECK((stat((b + "/a").c_str(), &made) == 0 && (made.st_mode & 07777) == 0700));
    CHECK(private_dir("a/b", getuid(), 0700, at.get()));  // there already: opened again
  }
  SECTION("a symlink on the way is not followed") {
    REQUIRE(mkdir((b + "/real").c_str(), 0700) == 0);
    REQUIRE(symlink("real", (b + "/a").c_str()) == 0);
    REQUIRE_THROWS_WITH(private_dir("a/b", getuid(), 0700, at.get()), Contains("./a (a symlink is not followed)"));
    CHECK(lstat((b + "/real/b").c_str(), &st) != 0);
  }
  SECTION("a component others may write is refused, nothing made below it") {
    REQUIRE(mkdir((b + "/a").c_str(), 0700) == 0);
    REQUIRE(chmod((b + "/a").c_str(), 0777) == 0);
    REQUIRE_THROWS_WITH(private_dir("a/b", getuid(), 0700, at.get()),
                        Contains("./a may be written by group or others (mode 0777)"));
    CHECK(lstat((b + "/a/b").c_str(), &st) != 0);
  }
  SECTION("an absolute path is checked from /: /tmp is open to others") {
    REQUIRE_THROWS_WITH(private_dir(b + "/c", getuid()), Contains("/tmp may be written by group or others"));
  }
  rmdir((b + "/a/b").c_str());
  unlink((b + "/a").c_str());
  rmdir((b + "/a").c_str());
  rmdir((b + "/real").c_str());
  rmdir(b.c_str());
}
