// Persistence files: the plan from what a walk found, the walk itself on a
// made-up tree, and the config's mounts (hidden paths read-only as well).
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "sandbox/internal.h"
#include "sandbox/persist.h"
#include "sandbox/sandbox.h"
#include "spec/spec.h"

using namespace husk::rt;
using Catch::Contains;
using ojson = nlohmann::ordered_json;

namespace {

std::vector<std::string> lines(const std::vector<Protection>& plan) {
  std::vector<std::string> out;
  for (const auto& p : plan)
    out.push_back(p.rel + (p.kind == Protection::kPin        ? " pin"
                           : p.kind == Protection::kReadOnly ? " ro"
                           : p.kind == Protection::kAbsent   ? " absent"
                           : p.kind == Protection::kAbsentFile ? " absent file"
                                                               : " watch"));
  return out;
}

bool has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

bool has(const std::vector<MissingName>& v, const std::string& path, bool file) {
  return std::find(v.begin(), v.end(), MissingName{path, file}) != v.end();
}

SandboxHost host(std::vector<PersistFound> found, std::set<std::string> dirs = {}) {
  SandboxHost h;
  h.uid = h.gid = 1000;
  h.user_name = "ann";
  h.home = "/home/ann";
  h.cwd = "/home/ann/proj";
  h.root_dirs = {"etc", "home", "usr"};
  h.homes = {"/home/ann"};
  std::set<std::string> existing = {"/", "/etc", "/usr", "/home", "/home/ann", "/home/ann/proj", "/home/ann/.ssh",
                                    "/home/ann/proj/.env", "/home/ann/proj/sub"};
  h.real = [existing](const std::string& p) -> std::optional<std::string> {
    if (!existing.count(p)) return std::nullopt;
    return p;
  };
  h.is_dir = [dirs](const std::string& p) { return dirs.count(p) > 0; };
  h.scan = [found](const std::string& real, const std::vector<std::string>&) {
    return real == "/home/ann/proj" ? found : std::vector<PersistFound>{};
  };
  return h;
}

SandboxOptions cmd() {
  SandboxOptions o;
  o.args = {"make"};
  return o;
}

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

const std::string kEmpty = " tmpfs ro nosuid nodev noexec mode=555 nr_inodes=1";

}  // namespace

TEST_CASE("persist: a repository's git directories pinned, what runs read-only, the missing made impossible",
          "[sandbox]") {
  std::vector<PersistFound> found = {
      {".git", true},          {".gitmodules"},           {".bashrc", false, true},  // a symlink: left as it is
      {".git/HEAD"},           {".git/config"},           {".git/index"},
      {".git/modules", true},  {".git/modules/lib", true}, {".git/modules/lib/HEAD"},
      {".git/modules/lib/config"},                         {".git/modules/a", true},  // a submodule a/b: no HEAD
      {".git/worktrees", true}, {".git/worktrees/w", true}, {".git/worktrees/w/HEAD"},
      {".git/worktrees/w/commondir"},                      {".git/info", true},
      {"sub/.git"},            {"pkg/.vscode", true},     {"pkg/.envrc"},
      {"pkg/.cache", true}};
  auto plan = lines(plan_protection(found, false));
  std::vector<std::string> want = {
      ".git pin", ".gitmodules ro", ".vscode absent", ".idea absent", ".mcp.json absent file", ".envrc absent file",
      ".cursor absent", ".gemini absent", ".claude absent",
      ".git/config ro", ".git/modules pin", ".git/worktrees pin", ".git/hooks absent", "sub/.git ro",
      "pkg/.vscode ro", "pkg/.envrc ro", ".git/modules/lib pin", ".git/worktrees/w pin",
      ".git/modules/lib/config ro", ".git/worktrees/w/commondir ro", ".git/modules/lib/hooks absent",
      // What a placeholder cannot stand for, in every git directory: moved aside at exit if made.
      ".git/commondir watch", ".git/config.worktree watch", ".git/gitdir watch", ".git/modules/lib/commondir watch",
      ".git/modules/lib/config.worktree watch", ".git/modules/lib/gitdir watch",
      ".git/worktrees/w/config.worktree watch", ".git/worktrees/w/gitdir watch"};
  std::sort(plan.begin(), plan.end());
  std::sort(want.begin(), want.end());
  CHECK(plan == want);

  // Parents before children: a pin bound after its children would cover them.
  auto ordered = plan_protection(found, false);
  for (size_t i = 0; i < ordered.size(); ++i)
    for (size_t j = i + 1; j < ordered.size(); ++j)
      CHECK_FALSE(ordered[j].rel + "/" == ordered[i].rel.substr(0, ordered[j].rel.size() + 1));

  // An empty .git: a config made there would be git's next; a file stands in.
  auto empty_git = lines(plan_protection({{".git", true}}, false));
  CHECK(has(empty_git, ".git/config absent file"));
  CHECK(has(empty_git, ".git/hooks absent"));
}

