// srt's settings format (Anthropic's sandbox-runtime, ~/.srt-settings.json)
// turned into husk's flags. Every key srt documents has a line here: what
// has no husk meaning is an Error naming it unless it asks for nothing
// (its default, an empty list), never dropped.
#include <algorithm>
#include <functional>
#include <map>

#include "base/error.h"
#include "base/path.h"
#include "namespaces/namespaces.h"
#include "sandbox/glob.h"
#include "sandbox/proxy.h"
#include "sandbox/settings.h"

namespace husk::rt {

namespace {

using json = nlohmann::ordered_json;

struct Srt {
  const std::string& file;
  const SettingsPlace& place;
  std::vector<SettingValue> out;

  Error error(const std::string& key, const std::string& why) const { return Error(file + ": " + key + ": " + why); }

  std::vector<std::string> strings(const std::string& key, const json& v) const {
    if (!v.is_array()) throw error(key, "must be a list of strings");
    std::vector<std::string> items;
    for (const auto& i : v) {
      if (!i.is_string() || i.get<std::string>().empty()) throw error(key, "must be a list of non-empty strings");
      items.push_back(i.get<std::string>());
    }
    return items;
  }
  bool boolean(const std::string& key, const json& v) const {
    if (!v.is_boolean()) throw error(key, "must be true or false");
    return v.get<bool>();
  }
  // srt's "~" is the home; the rest is as a flag has it (relative to the working directory).
  std::string path(const std::string& p) const {
    if (p[0] == '~' && place.home.empty()) throw Error(file + ": " + p + ": the user has no home directory");
    if (p == "~") return place.home;
    if (p.rfind("~/", 0) == 0) return place.home + p.substr(1);
    return p;
  }
  // What is there of `paths` (a pattern is matched at start): srt passes
  // over a missing one, where --hide and --rw would stop the start.
  std::vector<std::string> present(const std::vector<std::string>& paths) const {
    std::vector<std::string> out;
    for (const auto& p : paths)
      if (is_glob(p) || !place.exists || place.exists(ns::clean_path(p[0] == '/' ? p : place.cwd + "/" + p)))
        out.push_back(p);
    return out;
  }
  void add(const std::string& flag, const std::string& key, std::vector<std::string> values) {
    if (!values.empty()) out.push_back({flag, std::move(values), file + ": " + key});
  }
  void domains(const std::string& flag, const std::string& key, const json& v) {
    std::vector<std::string> names = strings(key, v);
    for (const auto& n : names) try {
        parse_allowed_host(n);
      } catch (const Error&) {
        throw error(key, n + ": not a host name or *.SUFFIX");
      }
    add(flag, key, names);
  }
  void only_default(const std::string& key, const json& v, const json& dflt, const std::string& why) const {
    if (v != dflt) throw error(key, why);
  }
};

void network(Srt& s, const json& net) {
  if (!net.is_object()) throw s.error("network", "must be a map");
  for (const auto& [k, v] : net.items()) {
    const std::string key = "network." + k;
    if (k == "allowedDomains") s.domains("allow-host", key, v);
    else if (k == "deniedDomains") s.domains("deny-host", key, v);
    else if (k == "allowUnixSockets")
      s.only_default(key, v, json::array(), "srt's macOS list; husk has none: a Unix socket is reached where its "
                                             "path is shown");
    else if (k == "allowAllUnixSockets")
      s.only_default(key, s.boolean(key, v), false, "husk has no switch that opens every Unix socket");
    else if (k == "allowLocalBinding") s.boolean(key, v);  // a bind is in the sandbox's own network namespace
    else if (k == "httpProxyPort" || k == "socksProxyPort")
      throw s.error(key, "husk runs its own proxy; an external one is not supported");
    else throw s.error(key, "not a key of srt's network settings");
  }
}

void filesystem(Srt& s, const json& fs) {
  if (!fs.is_object()) throw s.error("filesystem", "must be a map");
  // srt writes nowhere without it; husk always writes the working directory.
  if (!fs.contains("allowWrite"))
    throw s.error("filesystem.allowWrite", "missing: it must name the working directory");
  for (const auto& [k, v] : fs.items()) {
    const std::string key = "filesystem." + k;
    std::vector<std::string> paths;
    if (k == "denyRead" || k == "allowWrite" || k == "denyWrite" || k == "allowRead")
      for (const auto& p : s.strings(key, v)) paths.push_back(s.path(p));
    if (k == "denyRead") s.add("hide", key, s.present(paths));
    else if (k == "denyWrite") s.add("deny-write", key, paths);
    else if (k == "allowWrite") {
      std::vector<std::string> rw;
      bool cwd = false;
      for (const auto& p : paths) {
        const std::string clean = ns::clean_path(p[0] == '/' ? p : s.place.cwd + "/" + p);
        cwd |= base::is_within(s.place.cwd, clean);
        // The sandbox's own /tmp and /var/tmp are writable (private: the host's are not shown).
        if (clean != "/tmp" && clean != "/var/tmp") rw.push_back(p);
      }
      if (!cwd)
        throw s.error(key, "does not name the working directory " + s.place.cwd +
                               ", which husk sandbox always lets the command write");
      s.add("rw", key, s.present(rw));
    } else if (k == "allowRead") {
      if (!paths.empty()) throw s.error(key, "husk shows the host read-only: it has no allow-only read mode");
    } else if (k == "autoAllowSystemPaths") s.boolean(key, v);  // only with allowRead, refused above
    else if (k == "allowGitConfig") {
      if (s.boolean(key, v)) s.add("allow-write", key, {".git/config"});
    } else throw s.error(key, "not a key of srt's filesystem settings");
  }
}

using Top = std::function<void(Srt&, const std::string& key, const json& v)>;

const std::map<std::string, Top>& top_keys() {
  static const std::map<std::string, Top> keys = {
      {"network", [](Srt& s, const std::string&, const json& v) { network(s, v); }},
      {"filesystem", [](Srt& s, const std::string&, const json& v) { filesystem(s, v); }},
      {"ignoreViolations",
       [](Srt& s, const std::string& k, const json& v) {
         s.only_default(k, v, json::object(), "husk has no violation log to filter (refused hosts are said at exit)");
       }},
      // husk picks its mode without user namespaces by itself where it must, and says so.
      {"enableWeakerNestedSandbox", [](Srt& s, const std::string& k, const json& v) { s.boolean(k, v); }},
      {"enableWeakerNetworkIsolation",
       [](Srt& s, const std::string& k, const json& v) {
         s.only_default(k, s.boolean(k, v), false, "srt's macOS trust-service opening; nothing on Linux");
       }},
      {"allowPty",
       [](Srt& s, const std::string& k, const json& v) {
         s.only_default(k, s.boolean(k, v), false,
                        "srt's macOS pty switch; the command has your terminal as its stdio");
       }},
      {"ripgrep",
       [](Srt& s, const std::string& k, const json&) {
         throw s.error(k, "husk walks for protected files itself, without ripgrep");
       }},
      {"mandatoryDenySearchDepth",
       [](Srt& s, const std::string& k, const json&) {
         throw s.error(k, "husk's walk for protected files is fixed (2 levels, 1,024 names)");
       }},
  };
  return keys;
}

}  // namespace

bool is_srt_key(const std::string& key) { return top_keys().count(key) != 0; }

std::vector<SettingValue> srt_values(const json& doc, const std::string& file, const SettingsPlace& place) {
  Srt s{file, place, {}};
  if (!doc.contains("filesystem"))
    throw s.error("filesystem.allowWrite", "missing: it must name the working directory");
  for (const auto& [k, v] : doc.items()) {
    auto it = top_keys().find(k);
    if (it == top_keys().end()) throw s.error(k, "not a key of srt's settings (nor husk's, beside them)");
    it->second(s, k, v);
  }
  return std::move(s.out);
}

}  // namespace husk::rt
