// Persistence files: what a host program runs later from a directory the
// sandbox lets the command write (git's hooks and config, shell rc files,
// editors' and agents' project settings). They are shown read-only, and the
// ones that are missing cannot be made, unless --allow-write names them.
#pragma once

#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace husk::rt {

// The names protected below each writable directory, relative to it (a
// name with "/" is inside a git directory: ".git/hooks"). One list for every
// wall that denies writes to them (the mounts here, Landlock).
std::vector<std::string> protected_names();

// What the walk of a writable directory found there (relative, parents
// before children): every dot-name, and a git directory's entries. A
// symlink is left as it is (a mount cannot cover it; binding its target
// would follow it): only its name is known to be taken.
struct PersistFound {
  std::string rel;
  bool dir = false;
  bool link = false;
  // A git directory that a `.git` file ("gitdir: PATH") or symlink names.
  bool gitdir = false;
  // A path a repository's config names (core.hooksPath, include.path):
  // `missing` when it is not there (rel: the first of its components that
  // is not), `file` when that is the included file itself (a placeholder,
  // a directory, would break git: "bad config").
  bool named = false, missing = false, file = false;
};

// How one path is protected. Pin: a directory bound on itself (writable),
// so that it cannot be renamed away and rebuilt with a hook in it; ReadOnly:
// bound on itself read-only; Absent: missing, an empty read-only directory
// stands in for it (placeholder: git does not see an empty directory);
// AbsentFile: missing, a name that is a file where it is read, and an empty
// read-only file stands in (a directory would break its reader: git stops
// at a ~/.gitconfig that is one); Watch: missing where git refuses a
// directory (commondir, config.worktree, gitdir, an included file): what
// the command makes there is moved aside at exit (NewFiles, internal.h).
struct Protection {
  enum Kind { kPin, kReadOnly, kAbsent, kAbsentFile, kWatch };
  std::string rel;
  Kind kind;
  // ReadOnly: a file, bound "ro" (nothing is mounted below a file, and
  // crun 1.8 refuses "rro" on one), else "rro".
  bool file = false;
};

// The protections of one writable directory from what its walk found.
// `home`: it is the user's home, where the shells' rc files are read.
std::vector<Protection> plan_protection(const std::vector<PersistFound>& found, bool home);

// The walk (persist_scan.cpp): below the real directory `root`, bounded (see
// kMaxDepth and kMaxEntries there), no symlink followed, nothing mounted
// separately and nothing in `skip` (real paths shown otherwise) entered.
// Its last entry has an empty rel when it stopped at its bound of names.
std::vector<PersistFound> scan_persist(const std::string& root, const std::vector<std::string>& skip);

// A missing protected name on the host (its real path) and what stands in
// for it there while the sandbox runs: an empty file or directory.
struct MissingName {
  std::string path;
  bool file = false;
  bool operator==(const MissingName&) const = default;
};

// The OCI mounts of the protections of a directory shown writable at `dest`
// (its real path `real`), less what --allow-write (sandbox paths) names.
// `placeholders` gets the Absent ones, to be made first, `guarded` the real
// paths of the others (held while the sandbox runs). `empty_file`: what is
// bound over a file that stands in (hidden_file).
nlohmann::ordered_json persist_mounts(const std::vector<Protection>& plan, const std::string& dest,
                                      const std::string& real, const std::vector<std::string>& allow_write,
                                      std::vector<std::string>& used_allow, std::vector<MissingName>& placeholders,
                                      std::vector<std::string>& guarded, const std::string& empty_file);

// Every directory between a writable bind of a host tree (the working
// directory, --rw, a pinned one) and a mount below it (a hidden path, a
// --deny-write or a protected one) bound on itself, writable, just before the
// first mount inside it (pins.cpp): renaming a parent away would take the
// mount with it and leave the host's file at a new name. `real`: realpath,
// nullopt when missing (SandboxHost::real).
void pin_parents(nlohmann::ordered_json& mounts,
                 const std::function<std::optional<std::string>(const std::string&)>& real);

// The default settings' directory (`dir`, SandboxHost::settings_dir) where
// a writable directory (`writable`: their real paths) holds it and the
// home's plan (.config/husk, made when the home is one of them) does not:
// $XDG_CONFIG_HOME elsewhere, a symlink on the way, a writable ~/.config.
// Its real path, to be shown read-only; nullopt when there is nothing to
// do. Missing there, an Error: the command would make the next sandbox's
// settings.
std::optional<std::string> settings_dir_protection(
    const std::string& dir, const std::string& home,
    const std::function<std::optional<std::string>(const std::string&)>& real,
    const std::vector<std::string>& writable);

// An empty directory that stands in for a hidden one or a missing protected
// one: read-only, and looks it (mode 0555).
nlohmann::ordered_json empty_read_only_dir(const std::string& dest);

// An empty read-only file (`empty_file`) bound over a hidden one; without
// one, the null device.
nlohmann::ordered_json hidden_file(const std::string& dest, const std::string& empty_file);

// A host tree bound (rbind, nosuid, nodev); read-only as "rro" over a
// directory's mounts below it, "ro" for a file, which has none (and crun
// 1.8 refuses "rro" on one).
nlohmann::ordered_json bind_mount(const std::string& dest, const std::string& source, bool writable, bool file);

}  // namespace husk::rt
