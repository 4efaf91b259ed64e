// Settings files of `husk sandbox` turned into its flags: the keys and their
// types are the flags' own (sandbox_flags), the values are stored as the
// command line's are, so the same code judges both.
#include "cli/sandbox_settings.h"

#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <optional>
#include <utility>

#include "base/error.h"
#include "sandbox/settings.h"

namespace husk::rt {

namespace po = boost::program_options;

namespace {

// Flags about the settings themselves and a session's verbs: no key of a file.
bool is_meta(const std::string& name) {
  return name == "settings" || name == "project-settings" || name == "print-settings" || name == "session" ||
         name == "start" || name == "stop" || name == "status" || name == "no-user-settings";
}

std::vector<SettingKey> setting_keys(const po::options_description& d) {
  std::vector<SettingKey> keys;
  for (const auto& o : d.options()) {
    if (is_meta(o->long_name())) continue;
    const auto& s = *o->semantic();
    keys.push_back({o->long_name(), s.max_tokens() == 0 ? SettingKey::flag
                                    : s.is_composing()  ? SettingKey::list
                                                        : SettingKey::text});
  }
  return keys;
}

// A key's values as strings ("true"/"false" for a switch), nullopt when absent.
std::optional<std::vector<std::string>> current(const po::variables_map& vm, const SettingKey& k) {
  if (!vm.count(k.name)) return std::nullopt;
  const po::variable_value& v = vm[k.name];
  switch (k.kind) {
    case SettingKey::flag: return std::vector<std::string>{v.as<bool>() ? "true" : "false"};
    case SettingKey::text: return std::vector<std::string>{v.as<std::string>()};
    case SettingKey::list: return v.as<std::vector<std::string>>();
  }
  return std::nullopt;
}

void put(po::variables_map& vm, const SettingKey& k, const std::vector<std::string>& values) {
  boost::any any;
  if (k.kind == SettingKey::flag) any = values.at(0) == "true";
  else if (k.kind == SettingKey::text) any = values.at(0);
  else any = values;
  vm.erase(k.name);
  vm.insert({k.name, po::variable_value(any, false)});
}

struct Merge {
  po::variables_map& vm;
  const po::options_description& d;
  std::vector<SettingKey> keys;
  SettingsUser user;
  // Each key's values in force and where each came from, for --print-settings.
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> origins;