TEST_CASE("persist: the shells' rc files are made impossible in the home only", "[sandbox]") {
  auto in_project = lines(plan_protection({}, false));
  CHECK(has(in_project, ".git absent"));
  CHECK_FALSE(has(in_project, ".bashrc absent"));
  auto in_home = lines(plan_protection({{".profile"}, {".zshrc", false, true}}, true));
  // Files where they are read: a file stands in (git stops at a ~/.gitconfig that is a directory).
  for (const char* n : {".bashrc", ".bash_profile", ".bash_login", ".zshenv", ".zlogin", ".gitconfig"})
    CHECK(has(in_home, std::string(n) + " absent file"));
  CHECK(has(in_home, ".profile ro"));
  // The home's .config: pinned, git's, systemd's, autostart's and fish's read-only or not made.
  auto config = lines(plan_protection({{".config", true}, {".config/git", true}, {".config/fish", false, true}}, true));
  CHECK(has(config, ".config pin"));
  CHECK(has(config, ".config/git ro"));
  CHECK(has(config, ".config/systemd absent"));
  CHECK(has(config, ".config/autostart absent"));
  // husk's own default settings: the next sandbox's walls.
  CHECK(has(config, ".config/husk absent"));
  CHECK(has(lines(plan_protection({{".config", true}, {".config/husk", true}}, true)), ".config/husk ro"));
  // No .config at all: it stands in empty, or the command would make .config/husk/sandbox.yaml.
  CHECK(has(in_home, ".config absent"));
  CHECK_FALSE(has(in_project, ".config absent"));
  for (const auto& l : config) CHECK(l.rfind(".config/fish", 0) != 0);
  for (const auto& l : lines(plan_protection({{".config", true}}, false))) CHECK(l.rfind(".config", 0) != 0);
  // A symlink's name is taken: no placeholder, no mount over it.
  for (const auto& l : in_home) CHECK(l.rfind(".zshrc", 0) != 0);
  // One list for every wall.
  auto names = protected_names();
  for (const char* n : {".git/hooks", ".git/config", ".bashrc", ".vscode", ".idea", ".mcp.json", ".envrc", ".gitconfig",
                        ".gitmodules", ".ripgreprc", ".zprofile"})
    CHECK(has(names, n));
}

TEST_CASE("persist: Claude Code's settings, the home's systemd units and login files", "[sandbox]") {
  // .claude pinned (its other files stay writable), its settings read-only or not made; a sub-project's too.
  auto claude = lines(plan_protection({{".claude", true}, {".claude/settings.json"}, {".claude/todos", true},
                                       {"sub/.claude", true}, {"sub/.claude/settings.local.json", false, true}},
                                      false));
  CHECK(has(claude, ".claude pin"));
  CHECK(has(claude, ".claude/settings.json ro"));
  CHECK(has(claude, ".claude/settings.local.json absent file"));
  CHECK(has(claude, "sub/.claude pin"));
  CHECK(has(claude, "sub/.claude/settings.json absent file"));
  for (const auto& l : claude) CHECK(l.rfind(".claude/todos", 0) != 0);
  for (const auto& l : claude) CHECK(l.rfind("sub/.claude/settings.local.json", 0) != 0);  // a symlink
  CHECK(has(lines(plan_protection({{".claude"}}, false)), ".claude ro"));  // a file: nothing can be inside
  // The home's .local/share/systemd: read-only or not made, .local and .local/share pinned.
  auto local = lines(plan_protection({{".local", true}, {".local/share", true}}, true));
  CHECK(has(local, ".local pin"));
  CHECK(has(local, ".local/share pin"));
  CHECK(has(local, ".local/share/systemd absent"));
  CHECK(has(lines(plan_protection({{".local", true}, {".local/share", true}, {".local/share/systemd", true}}, true)),
            ".local/share/systemd ro"));
  // .local/share a symlink: nothing is made through it; elsewhere than the home .local is not looked at.
  for (const auto& l : lines(plan_protection({{".local", true}, {".local/share", true, true}}, true)))
    CHECK(l.rfind(".local/share", 0) != 0);
  for (const auto& l : lines(plan_protection({{".local", true}, {".local/share", true}}, false)))
    CHECK(l.rfind(".local", 0) != 0);
  auto home = lines(plan_protection({{".config", true}}, true));
  for (const char* n : {".config/environment.d", ".cursor", ".gemini"}) CHECK(has(home, std::string(n) + " absent"));
  for (const char* n : {".pam_environment", ".xprofile", ".xsessionrc"}) CHECK(has(home, std::string(n) + " absent file"));
  CHECK_FALSE(has(lines(plan_protection({}, false)), ".xprofile absent file"));
  auto names = protected_names();
  for (const char* n : {".claude/settings.json", ".claude/settings.local.json", ".local/share/systemd",
                        ".config/environment.d", ".pam_environment", ".cursor", ".gemini"})
    CHECK(has(names, n));
}

