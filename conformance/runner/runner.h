// What the parts of husk-conformance share: the case, its outcome, the
// options and the errors that stop a step, a case or the suite.
#pragma once

#include <nlohmann/json.hpp>

#include <csignal>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "support.h"  // tests/support: running programs, files, waiting, bundles

namespace conformance {

namespace fs = std::filesystem;
using json = nlohmann::json;

// A problem with the suite itself (bad case file, unusable host), as opposed
// to a runtime failing a case.
struct SuiteError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct CaseSkip {
  std::string reason;
};

// The runtime misbehaved in a way a step cannot continue from (e.g. `state`
// failing while a {pid} placeholder is resolved): the case fails.
struct StepFail {
  std::string reason;
};

struct Case {
  std::string name;
  fs::path file;
  json doc;
  std::string requirement, section, level;
};

struct Outcome {
  enum Kind { Pass, Fail, Skip } kind = Pass;
  std::string note;
};

struct Options {
  fs::path runtime;
  fs::path cases_dir = HUSK_CONFORMANCE_CASES_DIR;
  std::vector<std::string> filters;
  fs::path markdown;
  bool keep = false, verbose = false, list = false;
};

// Set by SIGINT/SIGTERM: the current case fails, the rest are not run.
extern volatile sig_atomic_t g_interrupted;

// Trimmed, on one line, cut at `max` characters.
std::string one_line(std::string s, size_t max = 300);
// A JSON string's text, anything else dumped.
std::string as_text(const json& j);
// A string or a list of them (null: none).
std::vector<std::string> string_list(const json& j);

// The cases of opt.cases_dir matching opt.filters, checked: a misspelt key
// is a SuiteError, never a check that silently checks nothing.
std::vector<Case> load_cases(const Options& opt);

}  // namespace conformance
