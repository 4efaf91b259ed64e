// --deny-write and --hide patterns in sandbox_config (a made-up host), and
// the glob walk on a real directory, hostile entries in it.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <set>

#include "sandbox/glob.h"
#include "sandbox/no_userns.h"
#include "sandbox/sandbox.h"
#include "unit/sandbox/fake_host.h"
#include "unit/temp_dir.h"

using namespace husk::rt;
using Catch::Contains;

namespace {

SandboxHost host(std::set<std::string> existing) {
  for (const char* p : {"/", "/usr", "/etc", "/home", "/home/ann", "/home/ann/proj", "/srv", "/srv/data"})
    existing.insert(p);
  return test::fake_host({"etc", "home", "tmp", "usr"}, std::move(existing));
}

SandboxOptions cmd() { return test::make_command(); }

// The bind mounts: "dest source ro|rw".
std::vector<std::string> binds(const SandboxConfig& sc) {
  std::vector<std::string> out;
  for (const auto& m : sc.config["mounts"]) {
    if (m["type"] != "bind") continue;
    const auto& opts = m["options"];
    const bool ro = std::find(opts.begin(), opts.end(), "ro") != opts.end() ||
                    std::find(opts.begin(), opts.end(), "rro") != opts.end();
    out.push_back(m["destination"].get<std::string>() + " " + m["source"].get<std::string>() + (ro ? " ro" : " rw"));
  }
  return out;
}

bool has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

void write(const std::string& path) { std::ofstream(path) << "x\n"; }

}  // namespace

TEST_CASE("sandbox: --deny-write is read-only inside a writable directory, else nothing", "[sandbox][settings]") {
  SandboxOptions o = cmd();
  o.deny_write = {".env", "/etc/hosts", "missing.txt"};
  SandboxConfig sc = sandbox_config(o, host({"/home/ann/proj/.env", "/etc/hosts"}), "/r");
  CHECK(has(binds(sc), "/home/ann/proj/.env /home/ann/proj/.env ro"));
  for (const auto& b : binds(sc)) CHECK(b.rfind("/etc/hosts ", 0) != 0);  // read-only already
  CHECK(std::any_of(sc.notes.begin(), sc.notes.end(),
                    [](const std::string& n) { return n.find("--deny-write missing.txt: not there") == 0; }));
  // Without a user namespace no mount can make it read-only: refused.
  CHECK_THROWS_WITH(refuse_without_userns(o, "why"), Contains("--deny-write: needs a mount namespace"));
  // A file is bound "ro": nothing is mounted below a file, and crun 1.8 refuses "rro" on one.
  SandboxHost files = host({"/home/ann/proj/.env", "/etc/hosts"});
  files.is_dir = [](const std::string& p) { return p != "/home/ann/proj/.env"; };
  const auto mounts = sandbox_config(o, files, "/r").config["mounts"];
  CHECK(std::count_if(mounts.begin(), mounts.end(), [](const auto& m) {
          return m["destination"] == "/home/ann/proj/.env" && m["options"].back() == "ro";
        }) == 1);
  CHECK(std::count_if(mounts.begin(), mounts.end(), [](const auto& m) {
          return m["destination"] == "/home/ann/proj" && m["options"].back() == "nodev";  // writable
        }) == 1);
}

TEST_CASE("sandbox: a --deny-write pattern: its matches in writable trees read-only", "[sandbox][settings][glob]") {
  SandboxOptions o = cmd();
  o.deny_write = {"**/.env"};
  o.ro = {"/srv/data"};
  SandboxHost h = host({"/home/ann/proj/a/.env", "/home/ann/proj/link.env"});
  std::vector<std::string> walked;
  h.glob = [&](const Glob&, const std::string& root) {
    walked.push_back(root);
    GlobFound f;
    f.paths = {"/home/ann/proj/a/.env", "/home/ann/proj/.env"};
    return f;
  };
  // /home/ann/proj/.env is a symlink here (its real path is not itself): passed over.
  h.real = [real = h.real](const std::string& p) -> std::optional<std::string> {
    if (p == "/home/ann/proj/.env") return "/home/ann/other";
    return real(p);
  };
  SandboxConfig sc = sandbox_config(o, h, "/r");
  CHECK(walked == std::vector<std::string>{"/home/ann/proj"});  // not the read-only /srv/data
  CHECK(has(binds(sc), "/home/ann/proj/a/.env /home/ann/proj/a/.env ro"));
  for (const auto& b : binds(sc)) CHECK(b.rfind("/home/ann/proj/.env ", 0) != 0);
}