TEST_CASE("persist: the config binds them after the working directory, --allow-write opens one", "[sandbox]") {
  SandboxHost h = host({{".git", true}, {".git/config"}, {".git/hooks", true}, {".git/HEAD"}});
  SandboxConfig sc = sandbox_config(cmd(), h, "r");
  REQUIRE_NOTHROW(husk::spec::validate(husk::spec::parse(sc.config.dump()), true));
  auto m = mounts(sc.config);
  auto proj = std::find(m.begin(), m.end(), "/home/ann/proj bind /home/ann/proj rbind nosuid nodev");
  auto git = std::find(m.begin(), m.end(), "/home/ann/proj/.git bind /home/ann/proj/.git rbind nosuid nodev");
  auto hooks =
      std::find(m.begin(), m.end(), "/home/ann/proj/.git/hooks bind /home/ann/proj/.git/hooks rbind nosuid nodev rro");
  REQUIRE(proj != m.end());
  REQUIRE(git != m.end());
  REQUIRE(hooks != m.end());
  CHECK(proj < git);
  CHECK(git < hooks);
  CHECK(has(m, "/home/ann/proj/.git/config bind /home/ann/proj/.git/config rbind nosuid nodev ro"));
  CHECK(has(m, "/home/ann/proj/.vscode" + kEmpty));
  CHECK(has(m, "/home/ann/proj/.mcp.json bind /dev/null bind nosuid noexec"));  // --print-config's empty file
  CHECK(sc.placeholders == std::vector<MissingName>{{"/home/ann/proj/.vscode"},
                                                    {"/home/ann/proj/.idea"},
                                                    {"/home/ann/proj/.mcp.json", true},
                                                    {"/home/ann/proj/.envrc", true},
                                                    {"/home/ann/proj/.cursor"},
                                                    {"/home/ann/proj/.gemini"},
                                                    {"/home/ann/proj/.claude"}});
  CHECK(sc.guarded == std::vector<std::string>{"/home/ann/proj/.git", "/home/ann/proj/.git/config",
                                               "/home/ann/proj/.git/hooks"});
  CHECK(sc.watched == std::vector<std::string>{"/home/ann/proj/.git/commondir", "/home/ann/proj/.git/config.worktree",
                                               "/home/ann/proj/.git/gitdir"});
  CHECK(sc.writable == std::vector<std::string>{"/home/ann/proj"});

  SandboxOptions o = cmd();
  o.allow_write = {".git/hooks", "/home/ann/proj/.vscode"};
  sc = sandbox_config(o, h, "r");
  m = mounts(sc.config);
  CHECK_FALSE(has(m, "/home/ann/proj/.git/hooks bind /home/ann/proj/.git/hooks rbind nosuid nodev rro"));
  CHECK_FALSE(has(m, "/home/ann/proj/.vscode" + kEmpty));
  CHECK_FALSE(has(sc.placeholders, "/home/ann/proj/.vscode", false));
  CHECK(has(m, "/home/ann/proj/.git/config bind /home/ann/proj/.git/config rbind nosuid nodev ro"));
  o.allow_write = {".git/commondir"};  // not moved aside at exit then
  CHECK(sandbox_config(o, h, "r").watched ==
        std::vector<std::string>{"/home/ann/proj/.git/config.worktree", "/home/ann/proj/.git/gitdir"});

  o.allow_write = {"src/main.c"};
  REQUIRE_THROWS_WITH(sandbox_config(o, h, "r"), Contains("--allow-write src/main.c: protects nothing"));

  // --overlay: the working directory's writes stay in the upper layer.
  o = cmd();
  o.overlay = true;
  for (const auto& l : mounts(sandbox_config(o, h, "r").config)) CHECK(l.find("/home/ann/proj/.") == std::string::npos);
}

