// Settings files (husk's keys, srt's format, narrowing) and --hide globs: the pure parts.
#include <catch2/catch.hpp>

#include "base/error.h"
#include "sandbox/glob.h"
#include "sandbox/proxy.h"
#include "sandbox/settings.h"

using namespace husk::rt;
using Catch::Contains;

namespace {

const std::vector<SettingKey> kKeys = {{"rw", SettingKey::list},        {"hide", SettingKey::list},
                                       {"net", SettingKey::text},       {"pids", SettingKey::text},
                                       {"memory", SettingKey::text},    {"overlay", SettingKey::flag},
                                       {"allow-host", SettingKey::list}};
const SettingsPlace kPlace{"/home/u/proj", "/home/u"};

std::vector<SettingValue> values(const std::string& text, const std::string& file = "s.yaml") {
  return settings_values(settings_document(text, file), file, kKeys, kPlace);
}

std::vector<std::string> of(const std::vector<SettingValue>& vs, const std::string& key) {
  std::vector<std::string> out;
  for (const auto& v : vs)
    if (v.key == key) out.insert(out.end(), v.values.begin(), v.values.end());
  return out;
}

std::vector<std::string> parts(const std::string& rel) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at <= rel.size() && !rel.empty()) {
    size_t slash = rel.find('/', at);
    if (slash == std::string::npos) slash = rel.size();
    out.push_back(rel.substr(at, slash - at));
    at = slash + 1;
  }
  return out;
}

GlobHit hit(const std::string& pattern, const std::string& rel) {
  return glob_hit(parse_glob(pattern, pattern[0] == '/' ? pattern : "/w/" + pattern), parts(rel));
}

}  // namespace

TEST_CASE("settings: husk's keys take the flags' types", "[sandbox][settings]") {
  auto vs = values("rw: [/a, b]\nnet: none\npids: 100\noverlay: true\nmemory: 512m\n");
  CHECK(of(vs, "rw") == std::vector<std::string>{"/a", "b"});
  CHECK(of(vs, "pids") == std::vector<std::string>{"100"});
  CHECK(of(vs, "overlay") == std::vector<std::string>{"true"});
  CHECK(of(vs, "memory") == std::vector<std::string>{"512m"});
  CHECK(vs[0].origin == "s.yaml: rw");
  // JSON, the same keys.
  CHECK(of(values(R"({"hide": ["x"], "overlay": false})", "s.json"), "overlay") == std::vector<std::string>{"false"});
  // A quoted YAML scalar stays a string.
  CHECK_THROWS_WITH(values("overlay: 'true'\n"), Contains("s.yaml: overlay: must be true or false"));
}

TEST_CASE("settings: unknown keys and wrong types name the key and file", "[sandbox][settings]") {
  CHECK_THROWS_WITH(values("rw: [/a]\nreadwrite: [/b]\n"), Contains("s.yaml: unknown key readwrite"));
  CHECK_THROWS_WITH(values("rw: /a\n"), Contains("s.yaml: rw: must be a list of strings"));
  CHECK_THROWS_WITH(values("rw: [/a, 3]\n"), Contains("s.yaml: rw: must be a list of strings"));
  CHECK_THROWS_WITH(values("net: [none]\n"), Contains("s.yaml: net: must be a string"));
  CHECK_THROWS_WITH(values("overlay: 1\n"), Contains("s.yaml: overlay: must be true or false"));
  CHECK_THROWS_WITH(values("- a\n"), Contains("s.yaml: must be a map"));
  CHECK_THROWS_WITH(values("{\"rw\": [", "s.json"), Contains("s.json: not valid JSON"));
  CHECK(values("").empty());
  CHECK_THROWS_WITH(values("pids: 1\npids: 2\n"), Contains("s.yaml: pids: given twice"));
  CHECK_THROWS_WITH(values(R"({"network": {"allowedDomains": [], "allowedDomains": ["x.com"]}})", "s.json"),
                    Contains("s.json: allowedDomains: given twice"));
}

