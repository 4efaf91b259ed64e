#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <set>

#include "runner.h"

namespace conformance {

using husk_test::trim;

std::string one_line(std::string s, size_t max) {
  s = trim(s);
  std::replace(s.begin(), s.end(), '\n', ' ');
  if (s.size() > max) s = s.substr(0, max) + "...";
  return s;
}

std::string as_text(const json& j) {
  if (j.is_string()) return j.get<std::string>();
  return j.dump();
}

std::vector<std::string> string_list(const json& j) {
  std::vector<std::string> out;
  if (j.is_null()) return out;
  if (j.is_array()) {
    for (auto& e : j) out.push_back(as_text(e));
  } else {
    out.push_back(as_text(j));
  }
  return out;
}

namespace {

// YAML node -> JSON. Plain scalars are typed (null/bool/int/float),
// quoted scalars stay strings.
json yaml_to_json(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return nullptr;
    case YAML::NodeType::Sequence: {
      json a = json::array();
      for (const auto& e : n) a.push_back(yaml_to_json(e));
      return a;
    }
    case YAML::NodeType::Map: {
      json o = json::object();
      for (const auto& kv : n) o[kv.first.as<std::string>()] = yaml_to_json(kv.second);
      return o;
    }
    case YAML::NodeType::Scalar:
      break;
  }
  const std::string s = n.Scalar();
  if (n.Tag() == "!") return s;  // quoted: always a string
  if (s == "~" || s == "null") return nullptr;
  if (s == "true") return true;
  if (s == "false") return false;
  if (!s.empty()) {
    char* end = nullptr;
    errno = 0;
    if (s[0] == '-') {
      long long v = std::strtoll(s.c_str(), &end, 10);
      if (*end == '\0' && errno == 0) return v;
    } else if (s.size() > 2 && s[0] == '0' && s[1] == 'o') {
      unsigned long long v = std::strtoull(s.c_str() + 2, &end, 8);  // YAML 1.2 octal
      if (*end == '\0' && errno == 0) return v;
    } else if (s.size() > 1 && s[0] == '0' && std::isdigit(static_cast<unsigned char>(s[1]))) {
      unsigned long long v = std::strtoull(s.c_str(), &end, 8);  // YAML 1.1 octal (file modes)
      if (*end == '\0' && errno == 0) return v;
    } else if (std::isdigit(static_cast<unsigned char>(s[0]))) {
      unsigned long long v = std::strtoull(s.c_str(), &end, 10);
      if (*end == '\0' && errno == 0) return v;
    }
    errno = 0;
    double d = std::strtod(s.c_str(), &end);
    if (*end == '\0' && errno == 0 && (std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '-'))
      return d;
  }
  return s;
}

}  // namespace

std::vector<Case> load_cases(const Options& opt) {
  std::vector<fs::path> files;
  if (!fs::is_directory(opt.cases_dir)) throw SuiteError("no cases directory " + opt.cases_dir.string());
  for (auto& e : fs::directory_iterator(opt.cases_dir))
    if (e.path().extension() == ".yaml") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::vector<Case> out;
  for (auto& f : files) {
    Case c;
    c.file = f;
    c.name = f.stem().string();
    if (!opt.filters.empty() &&
        std::none_of(opt.filters.begin(), opt.filters.end(), [&](auto& s) { return c.name.find(s) != std::string::npos; }))
      continue;
    try {
      c.doc = yaml_to_json(YAML::LoadFile(f.string()));
    } catch (const YAML::Exception& e) {
      throw SuiteError(f.string() + ": " + e.what());
    }
    if (!c.doc.is_object()) throw SuiteError(f.string() + ": not a mapping");
    for (auto key : {"requirement", "section", "level", "steps"})
      if (!c.doc.contains(key)) throw SuiteError(f.string() + ": missing '" + key + "'");
    static const std::set<std::string> known = {"requirement", "section", "level", "requires", "command", "config",
                                                "append", "remove", "raw_config", "files", "steps", "description",
                                                "cleanup_host"};
    for (auto& [k, v] : c.doc.items())
      if (!known.count(k)) throw SuiteError(f.string() + ": unknown key '" + k + "'");
    if (!c.doc["steps"].is_array() || c.doc["steps"].empty()) throw SuiteError(f.string() + ": steps must be a non-empty list");
    static const std::set<std::string> step_keys = {"do", "expect", "id", "args", "force", "status", "timeout_ms",
                                                    "or_gone", "comm", "config", "ms", "file", "field", "exists",
                                                    "not_exists", "ns", "ref", "cgroup", "absent", "cgroup_of_pid",
                                                    "host"};
    static const std::set<std::string> expect_keys = {"exit", "stdout", "stdout_contains", "stdout_not_contains",
                                                      "stdout_matches", "stderr_contains", "output_contains",
                                                      "json", "status"};
    // A misspelt key would silently check nothing: refuse it.
    for (auto& step : c.doc["steps"]) {
      if (step.is_string()) continue;
      if (!step.is_object() || !step.contains("do")) throw SuiteError(f.string() + ": a step needs 'do'");
      for (auto& [k, v] : step.items())
        if (!step_keys.count(k)) throw SuiteError(f.string() + ": unknown step key '" + k + "'");
      if (step.contains("expect"))
        for (auto& [k, v] : step["expect"].items())
          if (!expect_keys.count(k)) throw SuiteError(f.string() + ": unknown expect key '" + k + "'");
    }
    c.requirement = as_text(c.doc["requirement"]);
    c.section = as_text(c.doc["section"]);
    c.level = as_text(c.doc["level"]);
    if (c.level != "MUST" && c.level != "SHOULD") throw SuiteError(f.string() + ": level must be MUST or SHOULD");
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace conformance
