// Persistence files: which paths below a writable directory are protected
// and how (pure: from what the walk in persist_scan.cpp found).
#include "sandbox/persist.h"

#include <algorithm>
#include <set>

#include "base/error.h"
#include "base/path.h"

namespace husk::rt {
namespace {

using ojson = nlohmann::ordered_json;

// Protected wherever the walk finds them; at the top of a writable
// directory also while missing. Each makes a host program run code: git's
// directory (its config and hooks), VS Code's tasks and JetBrains' run
// configurations, an agent's MCP servers (.mcp.json starts them), direnv's
// .envrc (runs at `cd` once allowed), Cursor's and Gemini CLI's settings
// (their MCP servers and hooks start commands; extensions too).
const std::vector<std::string> kTopNames = {".git", ".vscode", ".idea", ".mcp.json", ".envrc", ".cursor", ".gemini"};

// Claude Code's settings, in a project and in the home: their hooks run
// commands. The directory is pinned and only these are read-only in it (the
// agent goes on writing its other files there); missing, it stands in whole.
const std::string kClaudeDir = ".claude";
const std::vector<std::string> kClaudeNames = {".claude/settings.json", ".claude/settings.local.json"};

// Read from the home only (a shell's rc files, git's global config): also
// while missing where the writable directory is the home, elsewhere only
// when they are there. .bash_logout and .zlogout run at a login shell's exit;
// display managers source .xprofile and .xsessionrc, and pam_env reads
// .pam_environment (LD_PRELOAD, PATH) at the next graphical login.
// Not here: .inputrc (key bindings, no command), .pythonrc (read only where
// PYTHONSTARTUP names it), .vimrc (its commands run, but the credentials'
// --hide is the tool for editors' files).
const std::vector<std::string> kHomeNames = {".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile",
                                             ".zshrc",  ".zprofile",     ".zshenv",     ".zlogin",      ".zlogout",
                                             ".gitconfig", ".pam_environment", ".xprofile", ".xsessionrc"};

// In the home's .config (pinned, so that it cannot be renamed away and
// rebuilt): git's other global config, the user's systemd units and the
// desktop's autostart entries (run at the next login), fish's config, the
// user manager's environment (environment.d: LD_PRELOAD for every service),
// husk's own default settings (the next sandbox's walls: net host, rw ~).
// Not ~/.local/bin (ahead in PATH, but `pip install --user` writes there).
const std::vector<std::string> kHomeConfigNames = {".config/git", ".config/systemd", ".config/autostart",
                                                   ".config/fish", ".config/environment.d", ".config/husk"};

// The user's systemd units (and timers' stamps) in the home's .local/share,
// started at the next login as those of .config/systemd are: read-only
// whole, .local and .local/share pinned above it (a rename of either would
// take the protection away).
const std::string kHomeSystemd = ".local/share/systemd";

// Protected where they are, never made: .gitmodules (a tracked file: its
// URLs reach `git submodule update`), ripgrep's config (its --pre runs a
// program, when RIPGREP_CONFIG_PATH names it), .npmrc (script-shell and
// node-options run at `npm run`).
const std::vector<std::string> kPresentNames = {".gitmodules", ".ripgreprc", ".npmrc"};

// In a git directory: what git runs (hooks, core.fsmonitor, core.pager,
// aliases, filters in config and config.worktree) and where it looks for
// them (commondir: another directory's config and hooks). info/ is left
// writable: attributes and exclude name drivers and patterns, the programs
// are in config. modules/* and worktrees/* are git directories of their own.
const std::vector<std::string> kGitDirNames = {"config", "config.worktree", "commondir", "hooks"};

// Made in a git directory, they give git another config and hooks
// (commondir: the main repository's too), or another git directory.
const char* const kGitDirWatched[] = {"commondir", "config.worktree", "gitdir"};

std::string base_name(const std::string& rel) { return rel.substr(rel.rfind('/') + 1); }
std::string dir_name(const std::string& rel) {
  size_t slash = rel.rfind('/');
  return slash == std::string::npos ? "" : rel.substr(0, slash);
}
bool in(const std::vector<std::string>& list, const std::string& name) {
  return std::find(list.begin(), list.end(), name) != list.end();
}
size_t depth(const std::string& rel) { return std::count(rel.begin(), rel.end(), '/'); }

// A missing name that is a file where it is read (an rc file, .mcp.json,
// Claude's settings) has a file stand in for it: bash says so of a
// ~/.bashrc that is a directory, git stops at such a ~/.gitconfig.
Protection absent(const std::string& rel) {
  const std::string name = base_name(rel);
  const bool file = name == ".mcp.json" || name == ".envrc" || in(kHomeNames, name) ||
                    in(kClaudeNames, kClaudeDir + "/" + name);
  return {rel, file ? Protection::kAbsentFile : Protection::kAbsent};
}

}  // namespace

std::vector<std::string> protected_names() {
  std::vector<std::string> out = kTopNames;
  for (const auto* list : {&kHomeNames, &kHomeConfigNames, &kPresentNames, &kClaudeNames})
    out.insert(out.end(), list->begin(), list->end());
  out.push_back(kHomeSystemd);
  for (const auto& n : kGitDirNames) out.push_back(".git/" + n);
  return out;
}

std::vector<Protection> plan_protection(const std::vector<PersistFound>& found, bool home) {
  std::vector<Protection> plan;
  // gitdirs: git directories; hooked: those whose hooks git runs (a
  // worktree's directory has none of its own: the common ones run).
  std::set<std::string> present, gitdirs, hooked, claude;
  bool local_share = false;  // the home's .local/share, a directory (no symlink: a placeholder needs that)
  for (const auto& f : found) present.insert(f.rel);
  for (const auto& f : found) {
    if (f.link) continue;
    if (f.named) {
      if (!f.missing) plan.push_back({f.rel, Protection::kReadOnly});
      else plan.push_back({f.rel, f.file ? Protection::kWatch : Protection::kAbsent});
      continue;
    }
    if (f.gitdir) {  // as a .git directory (a submodule's is one already)
      if (gitdirs.insert(f.rel).second) {
        plan.push_back({f.rel, Protection::kPin});
        // A linked worktree's (it has a commondir) runs the common hooks and
        // config, found wherever the walk meets this one first.
        if (!present.count(f.rel + "/commondir")) hooked.insert(f.rel);
      }
      continue;
    }
    const std::string name = base_name(f.rel), parent = dir_name(f.rel), above = dir_name(parent);
    const bool in_git = gitdirs.count(parent) > 0;
    // A submodule's or a worktree's git directory (it has a HEAD; a
    // submodule named a/b is in modules/a/b, modules/a has none).
    const bool git_child = (base_name(parent) == "modules" || base_name(parent) == "worktrees") &&
                           gitdirs.count(above) && present.count(f.rel + "/HEAD");
    if (name == ".git" && !in_git) {
      plan.push_back({f.rel, f.dir ? Protection::kPin : Protection::kReadOnly});
      if (f.dir) {
        gitdirs.insert(f.rel);
        hooked.insert(f.rel);
      }
    } else if (in_git && (name == "modules" || name == "worktrees")) {
      if (f.dir) plan.push_back({f.rel, Protection::kPin});
    } else if (in_git && in(kGitDirNames, name)) {
      plan.push_back({f.rel, Protection::kReadOnly});
    } else if (git_child && f.dir) {
      if (gitdirs.insert(f.rel).second) plan.push_back({f.rel, Protection::kPin});
      if (base_name(parent) == "modules") hooked.insert(f.rel);
    } else if (!in_git && !git_child && (in(kTopNames, name) || in(kHomeNames, name) || in(kPresentNames, name))) {
      plan.push_back({f.rel, Protection::kReadOnly});
    } else if (!in_git && name == kClaudeDir) {
      plan.push_back({f.rel, f.dir ? Protection::kPin : Protection::kReadOnly});
      if (f.dir) claude.insert(f.rel);
    } else if (claude.count(parent) && in(kClaudeNames, kClaudeDir + "/" + name)) {
      plan.push_back({f.rel, Protection::kReadOnly});
    } else if (home && (f.rel == ".local" || f.rel == ".local/share") && f.dir) {
      plan.push_back({f.rel, Protection::kPin});
      local_share |= f.rel == ".local/share";
    } else if (home && f.rel == kHomeSystemd) {
      plan.push_back({f.rel, Protection::kReadOnly});
    } else if (home && f.rel == ".config" && f.dir) {
      plan.push_back({f.rel, Protection::kPin});
    } else if (home && in(kHomeConfigNames, f.rel)) {
      plan.push_back({f.rel, Protection::kReadOnly});
    }
  }
  // A home without .config: made, the command would fill it with all of
  // them, so it stands in empty (a tool that writes there fails loudly).
  if (home && !present.count(".config")) plan.push_back({".config", Protection::kAbsent});
  if (home && present.count(".config"))
    for (const auto& n : kHomeConfigNames)
      if (!present.count(n)) plan.push_back({n, Protection::kAbsent});
  if (local_share && !present.count(kHomeSystemd))
    plan.push_back({kHomeSystemd, Protection::kAbsent});
  // A git directory without its config (an empty .git, as bwrap leaves its
  // mount points): made by the command, it would be what git reads next
  // outside (core.fsmonitor runs at `git status`).
  for (const auto& g : hooked) {
    if (!present.count(g + "/hooks")) plan.push_back({g + "/hooks", Protection::kAbsent});
    if (!present.count(g + "/config")) plan.push_back({g + "/config", Protection::kAbsentFile});
  }
  for (const auto& c : claude)
    for (const auto& n : kClaudeNames)
      if (const std::string rel = dir_name(c).empty() ? n : dir_name(c) + "/" + n; !present.count(rel))
        plan.push_back(absent(rel));
  for (const auto& g : gitdirs)
    for (const char* n : kGitDirWatched)
      if (!present.count(g + "/" + n)) plan.push_back({g + "/" + n, Protection::kWatch});
  std::vector<std::string> top = kTopNames;
  top.push_back(kClaudeDir);
  if (home) top.insert(top.end(), kHomeNames.begin(), kHomeNames.end());
  for (const auto& n : top)
    if (!present.count(n)) plan.push_back(absent(n));
  std::set<std::string> files;
  for (const auto& f : found)
    if (!f.dir && !f.link && !f.missing) files.insert(f.rel);
  for (auto& p : plan) p.file = p.kind == Protection::kReadOnly && files.count(p.rel);
  // A pinned directory is bound before what is bound inside it.
  std::stable_sort(plan.begin(), plan.end(),
                   [](const Protection& a, const Protection& b) { return depth(a.rel) < depth(b.rel); });
  // A git directory found twice (a worktree's, named by its .git file too).
  std::set<std::string> once;
  plan.erase(std::remove_if(plan.begin(), plan.end(), [&](const Protection& p) { return !once.insert(p.rel).second; }),
             plan.end());
  return plan;
}

std::optional<std::string> settings_dir_protection(
    const std::string& dir, const std::string& home,
    const std::function<std::optional<std::string>(const std::string&)>& real,
    const std::vector<std::string>& writable) {
  if (dir.empty()) return std::nullopt;
  const std::optional<std::string> home_real = home.empty() ? std::nullopt : real(home);
  const bool home_planned = home_real && in(writable, *home_real);
  std::string there = dir;
  std::optional<std::string> r = real(there);
  while (!r && there != "/") {
    there = there.substr(0, std::max<size_t>(there.rfind('/'), 1));
    r = real(there);
  }
  if (!r || std::none_of(writable.begin(), writable.end(), [&](const std::string& w) { return base::is_within(*r, w); }))
    return std::nullopt;
  if (there == dir) return home_planned && *r == *home_real + "/.config/husk" ? std::nullopt : r;
  // Missing in the home's own .config (or no .config): the home's plan stands in for it.
  if (home_planned && dir == home + "/.config/husk" && (*r == *home_real || *r == *home_real + "/.config"))
    return std::nullopt;
  throw Error("husk sandbox: " + dir + " (the default settings' directory) is missing in " + *r +
              ", which the command may write: it would set the next sandbox's walls; make the directory");
}

ojson empty_read_only_dir(const std::string& dest) {
  return {{"destination", dest},
          {"type", "tmpfs"},
          {"source", "tmpfs"},
          {"options", {"ro", "nosuid", "nodev", "noexec", "mode=555", "nr_inodes=1"}}};
}

ojson hidden_file(const std::string& dest, const std::string& empty_file) {
  if (empty_file.empty())  // no nodev: the null device is opened there
    return {
        {"destination", dest}, {"type", "bind"}, {"source", "/dev/null"}, {"options", {"bind", "nosuid", "noexec"}}};
  return {{"destination", dest},
          {"type", "bind"},
          {"source", empty_file},
          {"options", {"bind", "ro", "nosuid", "nodev", "noexec"}}};
}

ojson bind_mount(const std::string& dest, const std::string& source, bool writable, bool file) {
  std::vector<std::string> options = {"rbind", "nosuid", "nodev"};
  if (!writable) options.push_back(file ? "ro" : "rro");
  return {{"destination", dest}, {"type", "bind"}, {"source", source}, {"options", options}};
}

ojson persist_mounts(const std::vector<Protection>& plan, const std::string& dest, const std::string& real,
                     const std::vector<std::string>& allow_write, std::vector<std::string>& used_allow,
                     std::vector<MissingName>& placeholders, std::vector<std::string>& guarded,
                     const std::string& empty_file) {
  ojson mounts = ojson::array();
  for (const auto& p : plan) {
    const std::string at = dest + "/" + p.rel, host = real + "/" + p.rel;
    bool allowed = false;
    for (const auto& a : allow_write)
      if (base::is_within(at, a)) {
        allowed = true;
        used_allow.push_back(a);
      }
    if (allowed) continue;
    if (p.kind == Protection::kWatch) continue;  // no mount: SandboxConfig::watched
    if (p.kind == Protection::kAbsent || p.kind == Protection::kAbsentFile) {
      const bool file = p.kind == Protection::kAbsentFile;
      placeholders.push_back({host, file});
      mounts.push_back(file ? hidden_file(at, empty_file) : empty_read_only_dir(at));
      continue;
    }
    guarded.push_back(host);
    mounts.push_back(bind_mount(at, host, p.kind == Protection::kPin, p.file));
  }
  return mounts;
}

}  // namespace husk::rt