TEST_CASE("persist: hidden directories are empty and read-only, hidden files read-only", "[sandbox]") {
  SandboxHost h = host({}, {"/home/ann/.ssh"});
  h.cwd = "/home/ann";
  SandboxOptions o = cmd();
  o.hide = {"proj/.env"};
  SandboxConfig sc = sandbox_config(o, h, "r", "overlay", "/run/sb/empty");
  auto m = mounts(sc.config);
  CHECK(m[m.size() - 3] == "/home/ann/.ssh" + kEmpty);  // last: over every bind
  // proj, between the writable home and .env, pinned before .env (pins_test.cpp).
  CHECK(m[m.size() - 2] == "/home/ann/proj bind /home/ann/proj rbind nosuid nodev");
  CHECK(m.back() == "/home/ann/proj/.env bind /run/sb/empty bind ro nosuid nodev noexec");
  // --print-config, for any runtime: the null device, as maskedPaths has it.
  CHECK(has(mounts(sandbox_config(o, h, "r").config), "/home/ann/proj/.env bind /dev/null bind nosuid noexec"));
  std::vector<std::string> masked = sc.config["linux"]["maskedPaths"];
  CHECK_FALSE(has(masked, "/home/ann/.ssh"));
  CHECK_FALSE(has(masked, "/home/ann/proj/.env"));
  CHECK(has(masked, "/proc/kcore"));  // the defaults stay
  // The home as the working directory: its rc files cannot be made; an
  // empty file stands in, read-only.
  CHECK(has(sc.placeholders, "/home/ann/.bashrc", true));
  CHECK(has(m, "/home/ann/.bashrc bind /run/sb/empty bind ro nosuid nodev noexec"));

  // A scratch home: where keys would be written and lost, read-only.
  m = mounts(sandbox_config(cmd(), host({}), "r").config);
  CHECK(has(m, "/home/ann/.ssh" + kEmpty));
  CHECK(has(m, "/home/ann/.gnupg" + kEmpty));
}

TEST_CASE("persist: the walk is bounded, follows no symlink and skips what is shown otherwise", "[sandbox]") {
  char tmpl[] = "/tmp/husk-persist-XXXXXX";
  REQUIRE(mkdtemp(tmpl));
  const std::string root = tmpl;
  auto mk = [&](const std::string& rel) { REQUIRE(::mkdir((root + "/" + rel).c_str(), 0755) == 0); };
  auto touch = [&](const std::string& rel) { std::ofstream(root + "/" + rel) << "x"; };
  for (const char* d : {".git", ".git/hooks", "a", "a/b", "a/b/c", "a/b/c/d", "node_modules", "node_modules/x",
                        "shown", "elsewhere", "elsewhere/.vscode"})
    mk(d);
  touch(".git/config");
  touch("a/.envrc");
  touch("a/b/.mcp.json");    // in a directory two below: found
  touch("a/b/c/.mcp.json");  // three below: beyond the walk
  for (const char* d : {".claude", "a/.claude", ".local", ".local/share", ".local/share/systemd"}) mk(d);
  touch(".claude/settings.json");
  touch("a/.claude/settings.local.json");
  touch("node_modules/x/.npmrc");
  touch("shown/.envrc");
  REQUIRE(::symlink("elsewhere", (root + "/link").c_str()) == 0);
  REQUIRE(::symlink("elsewhere/.vscode", (root + "/.vscode").c_str()) == 0);

  std::set<std::string> got;
  for (const auto& f : scan_persist(root, {root + "/shown"}))
    got.insert(f.rel + (f.dir ? "/" : "") + (f.link ? "@" : ""));
  CHECK(got.count(".git/"));
  CHECK(got.count(".git/config"));
  CHECK(got.count(".git/hooks/"));
  CHECK(got.count("a/.envrc"));
  CHECK(got.count("a/b/.mcp.json"));
  CHECK(got.count(".vscode@"));
  CHECK(got.count("elsewhere/.vscode/"));
  CHECK(got.count(".claude/settings.json"));
  CHECK(got.count("a/.claude/settings.local.json"));
  CHECK(got.count(".local/share/"));
  CHECK(got.count(".local/share/systemd/"));
  CHECK_FALSE(got.count("a/b/c/.mcp.json"));
  CHECK_FALSE(got.count("node_modules/x/.npmrc"));
  CHECK_FALSE(got.count("shown/.envrc"));
  CHECK_FALSE(got.count("link/.vscode/"));

  // A top directory filled past the budget: its protected names are still found.
  for (int i = 0; i < 3000; ++i) touch("f" + std::to_string(i));
  got.clear();
  const auto spent = scan_persist(root, {});
  CHECK(spent.back().rel.empty());  // said at start: the walk reached its bound
  for (const auto& f : spent) got.insert(f.rel + (f.dir ? "/" : "") + (f.link ? "@" : ""));
  CHECK(got.count(".git/"));
  CHECK(got.count(".git/config"));
  CHECK(got.count(".vscode@"));
  CHECK(got.count(".claude/settings.json"));
  CHECK(got.count(".local/share/systemd/"));
  REQUIRE(std::system(("rm -rf " + root).c_str()) == 0);
}

