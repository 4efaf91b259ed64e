// Settings files (settings.h): the document, husk's keys, narrowing.
#include "sandbox/settings.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <regex>
#include <set>

#include "base/error.h"
#include "base/path.h"
#include "container/args.h"
#include "namespaces/namespaces.h"

namespace husk::rt {

namespace {

using json = nlohmann::ordered_json;

// YAML aliases can make a small file a huge tree: the conversion stops.
constexpr size_t kMaxNodes = 100000;

json from_yaml(const YAML::Node& n, const std::string& file, size_t& nodes) {
  if (++nodes > kMaxNodes) throw Error(file + ": more than " + std::to_string(kMaxNodes) + " values");
  switch (n.Type()) {
    case YAML::NodeType::Map: {
      json out = json::object();
      for (const auto& kv : n) {
        if (!kv.first.IsScalar()) throw Error(file + ": a key that is not a name");
        if (out.contains(kv.first.Scalar())) throw Error(file + ": " + kv.first.Scalar() + ": given twice");
        out[kv.first.Scalar()] = from_yaml(kv.second, file, nodes);
      }
      return out;
    }
    case YAML::NodeType::Sequence: {
      json out = json::array();
      for (const auto& item : n) out.push_back(from_yaml(item, file, nodes));
      return out;
    }
    case YAML::NodeType::Scalar: {
      const std::string& s = n.Scalar();
      if (n.Tag() == "!") return s;  // quoted: a string as written
      static const std::regex kTrue("true|True|TRUE"), kFalse("false|False|FALSE"), kNull("~|null|Null|NULL"),
          kInt("[-+]?[0-9]+"), kFloat("[-+]?([0-9]+\\.[0-9]*|\\.[0-9]+|[0-9]+)([eE][-+]?[0-9]+)?");
      if (std::regex_match(s, kTrue)) return true;
      if (std::regex_match(s, kFalse)) return false;
      if (std::regex_match(s, kNull)) return nullptr;
      if (std::regex_match(s, kInt) && s.size() < 19) return std::stoll(s);
      if (std::regex_match(s, kFloat)) return std::stod(s);
      return s;
    }
    default: return nullptr;
  }
}

std::string type_of(const json& v) {
  return v.is_boolean() ? "a boolean" : v.is_number() ? "a number" : v.is_string() ? "a string"
         : v.is_array() ? "a list" : v.is_object() ? "a map" : "empty";
}

// A number as a flag would have it typed.
std::string number_text(const json& v) {
  if (v.is_number_integer() || v.is_number_unsigned()) return v.dump();
  const double d = v.get<double>();
  if (std::floor(d) == d && std::fabs(d) < 1e15) return std::to_string(static_cast<int64_t>(d));
  return v.dump();
}

// A path key's leading "~" is the home of the user the command runs as, as
// in srt's format (a flag's "~" the shell expands; a file has no shell).
const std::set<std::string> kPathKeys = {"rw", "ro", "hide", "deny-write", "allow-write", "keep-changes"};

std::string home_path(const std::string& p, const SettingKey& k, const SettingsPlace& place, const std::string& file) {
  if (!kPathKeys.count(k.name) || (p != "~" && p.rfind("~/", 0) != 0)) return p;
  if (place.home.empty()) throw Error(file + ": " + k.name + ": " + p + ": the user has no home directory");
  return place.home + p.substr(1);
}

SettingValue husk_value(const SettingKey& k, const json& v, const std::string& file, const SettingsPlace& place) {
  SettingValue out{k.name, {}, file + ": " + k.name};
  const std::string where = file + ": " + k.name + ": ";
  switch (k.kind) {
    case SettingKey::flag:
      if (!v.is_boolean()) throw Error(where + "must be true or false, not " + type_of(v));
      out.values.push_back(v.get<bool>() ? "true" : "false");
      break;
    case SettingKey::text:
      if (v.is_string()) out.values.push_back(home_path(v.get<std::string>(), k, place, file));
      else if (v.is_number()) out.values.push_back(number_text(v));
      else throw Error(where + "must be a string, not " + type_of(v));
      break;
    case SettingKey::list:
      if (!v.is_array()) throw Error(where + "must be a list of strings, not " + type_of(v));
      for (const auto& item : v) {
        if (!item.is_string()) throw Error(where + "must be a list of strings, an item is " + type_of(item));
        out.values.push_back(home_path(item.get<std::string>(), k, place, file));
      }
      break;
  }
  return out;
}

}  // namespace

json settings_document(const std::string& text, const std::string& file) {
  const bool is_json = file.size() >= 5 && file.compare(file.size() - 5, 5, ".json") == 0;
  json doc;
  if (is_json) {
    // A key given twice is an error, not the last one silently.
    std::vector<std::set<std::string>> seen;
    std::string twice;
    auto keys = [&](int, json::parse_event_t event, json& parsed) {
      if (event == json::parse_event_t::object_start) seen.emplace_back();
      else if (event == json::parse_event_t::object_end) seen.pop_back();
      else if (event == json::parse_event_t::key && !seen.back().insert(parsed.get<std::string>()).second)
        twice = parsed.get<std::string>();
      return true;
    };
    try {
      doc = json::parse(text, keys);
    } catch (const json::parse_error& e) {
      throw Error(file + ": not valid JSON (at byte " + std::to_string(e.byte) + ")");
    }
    if (!twice.empty()) throw Error(file + ": " + twice + ": given twice");
  } else {
    try {
      size_t nodes = 0;
      doc = from_yaml(YAML::Load(text), file, nodes);
    } catch (const YAML::Exception& e) {
      throw Error(file + ": not valid YAML (line " + std::to_string(e.mark.line + 1) + ": " + e.msg + ")");
    }
  }
  if (doc.is_null()) return json::object();  // an empty file
  if (!doc.is_object()) throw Error(file + ": must be a map of keys, not " + type_of(doc));
  return doc;
}

std::vector<SettingValue> settings_values(const json& doc, const std::string& file,
                                          const std::vector<SettingKey>& keys, const SettingsPlace& place) {
  for (const auto& [key, value] : doc.items())
    if (is_srt_key(key)) return srt_values(doc, file, place);
  std::vector<SettingValue> out;
  for (const auto& item : doc.items()) {
    const std::string& key = item.key();
    auto k = std::find_if(keys.begin(), keys.end(), [&](const SettingKey& s) { return s.name == key; });
    if (k == keys.end()) throw Error(file + ": unknown key " + key + " (husk sandbox has no --" + key + ")");
    out.push_back(husk_value(*k, item.value(), file, place));
  }
  return out;
}

namespace {

// A limit as it is applied (the flags' own checks judge its form), for
// comparing two of them: a value that reads smaller but is applied as none
// (a quota rounded to 0) must not pass as narrower.
double limit_size(const std::string& key, const std::string& v) {
  if (key == "memory") return static_cast<double>(parse_bytes("--memory", v));
  if (key == "cpus") return static_cast<double>(cpus_quota(v));
  if (key == "pids") {
    const uint64_t n = parse_decimal(v, 1u << 22, "--pids");
    if (n == 0) throw Error("--pids 0: must be a positive number");
    return static_cast<double>(n);
  }
  char* end = nullptr;
  const double d = std::strtod(v.c_str(), &end);
  if (v.empty() || *end || !(d > 0)) throw Error("--" + key + " " + v + ": must be a positive number");
  return d;
}

bool has(const std::vector<std::string>& list, const std::string& v) {
  return std::find(list.begin(), list.end(), v) != list.end();
}

}  // namespace

int64_t cpus_quota(const std::string& cpus) {
  char* end = nullptr;
  const double d = std::strtod(cpus.c_str(), &end);
  if (end == cpus.c_str() || *end || !(d > 0) || d > 1e6)
    throw Error("--cpus " + cpus + ": must be a positive number of CPUs");
  const int64_t quota = std::llround(d * kCpuPeriod);
  // Below the kernel's least quota (1 ms) a cgroup refuses it, and 0 would be written as no limit.
  if (quota < 1000) throw Error("--cpus " + cpus + ": below 0.01 CPU, the least quota the kernel takes (1 ms in 100)");
  return quota;
}

Narrowed narrow(const SettingValue& v, const std::optional<std::vector<std::string>>& current,
                const std::string& cwd) {
  const std::string& k = v.key;
  const std::vector<std::string> now = current.value_or(std::vector<std::string>{});
  auto widens = [&](const std::string& why) { return Error(v.origin + ": a project file may only narrow: " + why); };
  if (k == "hide" || k == "deny-host" || k == "deny-write") return {v.values, false};
  if (k == "allow-host") {
    for (const auto& h : v.values)
      if (!has(now, h)) throw widens("allow-host " + h + " is not allowed already");
    return {v.values, true};
  }
  if (k == "rw" || k == "allow-write") {
    // Only what is writable already: the working directory, or a path given as it is.
    for (const auto& p : v.values)
      if (!has(now, p) && !(k == "rw" && ns::clean_path(p[0] == '/' ? p : cwd + "/" + p) == cwd))
        throw widens(k + " " + p + " is not given already");
    return {{}, false};
  }
  if (k == "net") {
    if (v.values[0] != "none") throw widens("net " + v.values[0] + " (only none)");
    return {v.values, true};
  }
  if (k == "allow-host-loopback" || k == "allow-host-private") {
    if (v.values[0] != "false") throw widens(k + " true");
    return {v.values, true};
  }
  if (k == "memory" || k == "pids" || k == "cpus" || k == "timeout") {
    if (current && limit_size(k, v.values[0]) > limit_size(k, now[0]))
      throw widens(k + " " + v.values[0] + " is above the " + now[0] + " in force");
    return {v.values, true};
  }
  throw widens(k + " is not a key that narrows");
}

}  // namespace husk::rt
