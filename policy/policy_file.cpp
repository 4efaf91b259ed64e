// YAML policy files (yaml-cpp): a built-in level to start from, rule
// severities and allow lists.
#include <yaml-cpp/yaml.h>

#include <algorithm>

#include "policy/policy.h"

namespace husk::policy {
namespace {

std::vector<std::string> string_list(const YAML::Node& node, const std::string& field) {
  if (!node.IsSequence()) throw Error(field + ": expected a list of strings");
  std::vector<std::string> out;
  for (size_t i = 0; i < node.size(); ++i) {
    if (!node[i].IsScalar()) throw Error(field + "[" + std::to_string(i) + "]: expected a string");
    out.push_back(node[i].as<std::string>());
  }
  return out;
}

// The keys of a map, each once: YAML lets a repeated key through, and which
// of the two a reader takes is a guess no policy may depend on.
std::vector<std::pair<std::string, YAML::Node>> entries(const YAML::Node& map, const std::string& where) {
  std::vector<std::pair<std::string, YAML::Node>> out;
  for (const auto& kv : map) {
    if (!kv.first.IsScalar()) throw Error(where + ": a key that is not a name");
    std::string key = kv.first.as<std::string>();
    for (const auto& seen : out)
      if (seen.first == key) throw Error((where.empty() ? "" : where + ".") + key + ": given twice");
    out.emplace_back(key, kv.second);
  }
  return out;
}

// An absolute path without "..", ".", "//" or a trailing "/": compared as
// written, so it must mean what it says.
std::string clean_absolute(const std::string& path, const std::string& field) {
  if (path.empty() || plain_path(path) != path) throw Error(field + ": \"" + path + "\" is not a clean absolute path");
  return path;
}

void parse_allow(const YAML::Node& allow, Policy& p) {
  if (!allow.IsMap()) throw Error("allow: expected a map (capabilities, mountSources, sysctls, hooks, devices)");
  for (const auto& kv : entries(allow, "allow")) {
    const std::string key = kv.first;
    const std::string field = "allow." + key;
    if (key == "capabilities") {
      for (const auto& cap : string_list(kv.second, field)) {
        if (spec::capability_number(cap) < 0) throw Error(field + ": unknown capability \"" + cap + "\"");
        p.allowed_capabilities.push_back(cap);
      }
    } else if (key == "mountSources") {
      for (const auto& dir : string_list(kv.second, field)) p.allowed_mount_sources.push_back(clean_absolute(dir, field));
    } else if (key == "hooks") {
      for (const auto& path : string_list(kv.second, field)) p.allowed_hooks.push_back(clean_absolute(path, field));
    } else if (key == "sysctls") {
      auto list = string_list(kv.second, field);
      p.allowed_sysctls.insert(p.allowed_sysctls.end(), list.begin(), list.end());
    } else if (key == "devices") {
      for (const auto& d : string_list(kv.second, field)) p.allowed_devices.push_back(parse_device_class(d, field));
    } else {
      throw Error(field + ": unknown key (capabilities, mountSources, sysctls, hooks, devices)");
    }
  }
}

std::string scalar(const YAML::Node& node, const std::string& field) {
  if (!node.IsScalar() || node.as<std::string>().empty()) throw Error(field + ": expected a policy (baseline, restricted or a file)");
  std::string value = node.as<std::string>();
  // A file is named absolutely: husk runs in whatever directory its caller chose.
  if (value != "baseline" && value != "restricted" && value[0] != '/')
    throw Error(field + ": \"" + value + "\" is neither baseline, restricted nor an absolute path");
  return value;
}

std::map<std::string, std::string> policy_map(const YAML::Node& node, const std::string& field) {
  if (!node.IsMap()) throw Error(field + ": expected a map of name: policy");
  std::map<std::string, std::string> out;
  for (const auto& [key, value] : entries(node, field)) out[key] = scalar(value, field + "." + key);
  return out;
}

// `parse()`, its errors naming the file `shown` (and the line, for YAML's).
template <class Parse>
auto naming_file(const std::string& shown, Parse parse) -> decltype(parse()) {
  try {
    return parse();
  } catch (const YAML::Exception& e) {
    throw Error(shown + ": line " + std::to_string(e.mark.line + 1) + ": " + e.msg);
  } catch (const Error& e) {
    rethrow_with(shown, e);
  }
}

// A major or minor: "*" or a decimal number the kernel can hold (32 bits).
int64_t device_number(const std::string& text) {
  if (text == "*") return -1;
  if (text.empty() || text.size() > 10 || text.find_first_not_of("0123456789") != std::string::npos) return -2;
  const int64_t n = std::stoll(text);
  return n <= 0xffffffffLL ? n : -2;
}

}  // namespace

DeviceClass parse_device_class(const std::string& text, const std::string& field) {
  // Exactly "T MAJOR:MINOR", one space: an access ("rwm") or anything else
  // would look like it restricts something it does not.
  const size_t colon = text.find(':');
  DeviceClass d;
  if (text.size() >= 5 && (text[0] == 'c' || text[0] == 'b') && text[1] == ' ' && colon != std::string::npos) {
    d.type = text[0];
    d.major = device_number(text.substr(2, colon - 2));
    d.minor = device_number(text.substr(colon + 1));
    if (d.major >= -1 && d.minor >= -1) return d;
  }
  throw Error(field + ": \"" + text + "\" is not a device class (\"c 10:229\", \"c 195:*\", \"b 8:*\")");
}

OperatorConfig parse_operator_config(const std::string& text, const std::string& shown) {
  return naming_file(shown, [&] {
    YAML::Node root = YAML::Load(text);
    OperatorConfig c;
    if (!root.IsMap()) throw Error("expected a map (policy, roots, binaries)");
    const auto keys = entries(root, "");
    if (keys.empty()) throw Error("no policy, roots or binaries: an operator's config must say which policy applies");
    for (const auto& kv : keys) {
      const std::string key = kv.first;
      if (key == "policy") {
        c.policy = scalar(kv.second, key);
      } else if (key == "roots") {
        for (const auto& [dir, policy] : policy_map(kv.second, key)) {
          // A --root is compared as written, not resolved.
          if (plain_path(dir).empty()) throw Error("roots." + dir + ": not an absolute path");
          c.roots[plain_path(dir)] = policy;
        }
      } else if (key == "binaries") {
        c.binaries = policy_map(kv.second, key);
      } else {
        throw Error(key + ": unknown key (policy, roots, binaries)");
      }
    }
    return c;
  });
}

std::string select_policy(const OperatorConfig& config, const std::string& root, const std::string& binary_name) {
  if (auto it = config.roots.find(plain_path(root)); it != config.roots.end()) return it->second;
  if (auto it = config.binaries.find(binary_name); it != config.binaries.end()) return it->second;
  return config.policy;
}

Policy parse_policy_yaml(const std::string& text, const std::string& shown) {
  return naming_file(shown, [&] {
    YAML::Node root = YAML::Load(text);
    if (!root.IsMap()) throw Error("expected a map (level, rules, allow)");
    const auto keys = entries(root, "");
    // Required: a file without it would start from no rule at all.
    if (!root["level"] || !root["level"].IsScalar()) throw Error("level: required, baseline or restricted");
    Policy p = builtin(root["level"].as<std::string>());
    p.name = shown;
    for (const auto& kv : keys) {
      const std::string key = kv.first;
      if (key == "level") continue;
      if (key == "allow") {
        parse_allow(kv.second, p);
      } else if (key == "rules") {
        if (!kv.second.IsMap()) throw Error("rules: expected a map of rule: error|warn|off");
        for (const auto& rule : entries(kv.second, "rules")) {
          const std::string id = rule.first;
          const std::string field = "rules." + id;
          if (std::find(rule_ids().begin(), rule_ids().end(), id) == rule_ids().end())
            throw Error(field + ": unknown rule");
          if (!rule.second.IsScalar()) throw Error(field + ": expected error, warn or off");
          p.rules[id] = parse_severity(rule.second.as<std::string>(), field);
        }
      } else {
        throw Error(key + ": unknown key (level, rules, allow)");
      }
    }
    return p;
  });
}

Policy load_policy(const std::string& arg) {
  if (arg == "baseline" || arg == "restricted") return builtin(arg);
  std::string text;
  try {
    text = spec::read_json_file(arg);
  } catch (const Error& e) {
    // A bare word that is no file was most likely meant as a level ("strict").
    if (e.err() == ENOENT && arg.find('/') == std::string::npos)
      throw Error("--policy: " + quote(arg) + " is neither baseline, restricted nor a file (" + e.what() + ")", ENOENT);
    throw;
  }
  return parse_policy_yaml(text, arg);
}

}  // namespace husk::policy