TEST_CASE("persist: a linked worktree's git directory has no hooks or config of its own, met first or not",
          "[sandbox]") {
  const std::vector<PersistFound> git = {{".git", true},           {".git/config"},           {".git/hooks", true},
                                         {".git/worktrees", true}, {".git/worktrees/w", true}, {".git/worktrees/w/HEAD"},
                                         {".git/worktrees/w/commondir"}};
  std::vector<PersistFound> named_first = {{".git/worktrees/w", true, false, true}, {"w/.git"}};
  named_first.insert(named_first.end(), git.begin(), git.end());
  std::vector<PersistFound> named_last = git;
  named_last.push_back({"w/.git"});
  named_last.push_back({".git/worktrees/w", true, false, true});
  for (const auto& found : {named_first, named_last}) {
    auto plan = lines(plan_protection(found, false));
    CHECK(has(plan, ".git/worktrees/w pin"));
    CHECK_FALSE(has(plan, ".git/worktrees/w/hooks absent"));
    CHECK_FALSE(has(plan, ".git/worktrees/w/config absent file"));
  }
}

TEST_CASE("persist: a .git file or symlink names a git directory, protected as .git", "[sandbox]") {
  auto plan = lines(plan_protection({{".git"}, {".gitdata", true, false, true}, {".gitdata/config"},
                                     {".git/modules/s", true, false, true}, {"s/.git"}},
                                    false));
  for (const char* l : {".git ro", ".gitdata pin", ".gitdata/config ro", ".gitdata/hooks absent"})
    CHECK(has(plan, l));
  CHECK(std::count(plan.begin(), plan.end(), ".git/modules/s pin") == 1);

  char tmpl[] = "/tmp/husk-gitfile-XXXXXX";
  REQUIRE(mkdtemp(tmpl));
  const std::string root = tmpl;
  auto write = [&](const std::string& rel, const std::string& text) { std::ofstream(root + "/" + rel) << text; };
  for (const char* d : {".gitdata", ".gitdata/hooks", "a", "b", "gd", "c", "d", "e"})
    REQUIRE(::mkdir((root + "/" + d).c_str(), 0755) == 0);
  write(".git", "gitdir: .gitdata\r\n");
  write(".gitdata/config", "[core]\n");
  write("a/.git", "gitdir: " + root + "/gd\n");  // absolute, as git writes it
  REQUIRE(::symlink("../gd", (root + "/b/.git").c_str()) == 0);  // the same one again
  write("c/.git", "gitdir: /tmp\n");                             // outside: read-only there
  write("d/.git", "gitdir: ../missing\n");
  write("e/.git", "not a gitdir line");
  // Symlinked config and hooks: what they name below the root is protected.
  write("my.cfg", "[core]\n");
  REQUIRE(::mkdir((root + "/myhooks").c_str(), 0755) == 0);
  REQUIRE(::symlink("../my.cfg", (root + "/gd/config").c_str()) == 0);
  REQUIRE(::symlink(("/" + root + "/myhooks").c_str(), (root + "/gd/hooks").c_str()) == 0);
  std::set<std::string> got, named;
  for (const auto& f : scan_persist(root, {})) {
    if (f.gitdir) got.insert(f.rel);
    if (f.named) named.insert(f.rel + (f.dir ? "/" : ""));
  }
  CHECK(got == std::set<std::string>{".gitdata", "gd"});
  CHECK(named == std::set<std::string>{"my.cfg", "myhooks/"});
  REQUIRE(std::system(("rm -rf " + root).c_str()) == 0);
}

TEST_CASE("persist: what the repository's config names is protected", "[sandbox]") {
  auto plan = lines(plan_protection({{".git", true},
                                     {".husky", true, false, false, true},
                                     {".gitconfig.local", false, false, false, true},
                                     {"hooks", false, false, false, true, true},
                                     {"conf", false, false, false, true, true},
                                     {"inc.local", false, false, false, true, true, true},
                                     {"lnk", false, true, false, true}},
                                    false));
  for (const char* l : {".husky ro", ".gitconfig.local ro", "hooks absent", "conf absent", "inc.local watch"})
    CHECK(has(plan, l));
  for (const auto& l : plan) CHECK(l.rfind("lnk", 0) != 0);

  char tmpl[] = "/tmp/husk-named-XXXXXX";
  REQUIRE(mkdtemp(tmpl));
  const std::string root = tmpl;
  for (const char* d : {".git", ".husky", "out"}) REQUIRE(::mkdir((root + "/" + d).c_str(), 0755) == 0);
  std::ofstream(root + "/.git/config") << "[core]\nhooksPath = .husky\n[include]\npath = ../local.cfg\n"
                                          "path = ../conf/x.cfg\npath = /etc/gitconfig\npath = ~/.gitcfg\n"
                                          "path = ../lnk/y\n[includeIf \"gitdir:x\"]\npath = ../../elsewhere\n";
  REQUIRE(::symlink("out", (root + "/lnk").c_str()) == 0);
  // An included file includes another, and itself (a loop ends at the bound).
  std::ofstream(root + "/local.cfg") << "[include]\npath = out/more.cfg\npath = local.cfg\n";
  std::ofstream(root + "/out/more.cfg") << "[core]\nhooksPath = out/hooks\n";
  std::set<std::string> got;
  for (const auto& f : scan_persist(root, {}))
    if (f.named) got.insert(f.rel + (f.missing ? "?" : "") + (f.file ? "f" : ""));
  // ../lnk/y goes through a symlink: not followed (nor covered).
  CHECK(got == std::set<std::string>{".husky", "local.cfg", "out/more.cfg", "out/hooks?", "conf?"});
  REQUIRE(std::system(("rm -rf " + root).c_str()) == 0);
}