  const SettingKey& key(const std::string& name) const {
    return *std::find_if(keys.begin(), keys.end(), [&](const SettingKey& k) { return k.name == name; });
  }
  std::vector<SettingValue> read(const std::string& path, const SettingsUser* as, bool untrusted, bool missing_ok) {
    std::optional<std::string> text = read_settings_file(path, as, untrusted, missing_ok);
    if (!text) return {};
    return settings_values(settings_document(*text, path), path, keys, user.place);
  }
  // A list's items not in it already: two layers may give the same --rw.
  std::vector<std::string> news(const SettingKey& k, const std::vector<std::string>& values) const {
    if (k.kind != SettingKey::list) return values;
    std::vector<std::string> out, now = current(vm, k).value_or(std::vector<std::string>{});
    for (const auto& v : values)
      if (std::find(now.begin(), now.end(), v) == now.end() && std::find(out.begin(), out.end(), v) == out.end())
        out.push_back(v);
    return out;
  }
  // Stored as the command line's values are: a scalar set before stays.
  void store(const std::vector<SettingValue>& layer) {
    for (const auto& v : layer) {
      const SettingKey& k = key(v.key);
      const bool kept = vm.count(v.key) && !vm[v.key].defaulted() && k.kind != SettingKey::list;
      const std::vector<std::string> values = news(k, v.values);
      if (values.empty()) continue;
      po::parsed_options p(&d);
      p.options.emplace_back(v.key, values);
      try {
        po::store(p, vm);
      } catch (const po::error& e) {
        throw Error(v.origin + ": " + e.what());
      }
      if (!kept)
        for (const auto& value : values) origins[v.key].push_back({value, v.origin});
    }
  }
  void narrow_by(const std::vector<SettingValue>& layer) {
    for (const auto& v : layer) {
      const SettingKey& k = key(v.key);
      Narrowed n = narrow(v, current(vm, k), user.place.cwd);
      if (!n.replaces) n.values = news(k, n.values);
      if (n.values.empty()) continue;
      std::vector<std::string> values = n.values;
      auto& o = origins[v.key];
      if (n.replaces) o.clear();
      else if (auto now = current(vm, k)) values.insert(values.begin(), now->begin(), now->end());
      for (const auto& value : n.values) o.push_back({value, v.origin + " (project)"});
      put(vm, k, values);
    }
  }
  void print() const {
    for (const auto& k : keys) {
      auto it = origins.find(k.name);
      if (it != origins.end() && !it->second.empty()) {
        for (const auto& [value, from] : it->second) std::cout << k.name << ": " << value << "\t(" << from << ")\n";
      } else if (auto now = current(vm, k)) {
        for (const auto& value : *now) std::cout << k.name << ": " << value << "\t(default)\n";
      }
    }
  }
};

}  // namespace

namespace {

// The `user` a document names, as the flag's text whatever its type (a
// YAML `user: 0` is a number), nullopt when it names none.
std::optional<std::string> user_in(const nlohmann::ordered_json& doc, const std::string& file,
                                   const std::vector<SettingKey>& keys) {
  if (!doc.contains("user")) return std::nullopt;
  nlohmann::ordered_json only = {{"user", doc["user"]}};
  return settings_values(only, file, keys, {}).at(0).values.at(0);
}

}  // namespace

bool apply_sandbox_settings(po::variables_map& vm, const po::options_description& d) {
  Merge m{vm, d, setting_keys(d), {}, {}};
  for (const auto& k : m.keys)
    if (vm.count(k.name) && !vm[k.name].defaulted()) {
      const std::vector<std::string> given = current(vm, k).value();
      for (const auto& value : given) m.origins[k.name].push_back({value, "--" + k.name});
    }
  auto list = [&](const char* n) {
    return vm.count(n) ? vm[n].as<std::vector<std::string>>() : std::vector<std::string>{};
  };
  using Doc = std::pair<std::string, nlohmann::ordered_json>;
  // The files the caller trusts, read as the caller: those it names, and
  // its own default file (root's own as root: never another user's, which
  // the user or the user's sandbox could have written).
  std::vector<Doc> named, dflt;
  for (const auto& path : list("settings"))
    named.emplace_back(path, settings_document(*read_settings_file(path, nullptr, false, false), path));
  const std::string dir = default_settings_dir();
  if (!dir.empty() && !(vm.count("no-user-settings") && vm["no-user-settings"].as<bool>()))
    for (const char* name : {"/sandbox.yaml", "/sandbox.json"})
      if (auto text = read_settings_file(dir + name, nullptr, false, true))
        dflt.emplace_back(dir + name, settings_document(*text, dir + name));
  if (dflt.size() > 1) throw Error(dflt[0].first + " and " + dflt[1].first + ": both there; keep one");
  // The user is settled once, from these alone, before anything is read on
  // the user's behalf: the command line, else the last named file, else root's own default file.
  std::optional<std::string> user = vm.count("user") ? std::optional(vm["user"].as<std::string>()) : std::nullopt;
  for (auto it = named.rbegin(); !user && it != named.rend(); ++it) user = user_in(it->second, it->first, m.keys);
  for (const auto& [path, doc] : dflt)
    if (auto u = user_in(doc, path, m.keys)) {
      if (::geteuid() != 0) throw Error(path + ": user: the user's own file cannot choose the user");
      if (!user) user = u;
    }
  m.user = settings_user(user.value_or(""));
  // Later wins for a scalar: the last named file is stored first.
  for (auto it = named.rbegin(); it != named.rend(); ++it)
    m.store(settings_values(it->second, it->first, m.keys, m.user.place));
  for (const auto& [path, doc] : dflt) m.store(settings_values(doc, path, m.keys, m.user.place));
  // Written by the code the sandbox is for: read as the user, as itself; it only narrows.
  for (const auto& path : list("project-settings")) m.narrow_by(m.read(path, &m.user, true, false));
  if (!vm.count("print-settings") || !vm["print-settings"].as<bool>()) return false;
  m.print();
  return true;
}

}  // namespace husk::rt
