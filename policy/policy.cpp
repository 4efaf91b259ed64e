// Severities, the verdict and the table a list of findings is shown as.
#include <algorithm>

#include "policy/policy.h"

namespace husk::policy {

Severity parse_severity(const std::string& text, const std::string& field) {
  if (text == "error") return Severity::error;
  if (text == "warn") return Severity::warn;
  if (text == "off") return Severity::off;
  throw Error(field + ": \"" + text + "\" is not a severity (error, warn or off)");
}

const char* severity_name(Severity s) {
  switch (s) {
    case Severity::error: return "error";
    case Severity::warn: return "warn";
    case Severity::off: break;
  }
  return "off";
}

bool violated(const std::vector<Finding>& findings) {
  return std::any_of(findings.begin(), findings.end(), [](const Finding& f) { return f.severity == Severity::error; });
}

std::string findings_table(const std::vector<Finding>& findings) {
  std::vector<std::vector<std::string>> rows = {{"SEVERITY", "RULE", "FIELD", "VALUE", "WHY"}};
  for (const auto& f : findings) rows.push_back({severity_name(f.severity), f.rule, f.field, f.value, f.why});
  std::vector<size_t> width(5, 0);
  for (const auto& r : rows)
    for (size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
  std::string out;
  for (const auto& r : rows) {
    std::string line;
    for (size_t i = 0; i < r.size(); ++i) line += i + 1 < r.size() ? r[i] + std::string(width[i] - r[i].size() + 2, ' ') : r[i];
    out += line + "\n";
  }
  return out;
}

}  // namespace husk::policy