TEST_CASE("persist: names made in a git directory are moved aside, a symlink as it is", "[sandbox]") {
  char tmpl[] = "/tmp/husk-newfiles-XXXXXX";
  REQUIRE(mkdtemp(tmpl));
  const std::string root = tmpl, pid = std::to_string(::getpid());
  REQUIRE(::mkdir((root + "/.git").c_str(), 0755) == 0);
  std::ofstream(root + "/.git/config.worktree") << "[core]\n";  // there at start: not ours
  std::vector<std::string> told;
  {
    NewFiles made(::geteuid(), ::getegid());
    made.watch({root + "/.git/commondir", root + "/.git/config.worktree", root + "/.git/gitdir", root + "/inc"},
               [&](const NewFiles::One& one) { told.push_back(one.path); });
    CHECK(told == std::vector<std::string>{root + "/.git/commondir", root + "/.git/gitdir", root + "/inc"});
    std::ofstream(root + "/.git/commondir") << "../.c\n";
    REQUIRE(::symlink("/etc/passwd", (root + "/.git/gitdir").c_str()) == 0);
  }
  struct stat st;
  CHECK(::stat((root + "/.git/commondir").c_str(), &st) != 0);
  CHECK(::stat((root + "/.git/commondir.husk-sandbox-" + pid).c_str(), &st) == 0);
  CHECK(::lstat((root + "/.git/gitdir.husk-sandbox-" + pid).c_str(), &st) == 0);
  CHECK(S_ISLNK(st.st_mode));
  CHECK(::stat((root + "/.git/config.worktree").c_str(), &st) == 0);
  CHECK(::stat("/etc/passwd", &st) == 0);
  REQUIRE(std::system(("rm -rf " + root).c_str()) == 0);
}

TEST_CASE("persist: placeholders are removed only while they are the same empty directory", "[sandbox]") {
  char tmpl[] = "/tmp/husk-placeholders-XXXXXX";
  REQUIRE(mkdtemp(tmpl));
  const std::string root = tmpl;
  REQUIRE(::mkdir((root + "/.c").c_str(), 0755) == 0);  // the user's, there before
  REQUIRE(::mkdir((root + "/elsewhere").c_str(), 0755) == 0);
  REQUIRE(::symlink("elsewhere", (root + "/link").c_str()) == 0);
  {
    Placeholders p(::geteuid(), ::getegid());
    std::vector<std::string> told;
    std::vector<MissingName> found;
    auto refused = p.make({{root + "/.a"}, {root + "/.b"}, {root + "/.c"}},
                          [&](const Placeholders::One& one) { told.push_back(one.name); }, found);
    CHECK(refused.empty());
    CHECK(told == std::vector<std::string>{".a", ".b"});  // .c is not ours: bound read-only on itself
    CHECK(found == std::vector<MissingName>{{root + "/.c"}});
    struct stat st;
    REQUIRE(::stat((root + "/.a").c_str(), &st) == 0);
    CHECK(S_ISDIR(st.st_mode));
    // The user puts their own .b in the placeholder's place while the sandbox runs.
    REQUIRE(::rmdir((root + "/.b").c_str()) == 0);
    REQUIRE(::mkdir((root + "/.b").c_str(), 0755) == 0);
    // A symlink on the way to a placeholder is refused, never followed.
    REQUIRE_THROWS_WITH(p.make({{root + "/link/.x"}}, [](const Placeholders::One&) {}, found),
                        Contains("a symlink is not followed"));
  }
  struct stat st;
  CHECK(::stat((root + "/.a").c_str(), &st) != 0);
  CHECK(::stat((root + "/.b").c_str(), &st) == 0);
  CHECK(::stat((root + "/.c").c_str(), &st) == 0);
  CHECK(::stat((root + "/elsewhere/.x").c_str(), &st) != 0);

  // A second sandbox in the same directory found the first's placeholder
  // and mounted over it: the first, ending, leaves it (removed, the second's
  // mount would go with it).
  {
    Placeholders first(::geteuid(), ::getegid()), second(::geteuid(), ::getegid());
    std::vector<MissingName> found;
    first.make({{root + "/.d"}, {root + "/.f", true}, {root + "/.g", true}}, [](const Placeholders::One&) {}, found);
    second.hold({root + "/.d", root + "/.f"});
    // Both started before either made .g: the second finds the first's.
    CHECK(second.make({{root + "/.g", true}}, [](const Placeholders::One&) {}, found).empty());
    CHECK(found.empty());
    first.remove();
    CHECK(::stat((root + "/.d").c_str(), &st) == 0);
    CHECK(::stat((root + "/.f").c_str(), &st) == 0);
    CHECK(::stat((root + "/.g").c_str(), &st) == 0);
  }
  // ... and the second, the last one out, removed them (files held as well).
  CHECK(::stat((root + "/.d").c_str(), &st) != 0);
  CHECK(::stat((root + "/.f").c_str(), &st) != 0);
  CHECK(::stat((root + "/.g").c_str(), &st) != 0);
  // A file the walk did not see (past its bound): bound read-only on itself, never hidden.
  {
    std::ofstream(root + "/config") << "[core]\n";
    Placeholders p(::geteuid(), ::getegid());
    std::vector<MissingName> found;
    CHECK(p.make({{root + "/config", true}}, [](const Placeholders::One&) {}, found).empty());
    CHECK(found == std::vector<MissingName>{{root + "/config", true}});
  }
  CHECK(::stat((root + "/config").c_str(), &st) == 0);
  REQUIRE(std::system(("rm -rf " + root).c_str()) == 0);
}

