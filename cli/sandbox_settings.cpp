// Settings files of `husk sandbox` turned into its flags: the keys and their
// types are the flags' own (sandbox_flags), the values are stored as the
// command line's are, so the same code judges both.
#include "cli/sandbox_settings.h"

#include <algorithm>
#include <iostream>
#include <map>
#include <utility>

#include "base/error.h"
#include "sandbox/settings.h"

namespace husk::rt {

namespace po = boost::program_options;

namespace {

// Flags about the settings themselves and a session's verbs: no key of a file.
bool is_meta(const std::string& name) {
  return name == "settings" || name == "project-settings" || name == "print-settings" || name == "session" ||
         name == "start" || name == "stop" || name == "status";
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
  // The named files, as the caller: it named them. One may name the user
  // (root's harness), whose default file and home then apply.
  std::vector<std::pair<std::string, nlohmann::ordered_json>> named;
  std::string user_flag = vm.count("user") ? vm["user"].as<std::string>() : "";
  for (const auto& path : list("settings")) {
    named.emplace_back(path, settings_document(*read_settings_file(path, nullptr, false, false), path));
    if (!vm.count("user") && named.back().second.contains("user") && named.back().second["user"].is_string())
      user_flag = named.back().second["user"];
  }
  m.user = settings_user(user_flag);
  std::vector<SettingValue> dflt;
  if (!m.user.config_dir.empty()) {
    const std::string yaml = m.user.config_dir + "/sandbox.yaml", json = m.user.config_dir + "/sandbox.json";
    dflt = m.read(yaml, &m.user, false, true);
    std::vector<SettingValue> from_json = m.read(json, &m.user, false, true);
    if (!dflt.empty() && !from_json.empty()) throw Error(yaml + " and " + json + ": both there; keep one");
    if (dflt.empty()) dflt = std::move(from_json);
    for (const auto& v : dflt)
      if (v.key == "user") throw Error(v.origin + ": the user's own file cannot choose the user");
  }
  // Later wins for a scalar: the last named file is stored first.
  for (auto it = named.rbegin(); it != named.rend(); ++it)
    m.store(settings_values(it->second, it->first, m.keys, m.user.place));
  m.store(dflt);
  // Written by the code the sandbox is for: read as the user, as itself.
  for (const auto& path : list("project-settings")) m.narrow_by(m.read(path, &m.user, true, false));
  if (!vm.count("print-settings") || !vm["print-settings"].as<bool>()) return false;
  m.print();
  return true;
}

}  // namespace husk::rt
