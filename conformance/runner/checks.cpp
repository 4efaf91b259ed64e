// `check` steps (what the host sees) and `expect` (what a step must give).
#include <iostream>
#include <optional>
#include <regex>
#include <sstream>

#include "base/error.h"
#include "base/file.h"
#include "case_run.h"

namespace conformance {

using husk_test::trim;

namespace {

std::string readlink_or_empty(const fs::path& p) {
  std::error_code ec;
  auto t = fs::read_symlink(p, ec);
  return ec ? std::string() : t.string();
}

// Unreadable for any reason (absent, EACCES, a process gone): the check fails.
std::optional<std::string> read_if(const fs::path& p) {
  try {
    return husk::base::try_read_file(p);
  } catch (const husk::Error&) {
    return std::nullopt;
  }
}

}  // namespace

std::string CaseRun::check_step(const json& step, Result& r) {
  r.code = 0;
  if (step.contains("file")) return check_file(step, r);
  if (step.contains("exists") || step.contains("not_exists")) return check_exists(step);
  if (step.contains("ns")) return check_ns(step, r);
  if (step.contains("cgroup")) return check_cgroup(step, r);
  if (step.contains("cgroup_of_pid")) return check_cgroup_of_pid(step, r);
  if (step.contains("host")) {
    std::string cmd = subst(as_text(step["host"]));
    r = spawn({"/bin/sh", "-c", cmd}, Ms(20000));
    if (ctx_.opt.verbose) std::cerr << "    host$ " << cmd << " -> " << r.code << " out: " << one_line(r.out) << "\n";
    return "";
  }
  throw SuiteError("check step needs one of file/exists/not_exists/ns/cgroup/cgroup_of_pid/host");
}

// A file's content, or one "field:" line of it.
std::string CaseRun::check_file(const json& step, Result& r) {
  fs::path p = subst(as_text(step["file"]));
  auto content = read_if(p);
  if (!content) return "cannot read " + p.string();
  r.out = *content;
  if (!step.contains("field")) return "";
  std::string field = as_text(step["field"]) + ":";
  for (auto& line : husk_test::lines(*content))
    if (line.rfind(field, 0) == 0) {
      r.out = trim(line.substr(field.size()));
      return "";
    }
  return "no field " + field + " in " + p.string();
}

std::string CaseRun::check_exists(const json& step) {
  bool want = step.contains("exists");
  fs::path p = subst(as_text(want ? step["exists"] : step["not_exists"]));
  std::error_code ec;
  bool is = fs::exists(fs::symlink_status(p, ec));
  if (is != want) return p.string() + (is ? " exists" : " does not exist");
  return "";
}

// "same" or "differs": the container's namespace against ours (or `ref`).
std::string CaseRun::check_ns(const json& step, Result& r) {
  std::string type = as_text(step["ns"]);
  auto mine = readlink_or_empty(subst("/proc/{pid}/ns/" + type));
  auto ref = readlink_or_empty(subst(step.contains("ref") ? as_text(step["ref"]) : "/proc/self/ns/" + type));
  if (mine.empty() || ref.empty()) return "cannot read the " + type + " namespace links";
  r.out = mine == ref ? "same" : "differs";
  return "";
}

// A file of the container's cgroup, named per hierarchy (v1: controller/file).
std::string CaseRun::check_cgroup(const json& step, Result& r) {
  const json& cg = step["cgroup"];
  const char* mode = ctx_.host.cgroup_v2 ? "v2" : "v1";
  if (!cg.contains(mode)) throw CaseSkip{std::string("not observable on cgroup ") + mode};
  std::string spec = as_text(cg[mode]);
  fs::path cgpath = fs::path(config_.at("/linux/cgroupsPath"_json_pointer).get<std::string>()).relative_path();
  fs::path p;
  if (ctx_.host.cgroup_v2) {
    p = fs::path("/sys/fs/cgroup") / cgpath / spec;
  } else {
    auto slash = spec.find('/');
    if (slash == std::string::npos) throw SuiteError("cgroup.v1 must be <controller>/<file>");
    auto ctrl = spec.substr(0, slash);
    auto it = ctx_.host.v1_mounts.find(ctrl);
    if (it == ctx_.host.v1_mounts.end()) throw CaseSkip{"cgroup v1 controller " + ctrl + " is not mounted"};
    p = it->second / cgpath / spec.substr(slash + 1);
  }
  if (step.value("absent", false)) return fs::exists(p.parent_path()) ? p.parent_path().string() + " still exists" : "";
  auto content = read_if(p);
  if (!content) return "cannot read " + p.string();
  r.out = *content;
  return "";
}

// The container process's cgroup for a v1 controller (or the unified one).
std::string CaseRun::check_cgroup_of_pid(const json& step, Result& r) {
  std::string ctrl = as_text(step["cgroup_of_pid"]);
  for (auto& line : husk_test::lines(husk::base::read_file(subst("/proc/{pid}/cgroup")))) {
    auto a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    std::string ctrls = line.substr(a + 1, b - a - 1);
    bool match =
        ctx_.host.cgroup_v2 ? ctrls.empty() : ("," + ctrls + ",").find("," + ctrl + ",") != std::string::npos;
    if (match) {
      r.out = line.substr(b + 1);
      return "";
    }
  }
  return "no " + ctrl + " line in /proc/<pid>/cgroup";
}

std::string CaseRun::verify(const json& expect, const Result& r, bool default_exit_zero) {
  if (r.timed_out) return "timed out";
  if (auto fail = verify_exit(expect, r, default_exit_zero); !fail.empty()) return fail;
  if (auto fail = verify_output(expect, r); !fail.empty()) return fail;
  return verify_json(expect, r);
}

std::string CaseRun::verify_exit(const json& expect, const Result& r, bool default_exit_zero) {
  json exit = expect.contains("exit") ? expect["exit"] : (default_exit_zero ? json(0) : json("any"));
  std::string tail = r.err.empty() ? "" : " (stderr: " + one_line(r.err) + ")";
  if (exit.is_number()) {
    if (r.code != exit.get<int>()) return "exit code " + std::to_string(r.code) + ", expected " + exit.dump() + tail;
  } else if (exit == "nonzero") {
    if (r.code == 0) return "succeeded, but an error was required";
  } else if (exit != "any") {
    throw SuiteError("expect.exit must be a number, 'nonzero' or 'any'");
  }
  return "";
}

std::string CaseRun::verify_output(const json& expect, const Result& r) {
  const std::string& out = r.out;
  std::string tail = r.err.empty() ? "" : " (stderr: " + one_line(r.err) + ")";
  if (expect.contains("stdout")) {
    auto want = trim(subst(as_text(expect["stdout"])));
    if (trim(out) != want) return "output '" + one_line(out) + "', expected '" + want + "'" + tail;
  }
  for (auto& w : string_list(expect.value("stdout_contains", json())))
    if (out.find(subst(w)) == std::string::npos)
      return "output '" + one_line(out) + "' lacks '" + subst(w) + "'" + tail;
  for (auto& w : string_list(expect.value("stdout_not_contains", json())))
    if (out.find(subst(w)) != std::string::npos) return "output '" + one_line(out) + "' contains '" + subst(w) + "'";
  for (auto& w : string_list(expect.value("stdout_matches", json())))
    if (!std::regex_search(out, std::regex(subst(w), std::regex::multiline)))
      return "output '" + one_line(out) + "' does not match /" + subst(w) + "/" + tail;
  for (auto& w : string_list(expect.value("output_contains", json())))
    if ((out + r.err).find(subst(w)) == std::string::npos)
      return "stdout+stderr '" + one_line(out + " " + r.err) + "' lacks '" + subst(w) + "'";
  for (auto& w : string_list(expect.value("stderr_contains", json())))
    if (r.err.find(subst(w)) == std::string::npos) return "stderr '" + one_line(r.err) + "' lacks '" + subst(w) + "'";
  return "";
}

// expect.json: {pointer: value | <absent> | <present> | <positive> | re:REGEX};
// expect.status is /status.
std::string CaseRun::verify_json(const json& expect, const Result& r) {
  json fields = expect.value("json", json::object());
  if (expect.contains("status")) fields["/status"] = expect["status"];
  if (fields.empty()) return "";
  auto doc = json::parse(r.out, nullptr, false);
  if (doc.is_discarded()) return "output is not JSON: '" + one_line(r.out) + "'";
  for (auto& [ptr, want_j] : fields.items()) {
    json::json_pointer p(ptr);
    bool present = doc.contains(p);
    std::string want = subst(as_text(want_j));
    if (want == "<absent>") {
      if (present) return ptr + " is present (" + as_text(doc[p]) + "), expected absent";
      continue;
    }
    if (!present) return ptr + " is missing in '" + one_line(r.out) + "'";
    const json& got = doc[p];
    if (want == "<present>") continue;
    if (want == "<positive>") {
      if (!got.is_number() || got.get<double>() <= 0) return ptr + " is " + got.dump() + ", expected a positive number";
      continue;
    }
    if (want.rfind("re:", 0) == 0) {
      if (!std::regex_search(as_text(got), std::regex(want.substr(3))))
        return ptr + " is " + got.dump() + ", expected to match /" + want.substr(3) + "/";
      continue;
    }
    if (as_text(got) != want) return ptr + " is " + got.dump() + ", expected " + want;
  }
  return "";
}

}  // namespace conformance