TEST_CASE("persist: a file stands in for a missing file name, removed while it is that same empty file", "[sandbox]") {
  char tmpl[] = "/tmp/husk-placeholders-file-XXXXXX";
  REQUIRE(mkdtemp(tmpl));
  const std::string root = tmpl;
  struct stat st;
  {
    Placeholders p(::geteuid(), ::getegid());
    std::vector<bool> told;
    std::vector<MissingName> found;
    CHECK(p.make({{root + "/.bashrc", true}, {root + "/.mcp.json", true}, {root + "/.envrc", true}},
                 [&](const Placeholders::One& one) { told.push_back(one.file); }, found)
              .empty());
    CHECK(told == std::vector<bool>{true, true, true});
    REQUIRE(::stat((root + "/.bashrc").c_str(), &st) == 0);
    CHECK(S_ISREG(st.st_mode));
    CHECK(st.st_size == 0);
    // Outside the sandbox the user writes in one, and puts their own file
    // in another's place: both are theirs now.
    std::ofstream(root + "/.mcp.json") << "{}\n";
    REQUIRE(::unlink((root + "/.envrc").c_str()) == 0);
    std::ofstream(root + "/.envrc").flush();
  }
  CHECK(::stat((root + "/.bashrc").c_str(), &st) != 0);
  CHECK(::stat((root + "/.mcp.json").c_str(), &st) == 0);
  CHECK(::stat((root + "/.envrc").c_str(), &st) == 0);
  // A FIFO put in a file placeholder's place, or where one is about to be
  // made: nothing blocks on it (an open for reading would wait for a
  // writer), and it stays, not ours.
  {
    Placeholders p(::geteuid(), ::getegid());
    std::vector<MissingName> found;
    CHECK(p.make({{root + "/.zshrc", true}}, [](const Placeholders::One&) {}, found).empty());
    REQUIRE(::unlink((root + "/.zshrc").c_str()) == 0);
    REQUIRE(::mkfifo((root + "/.zshrc").c_str(), 0600) == 0);
    REQUIRE(::mkfifo((root + "/.zprofile").c_str(), 0600) == 0);
    CHECK(p.make({{root + "/.zprofile", true}}, [](const Placeholders::One&) {}, found).empty());
    CHECK(found.empty());  // neither held nor bound: the stand-in's mount stays over it
  }
  for (const char* n : {"/.zshrc", "/.zprofile"}) {
    REQUIRE(::lstat((root + n).c_str(), &st) == 0);
    CHECK(S_ISFIFO(st.st_mode));
  }
  // husk killed: the guardian it told of the file removes it.
  {
    Placeholders guardian(::geteuid(), ::getegid());
    int sv[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0);
    const pid_t husk = ::fork();
    REQUIRE(husk >= 0);
    if (husk == 0) {
      try {
        Placeholders p(::geteuid(), ::getegid());
        std::vector<MissingName> found;
        p.make({{root + "/.profile", true}}, [&](const Placeholders::One& one) { Placeholders::send(sv[0], one); },
               found);
        ::_exit(0);  // before ~Placeholders: as SIGKILL would leave it
      } catch (...) {
      }
      ::_exit(1);
    }
    ::close(sv[0]);
    int status;
    REQUIRE(::waitpid(husk, &status, 0) == husk);
    CHECK(guardian.receive(sv[1]) == Placeholders::Heard::placeholder);
    CHECK(guardian.receive(sv[1]) == Placeholders::Heard::gone);
    ::close(sv[1]);
    REQUIRE(::stat((root + "/.profile").c_str(), &st) == 0);
    guardian.remove();
    CHECK(::stat((root + "/.profile").c_str(), &st) != 0);
  }
  REQUIRE(std::system(("rm -rf " + root).c_str()) == 0);
}