TEST_CASE("settings: a hostile file neither quotes itself nor blows up", "[sandbox][settings]") {
  // A project file may be a link to a secret: the error does not show its text.
  try {
    values("{\"rw\": SECRET-TOKEN", "p.json");
    FAIL("parsed");
  } catch (const husk::Error& e) {
    CHECK_THAT(e.what(), !Contains("SECRET"));
  }
  // Aliases that would make a billion values.
  std::string bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  for (char c = 'b'; c <= 'j'; ++c)
    bomb += std::string(1, c) + ": &" + c + " [*" + char(c - 1) + ", *" + char(c - 1) + ", *" + char(c - 1) +
            ", *" + char(c - 1) + ", *" + char(c - 1) + ", *" + char(c - 1) + ", *" + char(c - 1) + ", *" +
            char(c - 1) + ", *" + char(c - 1) + ", *" + char(c - 1) + "]\n";
  CHECK_THROWS_WITH(settings_document(bomb, "b.yaml"), Contains("more than"));
}

TEST_CASE("settings: srt's format", "[sandbox][settings][srt]") {
  auto vs = values(R"({"network": {"allowedDomains": ["example.com", "*.npmjs.org"],
                                   "deniedDomains": ["bad.example.com"],
                       "allowLocalBinding": false, "allowUnixSockets": []},
                       "filesystem": {"denyRead": ["~/.ssh", "secret.txt"], "allowWrite": [".", "/tmp", "~/cache"],
                                      "denyWrite": [".env"], "allowGitConfig": true},
                       "enableWeakerNestedSandbox": false, "ignoreViolations": {}})",
                   "/home/u/.srt-settings.json");
  CHECK(of(vs, "allow-host") == std::vector<std::string>{"example.com", "*.npmjs.org"});
  CHECK(of(vs, "deny-host") == std::vector<std::string>{"bad.example.com"});
  CHECK(of(vs, "hide") == std::vector<std::string>{"/home/u/.ssh", "secret.txt"});
  CHECK(of(vs, "rw") == std::vector<std::string>{".", "/home/u/cache"});  // /tmp: the sandbox's own
  CHECK(of(vs, "deny-write") == std::vector<std::string>{".env"});
  CHECK(of(vs, "allow-write") == std::vector<std::string>{".git/config"});
  for (const auto& v : vs)
    if (v.key == "hide") CHECK(v.origin == "/home/u/.srt-settings.json: filesystem.denyRead");
}

TEST_CASE("settings: srt's missing paths are passed over, as srt does", "[sandbox][settings][srt]") {
  SettingsPlace place = kPlace;
  place.exists = [](const std::string& p) { return p != "/home/u/.aws" && p != "/home/u/proj/gone"; };
  auto vs = settings_values(
      settings_document(R"({"filesystem": {"denyRead": ["~/.aws", "~/.ssh", "**/.env"], "allowWrite": [".", "gone"]}})",
                        "s.json"),
      "s.json", kKeys, place);
  CHECK(of(vs, "hide") == std::vector<std::string>{"/home/u/.ssh", "**/.env"});
  CHECK(of(vs, "rw") == std::vector<std::string>{"."});
}