TEST_CASE("sandbox: --deny-host is the proxy's, refused where no proxy runs", "[sandbox][settings]") {
  SandboxOptions o = cmd();
  o.deny_hosts = {"bad.example.com"};
  CHECK_NOTHROW(sandbox_config(o, host({}), "/r"));
  o.net = "host";
  CHECK_THROWS_WITH(sandbox_config(o, host({}), "/r"), Contains("--deny-host: "));
  o.net = "none";
  o.deny_hosts = {"a:b:c"};
  CHECK_THROWS_WITH(sandbox_config(o, host({}), "/r"), Contains("--deny-host a:b:c"));
}

TEST_CASE("sandbox: a --hide pattern hides each match the walk finds in the shown trees", "[sandbox][glob]") {
  SandboxOptions o = cmd();
  o.hide = {"**/.env"};
  o.rw = {"/srv/data"};
  SandboxHost h = host({"/home/ann/proj/a/.env", "/srv/data/.env"});
  std::vector<std::string> walked;
  h.glob = [&](const Glob& g, const std::string& root) {
    walked.push_back(g.root + " from " + root);
    GlobFound f;
    if (root == "/home/ann/proj") f.paths = {"/home/ann/proj/a/.env"};
    return f;
  };
  SandboxConfig sc = sandbox_config(o, h, "/r", "overlay", "/w/empty");
  CHECK(walked == std::vector<std::string>{"/home/ann/proj from /home/ann/proj"});
  CHECK(has(binds(sc), "/home/ann/proj/a/.env /w/empty ro"));
  // Absolute, above the shown trees: each of them is walked, never "/".
  o.hide = {"/**/.env"};
  walked.clear();
  sandbox_config(o, h, "/r");
  CHECK(walked == std::vector<std::string>{"/ from /srv/data", "/ from /home/ann/proj"});  // parents first
}

TEST_CASE("sandbox: a pattern's walk that stops at its bound stops the start", "[sandbox][glob]") {
  // The command fills the tree to push the match past the bound: the start fails, naming the pattern and the tree.
  SandboxOptions o = cmd();
  SandboxHost h = host({"/home/ann/proj/app/.env"});
  h.glob = [](const Glob&, const std::string&) {
    GlobFound f;
    f.stopped = true;
    return f;
  };
  o.hide = {"**/.env"};
  CHECK_THROWS_WITH(sandbox_config(o, h, "/r"),
                    Contains("--hide **/.env: the walk of /home/ann/proj stopped at its bound") &&
                        Contains("would be shown: narrow the pattern"));
  o.hide.clear();
  o.deny_write = {"**/build.sh"};
  CHECK_THROWS_WITH(sandbox_config(o, h, "/r"), Contains("--deny-write **/build.sh: the walk") && Contains("writable"));
}

TEST_CASE("sandbox: a --hide or --deny-write with pattern characters that exists as written is that path",
          "[sandbox][glob]") {
  SandboxOptions o = cmd();
  SandboxHost h = host({"/home/ann/proj/key[prod].pem", "/home/ann/proj/run[ci].sh", "/home/ann/proj/keyp.pem"});
  std::vector<std::string> walked;
  h.glob = [&](const Glob& g, const std::string&) {
    walked.push_back(g.text);
    GlobFound f;
    f.paths = {"/home/ann/proj/keyp.pem"};
    return f;
  };
  o.hide = {"key[prod].pem"};
  o.deny_write = {"run[ci].sh"};
  SandboxConfig sc = sandbox_config(o, h, "/r", "overlay", "/w/empty");
  CHECK(walked.empty());
  CHECK(has(binds(sc), "/home/ann/proj/key[prod].pem /w/empty ro"));
  CHECK_FALSE(has(binds(sc), "/home/ann/proj/keyp.pem /w/empty ro"));
  CHECK(has(binds(sc), "/home/ann/proj/run[ci].sh /home/ann/proj/run[ci].sh ro"));
  // Not there as written: a pattern.
  o.hide = {"key[xyz].pem"};
  o.deny_write.clear();
  sc = sandbox_config(o, h, "/r", "overlay", "/w/empty");
  CHECK(walked == std::vector<std::string>{"key[xyz].pem"});
  CHECK(has(binds(sc), "/home/ann/proj/keyp.pem /w/empty ro"));
}

