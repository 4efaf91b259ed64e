// Settings files of `husk sandbox`: husk's own (every flag a key, by its
// long name) and srt's (~/.srt-settings.json), each turned into the values
// of flags so that they are judged by the same code as the command line.
// Pure: the files are read by read_settings_file (probe.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace husk::rt {

// One key of a husk settings file: a flag, its type taken from the CLI's
// own description of it.
struct SettingKey {
  enum Kind { flag, text, list };
  std::string name;
  Kind kind;
};

// A flag's value(s) as a settings file gives them: "true"/"false" for a
// switch, one text, or a list's items. `origin` names the file and its key.
struct SettingValue {
  std::string key;
  std::vector<std::string> values;
  std::string origin;
};

// What srt's paths are relative to: "~" the home, others the working
// directory; whether an absolute path is there (null: all are).
struct SettingsPlace {
  std::string cwd, home;
  std::function<bool(const std::string&)> exists;
};

// The text of FILE as JSON (a .json name) or YAML (else), as one JSON
// document; a YAML plain scalar becomes a bool, null or number when it reads
// as one. Errors name the file and where, never quote its text (a project
// file may be a link to a secret).
nlohmann::ordered_json settings_document(const std::string& text, const std::string& file);

// The flags a document sets: srt's format when it has an srt key (network,
// filesystem, ...), else husk's. An unknown key, a wrong type, or an srt
// key that has no husk meaning is an Error naming the file and the key.
std::vector<SettingValue> settings_values(const nlohmann::ordered_json& doc, const std::string& file,
                                          const std::vector<SettingKey>& keys, const SettingsPlace& place);

// srt's format (settings_srt.cpp): whether a top-level key is srt's, and
// the flags an srt document sets.
bool is_srt_key(const std::string& key);
std::vector<SettingValue> srt_values(const nlohmann::ordered_json& doc, const std::string& file,
                                     const SettingsPlace& place);

// A project file may only narrow what is in force (`current`: the key's
// values from the other layers and defaults, absent when never given):
// more hides and denied hosts, a subset of the allowed hosts, lower limits,
// net none, allow-host-loopback/private off; rw and allow-write only as they
// are already. Anything else is an Error naming the key. Returns the
// value to put in force: the list's new items, or the whole new value
// (`replaces`).
struct Narrowed {
  std::vector<std::string> values;
  bool replaces = false;
};
// --cpus as it is applied: the quota in microseconds of each kCpuPeriod. An
// Error naming the flag for what is not a number or rounds under the
// kernel's least quota (1 ms): such a quota would be no limit at all.
constexpr int64_t kCpuPeriod = 100000;
int64_t cpus_quota(const std::string& cpus);

Narrowed narrow(const SettingValue& v, const std::optional<std::vector<std::string>>& current,
                const std::string& cwd);

}  // namespace husk::rt

namespace husk::rt {

// The user the sandbox is for (as probe_sandbox_host chooses it from
// --user or sudo), where its default settings file is, and the places srt's
// paths are relative to. probe.cpp.
struct SettingsUser {
  uint32_t uid = 0, gid = 0;
  SettingsPlace place;
  std::string config_dir;  // default_settings_dir()
};
SettingsUser settings_user(const std::string& user_flag);

// Where the default settings file is: $XDG_CONFIG_HOME/husk, else
// $HOME/.config/husk; as root, root's own home's from passwd (never one of
// the environment's), "" when there is none. Always the caller's: root
// never reads another user's.
std::string default_settings_dir();

// The text of a settings file, nullopt when it is missing and `missing_ok`.
// With `as`: opened with that user's file access (a file of the user's,
// read by root for the user); `untrusted`: the sandboxed code may have
// written it, its last component is never a symlink. A regular file of at
// most 1 MiB, else an Error naming it; a FIFO put there does not block.
std::optional<std::string> read_settings_file(const std::string& path, const SettingsUser* as, bool untrusted,
                                              bool missing_ok);

}  // namespace husk::rt