TEST_CASE("persist: placeholders in a directory the command made read-only are made and removed", "[sandbox]") {
  // Root writes in a directory of mode 0555 anyway: what is tested is the user's step.
  if (::geteuid() == 0) return;
  char tmpl[] = "/tmp/husk-placeholders-ro-XXXXXX";
  REQUIRE(mkdtemp(tmpl));
  const std::string root = tmpl;
  REQUIRE(::chmod(root.c_str(), 0555) == 0);
  struct stat st;
  {
    Placeholders p(::geteuid(), ::getegid());
    std::vector<MissingName> found;
    CHECK(p.make({{root + "/.a"}, {root + "/.b", true}}, [](const Placeholders::One&) {}, found).empty());
    CHECK(::stat((root + "/.a").c_str(), &st) == 0);
    REQUIRE(::stat(root.c_str(), &st) == 0);
    CHECK((st.st_mode & 07777) == 0555);  // put back
    REQUIRE(::chmod(root.c_str(), 0755) == 0);
    REQUIRE(::chmod(root.c_str(), 0500) == 0);  // `chmod 500 .` while the sandbox runs
  }
  CHECK(::stat((root + "/.a").c_str(), &st) != 0);
  CHECK(::stat((root + "/.b").c_str(), &st) != 0);
  REQUIRE(::stat(root.c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0500);
  REQUIRE(::rmdir(root.c_str()) == 0);
}

TEST_CASE("persist: the default settings' directory elsewhere in a writable tree is read-only, missing refused",
          "[sandbox]") {
  // A made-up host: /home/ann writable, ~/.config a symlink to ~/dots/config.
  std::set<std::string> there = {"/", "/home", "/home/ann", "/home/ann/dots", "/home/ann/dots/config",
                                 "/home/ann/proj", "/home/ann/proj/cfg", "/home/ann/proj/cfg/husk", "/srv"};
  auto real = [&](const std::string& p) -> std::optional<std::string> {
    if (p.rfind("/home/ann/.config", 0) == 0) {
      const std::string r = "/home/ann/dots/config" + p.substr(17);
      return there.count(r) ? std::optional(r) : std::nullopt;
    }
    return there.count(p) ? std::optional(p) : std::nullopt;
  };
  const std::vector<std::string> writable = {"/home/ann"};
  // $XDG_CONFIG_HOME in the project: shown read-only.
  CHECK(settings_dir_protection("/home/ann/proj/cfg/husk", "/home/ann", real, writable) == "/home/ann/proj/cfg/husk");
  // Outside every writable tree: nothing to do.
  CHECK_FALSE(settings_dir_protection("/srv/husk", "/home/ann", real, writable));
  CHECK_FALSE(settings_dir_protection("", "/home/ann", real, writable));
  // Missing where the command may make it: refused (through the ~/.config symlink too).
  CHECK_THROWS_WITH(settings_dir_protection("/home/ann/proj/x/husk", "/home/ann", real, writable),
                    Catch::Contains("/home/ann/proj/x/husk (the default settings' directory) is missing in "
                                    "/home/ann/proj"));
  CHECK_THROWS_WITH(settings_dir_protection("/home/ann/.config/husk", "/home/ann", real, writable),
                    Catch::Contains("missing in /home/ann/dots/config"));
  there.insert("/home/ann/dots/config/husk");
  CHECK(settings_dir_protection("/home/ann/.config/husk", "/home/ann", real, writable) == "/home/ann/dots/config/husk");
  // The home's own .config/husk, there or not (or no .config): the home's plan protects it.
  there = {"/", "/home", "/home/bob", "/home/bob/.config", "/home/bob/.config/husk"};
  const std::vector<std::string> bob = {"/home/bob"};
  CHECK_FALSE(settings_dir_protection("/home/bob/.config/husk", "/home/bob", real, bob));
  // ~/.config itself writable (the working directory): no home plan there, shown read-only.
  CHECK(settings_dir_protection("/home/bob/.config/husk", "/home/bob", real, {"/home/bob/.config"}) ==
        "/home/bob/.config/husk");
  there.erase("/home/bob/.config/husk");
  CHECK_FALSE(settings_dir_protection("/home/bob/.config/husk", "/home/bob", real, bob));
  CHECK_THROWS(settings_dir_protection("/home/bob/.config/husk", "/home/bob", real, {"/home/bob/.config"}));
  there.erase("/home/bob/.config");
  CHECK_FALSE(settings_dir_protection("/home/bob/.config/husk", "/home/bob", real, bob));
}