TEST_CASE("glob: the walk follows no symlink, a link is a match as itself", "[sandbox][glob]") {
  husk_test::TempDir t;
  const std::string& d = t.path;
  REQUIRE(mkdir((d + "/a").c_str(), 0755) == 0);
  REQUIRE(mkdir((d + "/a/b").c_str(), 0755) == 0);
  write(d + "/a/b/.env");
  write(d + "/a/.envrc");
  // A link out of the tree: what it names is never walked.
  REQUIRE(symlink("/etc", (d + "/a/etc").c_str()) == 0);
  // A link named as the pattern: hidden as itself, as --hide would.
  REQUIRE(symlink("/etc/hostname", (d + "/.env").c_str()) == 0);
  GlobFound f = walk_glob(parse_glob("**/.env", d + "/**/.env"), d);
  std::sort(f.paths.begin(), f.paths.end());
  CHECK(f.paths == std::vector<std::string>{d + "/.env", d + "/a/b/.env"});
  CHECK_FALSE(f.stopped);
  f = walk_glob(parse_glob("**/passwd", d + "/**/passwd"), d);
  CHECK(f.paths.empty());
  // A pattern naming the directories, hidden whole.
  f = walk_glob(parse_glob("**/b/**", d + "/**/b/**"), d);
  CHECK(f.paths == std::vector<std::string>{d + "/a/b"});
}

TEST_CASE("glob: a directory symlink that \"**/NAME/**\" names is a match", "[sandbox][glob]") {
  husk_test::TempDir t, out;
  const std::string& d = t.path;
  REQUIRE(mkdir((d + "/config").c_str(), 0755) == 0);
  write(out.path + "/db.pw");
  REQUIRE(symlink(out.path.c_str(), (d + "/config/secrets").c_str()) == 0);  // out of the tree
  GlobFound f = walk_glob(parse_glob("**/secrets/**", d + "/**/secrets/**"), d);
  CHECK(f.paths == std::vector<std::string>{d + "/config/secrets"});
}

TEST_CASE("sandbox: a glob match that is a link to nothing is not mounted on (its target is not made)",
          "[sandbox][glob]") {
  SandboxOptions o = cmd();
  o.hide = {"*.env"};
  // p.env -> a missing file in a writable tree: the runtime would make it as a mount point.
  SandboxHost h = host({"/home/ann/proj/a.env"});
  h.glob = [](const Glob&, const std::string&) {
    GlobFound f;
    f.paths = {"/home/ann/proj/a.env", "/home/ann/proj/p.env"};
    return f;
  };
  std::vector<std::string> b = binds(sandbox_config(o, h, "/r", "overlay", "/w/empty"));
  CHECK(has(b, "/home/ann/proj/a.env /w/empty ro"));
  for (const auto& m : b) CHECK(m.find("p.env") == std::string::npos);
}

TEST_CASE("glob: the walk stops at its depth and says so", "[sandbox][glob]") {
  husk_test::TempDir t;
  std::string p = t.path;
  for (size_t i = 0; i <= kGlobMaxDepth + 1; ++i) {
    p += "/d";
    REQUIRE(mkdir(p.c_str(), 0755) == 0);
  }
  write(p + "/.env");
  GlobFound f = walk_glob(parse_glob("**/.env", t.path + "/**/.env"), t.path);
  CHECK(f.paths.empty());
  CHECK(f.stopped);
}
