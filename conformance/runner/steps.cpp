// The steps of a case (`do:`), one method each.
#include <unistd.h>

#include <thread>

#include "base/file.h"
#include "case_run.h"

namespace conformance {

using husk_test::trim;

std::string CaseRun::run_step(const json& step_in) {
  json step = step_in.is_string() ? json{{"do", step_in}} : step_in;
  std::string action = step.at("do").get<std::string>();
  std::vector<std::string> extra = string_list(step.value("args", json()));
  for (auto& a : extra) a = subst(a);

  if (action == "create" || action == "run") return step_create(step, action);
  if (action == "start" || action == "state" || action == "kill" || action == "delete" || action == "exec" ||
      action == "raw")
    return step_command(step, action, extra);
  if (action == "wait") return step_wait(step);
  if (action == "check") {
    Result r;
    auto fail = check_step(step, r);
    if (!fail.empty()) return fail;
    return verify(step.value("expect", json::object()), r, step.contains("host"));
  }
  if (action == "background") return step_background(step, extra);
  if (action == "patch_config") return step_patch_config(step);
  if (action == "sleep") {
    std::this_thread::sleep_for(Ms(step.value("ms", 100)));
    return "";
  }
  throw SuiteError("unknown step '" + action + "'");
}

// create (with a console socket when process.terminal is set) or run.
std::string CaseRun::step_create(const json& step, const std::string& action) {
  if (!config_written_) write_config();
  std::string id = step_id(step);
  std::vector<std::string> a = {action, "--bundle", bundle_.string()};
  if (action == "create" && config_.value("/process/terminal"_json_pointer, false)) {
    fs::path sock = dir_ / "console.sock";
    ::unlink(sock.c_str());
    console_.reset();
    console_ = std::make_unique<Console>(sock);
    a.insert(a.end(), {"--console-socket", sock.string()});
  }
  a.push_back(id);
  auto r = runtime(a, Ms(step.value("timeout_ms", 20000)));
  return verify(step.value("expect", json::object()), r, true);
}

// The runtime commands on one container; `raw` is any command line, for
// argument errors the typed steps cannot express.
std::string CaseRun::step_command(const json& step, const std::string& action,
                                  const std::vector<std::string>& extra) {
  std::vector<std::string> a;
  if (action == "raw") {
    if (extra.empty()) throw SuiteError("raw step needs args");
    a = extra;
  } else if (action == "kill") {
    a = {"kill", step_id(step), extra.empty() ? "KILL" : extra[0]};
  } else if (action == "delete") {
    a = {"delete"};
    if (step.value("force", false)) a.push_back("--force");
    a.push_back(step_id(step));
  } else {
    a = {action, step_id(step)};
    if (action == "exec") a.insert(a.end(), extra.begin(), extra.end());
  }
  auto r = runtime(a);
  return verify(step.value("expect", json::object()), r, true);
}

// Polls `state` until the wanted status; then the container's captured
// output is what `expect` sees.
std::string CaseRun::step_wait(const json& step) {
  std::string id = step_id(step);
  std::string want = step.value("status", std::string("stopped"));
  std::string last = "?";
  bool reached = husk_test::eventually(
      [&] {
        auto st = runtime({"state", id}, Ms(5000));
        auto doc = json::parse(st.out, nullptr, false);
        if (st.code == 0 && !doc.is_discarded() && doc.contains("status"))
          last = as_text(doc["status"]);
        else if (step.value("or_gone", false))
          return true;  // destroyed counts as stopped
        else
          last = "<state failed: " + one_line(st.err, 120) + ">";
        return last == want;
      },
      Ms(step.value("timeout_ms", 10000)), Ms(50));
  if (!reached) return "status stayed '" + last + "', waited for '" + want + "'";
  Result r;
  r.code = 0;
  if (console_) {
    std::this_thread::sleep_for(Ms(100));  // let the reader drain the pty
    r.out = console_->output();
  } else if (container_out_) {
    r.out = container_out_->read();
  }
  if (container_err_) r.err = container_err_->read();
  return verify(step.value("expect", json::object()), r, false);
}

// A host process kept until the case ends; waits until it has exec'd the
// named program (its namespaces are set up).
std::string CaseRun::step_background(const json& step, const std::vector<std::string>& extra) {
  husk_test::SpawnOpts o;
  o.own_group = true;
  bg_.emplace_back(extra, o);
  int pid = bg_.back().pid();
  std::string comm = step.value("comm", std::string());
  if (!comm.empty() && !husk_test::eventually([&] { return husk_test::comm(pid) == comm; }, Ms(5000)))
    throw SuiteError("background process never became " + comm);
  return "";
}

std::string CaseRun::step_patch_config(const json& step) {
  auto cfg = json::parse(husk::base::read_file(bundle_ / "config.json"));
  cfg.merge_patch(subst_json(step.at("config")));
  husk_test::write_file(bundle_ / "config.json", cfg.dump(2));
  return "";
}

}  // namespace conformance