TEST_CASE("settings: srt keys without a husk meaning are errors naming them", "[sandbox][settings][srt]") {
  const std::string fs = R"("filesystem": {"allowWrite": ["."]})";
  auto srt = [&](const std::string& more) { return values("{" + fs + ", " + more + "}", "s.json"); };
  CHECK_THROWS_WITH(srt(R"("network": {"httpProxyPort": 8080})"), Contains("network.httpProxyPort"));
  CHECK_THROWS_WITH(srt(R"("network": {"socksProxyPort": 1080})"), Contains("network.socksProxyPort"));
  CHECK_THROWS_WITH(srt(R"("network": {"allowUnixSockets": ["/run/docker.sock"]})"),
                    Contains("network.allowUnixSockets"));
  CHECK_THROWS_WITH(srt(R"("network": {"allowAllUnixSockets": true})"), Contains("network.allowAllUnixSockets"));
  CHECK_THROWS_WITH(srt(R"("network": {"allowedDomains": ["http://x.com/"]})"), Contains("network.allowedDomains"));
  CHECK_THROWS_WITH(srt(R"("network": {"mystery": 1})"), Contains("network.mystery"));
  CHECK_THROWS_WITH(srt(R"("ignoreViolations": {"*": ["/usr"]})"), Contains("ignoreViolations"));
  CHECK_THROWS_WITH(srt(R"("ripgrep": {"command": "rg"})"), Contains("ripgrep"));
  CHECK_THROWS_WITH(srt(R"("mandatoryDenySearchDepth": 3)"), Contains("mandatoryDenySearchDepth"));
  CHECK_THROWS_WITH(srt(R"("allowPty": true)"), Contains("allowPty"));
  CHECK_THROWS_WITH(srt(R"("enableWeakerNetworkIsolation": true)"), Contains("enableWeakerNetworkIsolation"));
  CHECK_THROWS_WITH(srt(R"("rw": ["/x"])"), Contains("s.json: rw"));  // no mixing
  CHECK_THROWS_WITH(values(R"({"filesystem": {"allowWrite": ["/tmp"]}})", "s.json"),
                    Contains("filesystem.allowWrite: does not name the working directory"));
  CHECK_THROWS_WITH(values(R"({"filesystem": {"allowRead": ["/usr"], "allowWrite": ["."]}})", "s.json"),
                    Contains("filesystem.allowRead"));
  CHECK_THROWS_WITH(values(R"({"network": {"allowedDomains": []}})", "s.json"), Contains("filesystem.allowWrite"));
  // A parent of the working directory names it too.
  CHECK(of(values(R"({"filesystem": {"allowWrite": ["~"]}})", "s.json"), "rw") == std::vector<std::string>{"/home/u"});
}

TEST_CASE("settings: a project file may only narrow", "[sandbox][settings][project]") {
  auto v = [](const std::string& key, std::vector<std::string> values) {
    return SettingValue{key, std::move(values), "p.yaml: " + key};
  };
  const std::string cwd = "/home/u/proj";
  using L = std::vector<std::string>;
  CHECK(narrow(v("hide", {"x"}), L{"y"}, cwd).values == L{"x"});
  CHECK(narrow(v("allow-host", {"a.com"}), L{"a.com", "b.com"}, cwd).replaces);
  CHECK_THROWS_WITH(narrow(v("allow-host", {"c.com"}), L{"a.com"}, cwd), Contains("p.yaml: allow-host"));
  CHECK_THROWS_WITH(narrow(v("allow-host", {"c.com"}), std::nullopt, cwd), Contains("only narrow"));
  CHECK_THROWS_WITH(narrow(v("rw", {"/etc"}), std::nullopt, cwd), Contains("p.yaml: rw"));
  CHECK(narrow(v("rw", {"."}), std::nullopt, cwd).values.empty());  // the working directory: as it is
  CHECK_THROWS_WITH(narrow(v("net", {"host"}), L{"none"}, cwd), Contains("p.yaml: net"));
  CHECK_THROWS_WITH(narrow(v("allow-nested", {"true"}), L{"false"}, cwd), Contains("p.yaml: allow-nested"));
  CHECK_THROWS_WITH(narrow(v("allow-host-loopback", {"true"}), L{"false"}, cwd), Contains("allow-host-loopback"));
  CHECK_THROWS_WITH(narrow(v("user", {"0"}), std::nullopt, cwd), Contains("p.yaml: user"));
  CHECK_THROWS_WITH(narrow(v("env", {"AWS_SECRET_ACCESS_KEY"}), std::nullopt, cwd), Contains("p.yaml: env"));
  CHECK_THROWS_WITH(narrow(v("memory", {"2g"}), L{"1g"}, cwd), Contains("p.yaml: memory"));
  CHECK(narrow(v("memory", {"512m"}), L{"1g"}, cwd).values == L{"512m"});
  CHECK(narrow(v("pids", {"50"}), std::nullopt, cwd).values == L{"50"});
  CHECK_THROWS_WITH(narrow(v("timeout", {"90"}), L{"60"}, cwd), Contains("p.yaml: timeout"));
  // Compared as applied: a quota that rounds to none, 0 processes (no limit), hex read by strtod.
  CHECK_THROWS_WITH(narrow(v("cpus", {"0.000001"}), L{"0.5"}, cwd), Contains("--cpus 0.000001: below 0.01 CPU"));
  CHECK(narrow(v("cpus", {"0.25"}), L{"0.5"}, cwd).values == L{"0.25"});
  CHECK_THROWS_WITH(narrow(v("pids", {"0"}), L{"100"}, cwd), Contains("--pids 0"));
  CHECK_THROWS(narrow(v("pids", {"0x10"}), L{"100"}, cwd));
}

TEST_CASE("settings: --cpus as the quota applied, none under the kernel's least", "[sandbox][settings]") {
  CHECK(cpus_quota("0.5") == 50000);
  CHECK(cpus_quota("0.01") == 1000);
  CHECK(cpus_quota("2") == 200000);
  for (const char* bad : {"0.000001", "0.004", "0.00999", "0", "-1", "x", "", "1e7", "nan"})
    CHECK_THROWS_WITH(cpus_quota(bad), Contains(std::string("--cpus ") + bad + ": "));
}

TEST_CASE("settings: a leading ~ of a path key is the home, as in srt's format", "[sandbox][settings]") {
  auto vs = values("rw: [~/.cache/pip, \"~\"]\nhide: [\"~/**/.env\", a~/b, \"~x/y\"]\n");
  CHECK(of(vs, "rw") == std::vector<std::string>{"/home/u/.cache/pip", "/home/u"});
  CHECK(of(vs, "hide") == std::vector<std::string>{"/home/u/**/.env", "a~/b", "~x/y"});
  // Other keys are as written.
  CHECK(of(values("net: \"~/x\"\n"), "net") == std::vector<std::string>{"~/x"});
  CHECK_THROWS_WITH(settings_values(settings_document("hide: [~/.env]\n", "s.yaml"), "s.yaml", kKeys,
                                    SettingsPlace{"/w", ""}),
                    Contains("s.yaml: hide: ~/.env: the user has no home"));
}

TEST_CASE("glob: patterns over path components", "[sandbox][glob]") {
  CHECK(is_glob("**/.env"));
  CHECK_FALSE(is_glob("/a/b.env"));
  CHECK(hit("**/.env", ".env") == GlobHit::match);
  CHECK(hit("**/.env", "a/b/.env") == GlobHit::match);
  CHECK(hit("**/.env", "a/b") == GlobHit::below);
  CHECK(hit("**/.env", "a/.envrc") == GlobHit::below);
  CHECK(hit("*.pem", "k.pem") == GlobHit::match);
  CHECK(hit("*.pem", ".k.pem") == GlobHit::match);  // dot-names too
  CHECK(hit("*.pem", "d") == GlobHit::none);         // anchored: not below
  CHECK(hit("*.pem", "d/k.pem") == GlobHit::none);
  // Below the literal root /w/src.
  CHECK(hit("src/*/key?.[ab]", "x/key1.a") == GlobHit::match);
  CHECK(hit("src/*/key?.[ab]", "x/key1.c") == GlobHit::none);
  CHECK(hit("src/*/key?.[ab]", "x") == GlobHit::below);
  Glob g = parse_glob("**/secrets/**", "/w/**/secrets/**");
  CHECK(g.dirs_only);
  CHECK(g.root == "/w");
  CHECK(glob_hit(g, {"a", "secrets"}) == GlobHit::match);
  CHECK(parse_glob("/etc/ssl/*.pem", "/etc/ssl/*.pem").root == "/etc/ssl");
  CHECK_THROWS_WITH(parse_glob("a**b", "/w/a**b"), Contains("a**b: '**' is a whole component"));
}

TEST_CASE("glob: where the walk starts", "[sandbox][glob]") {
  const std::vector<std::string> shown = {"/home/u/proj", "/srv/data", "/srv/data/sub"};
  CHECK(glob_walk_roots(parse_glob("**/.env", "/home/u/proj/**/.env"), shown) ==
        std::vector<std::string>{"/home/u/proj"});
  // Never the whole host: the shown trees below "/".
  CHECK(glob_walk_roots(parse_glob("/**/*.pem", "/**/*.pem"), shown) ==
        std::vector<std::string>{"/home/u/proj", "/srv/data"});
  CHECK(glob_walk_roots(parse_glob("/etc/ssl/*.pem", "/etc/ssl/*.pem"), shown) == std::vector<std::string>{"/etc/ssl"});
}

TEST_CASE("proxy: --deny-host wins over --allow-host", "[sandbox][proxy]") {
  std::vector<AllowedHost> list = {parse_allowed_host("*.example.com"), parse_allowed_host("bad.example.com")};
  list.back().denied = true;
  CHECK(host_allowed(list, "good.example.com", 443));
  CHECK_FALSE(host_allowed(list, "BAD.example.com", 443));
  CHECK_FALSE(host_allowed({list.back()}, "bad.example.com", 443));  // a denied entry alone allows nothing
}
