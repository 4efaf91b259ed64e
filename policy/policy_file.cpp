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

void parse_allow(const YAML::Node& allow, Policy& p) {
  if (!allow.IsMap()) throw Error("allow: expected a map (capabilities, mountSources, sysctls)");
  for (const auto& kv : allow) {
    const std::string key = kv.first.as<std::string>();
    const std::string field = "allow." + key;
    if (key == "capabilities") {
      for (const auto& cap : string_list(kv.second, field)) {
        if (spec::capability_number(cap) < 0) throw Error(field + ": unknown capability \"" + cap + "\"");
        p.allowed_capabilities.push_back(cap);
      }
    } else if (key == "mountSources") {
      for (const auto& dir : string_list(kv.second, field)) {
        if (dir.empty() || dir[0] != '/') throw Error(field + ": \"" + dir + "\" is not an absolute path");
        p.allowed_mount_sources.push_back(dir);
      }
    } else if (key == "sysctls") {
      auto list = string_list(kv.second, field);
      p.allowed_sysctls.insert(p.allowed_sysctls.end(), list.begin(), list.end());
    } else {
      throw Error(field + ": unknown key (capabilities, mountSources, sysctls)");
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
  for (const auto& kv : node) {
    const std::string key = kv.first.as<std::string>();
    out[key] = scalar(kv.second, field + "." + key);
  }
  return out;
}

// "/a//b/" -> "/a/b" (a --root is compared as written, without resolving it).
std::string trim_path(const std::string& path) {
  std::string out;
  for (char c : path)
    if (!(c == '/' && !out.empty() && out.back() == '/')) out += c;
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

}  // namespace

OperatorConfig parse_operator_config(const std::string& text, const std::string& shown) {
  try {
    YAML::Node root = YAML::Load(text);
    OperatorConfig c;
    if (root.IsNull()) return c;
    if (!root.IsMap()) throw Error("expected a map (policy, roots, binaries)");
    for (const auto& kv : root) {
      const std::string key = kv.first.as<std::string>();
      if (key == "policy") {
        c.policy = scalar(kv.second, key);
      } else if (key == "roots") {
        for (const auto& [dir, policy] : policy_map(kv.second, key)) {
          if (dir.empty() || dir[0] != '/') throw Error("roots." + dir + ": not an absolute path");
          c.roots[trim_path(dir)] = policy;
        }
      } else if (key == "binaries") {
        c.binaries = policy_map(kv.second, key);
      } else {
        throw Error(key + ": unknown key (policy, roots, binaries)");
      }
    }
    return c;
  } catch (const YAML::Exception& e) {
    throw Error(shown + ": line " + std::to_string(e.mark.line + 1) + ": " + e.msg);
  } catch (const Error& e) {
    rethrow_with(shown, e);
  }
}

std::string select_policy(const OperatorConfig& config, const std::string& root, const std::string& binary_name) {
  if (auto it = config.roots.find(trim_path(root)); it != config.roots.end()) return it->second;
  if (auto it = config.binaries.find(binary_name); it != config.binaries.end()) return it->second;
  return config.policy;
}

Policy parse_policy_yaml(const std::string& text, const std::string& shown) {
  try {
    YAML::Node root = YAML::Load(text);
    if (!root.IsMap()) throw Error("expected a map (level, rules, allow)");
    Policy p;
    p.name = shown;
    if (root["level"]) {
      if (!root["level"].IsScalar()) throw Error("level: expected baseline or restricted");
      p = builtin(root["level"].as<std::string>());
      p.name = shown;
    }
    for (const auto& kv : root) {
      const std::string key = kv.first.as<std::string>();
      if (key == "level") continue;
      if (key == "allow") {
        parse_allow(kv.second, p);
      } else if (key == "rules") {
        if (!kv.second.IsMap()) throw Error("rules: expected a map of rule: error|warn|off");
        for (const auto& rule : kv.second) {
          const std::string id = rule.first.as<std::string>();
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
  } catch (const YAML::Exception& e) {
    throw Error(shown + ": line " + std::to_string(e.mark.line + 1) + ": " + e.msg);
  } catch (const Error& e) {
    rethrow_with(shown, e);
  }
}

Policy load_policy(const std::string& arg) {
  if (arg == "baseline" || arg == "restricted") return builtin(arg);
  return parse_policy_yaml(spec::read_json_file(arg), arg);
}

}  // namespace husk::policy
