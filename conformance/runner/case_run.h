// One case: its bundle, config and files, its steps, its cleanup.
#pragma once

#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "console.h"
#include "host.h"
#include "runner.h"

namespace conformance {

// What every case of one run shares.
struct RunContext {
  Options opt;
  HostInfo host;
  fs::path tmp, root;     // the run's temporary tree and the runtime's --root
  fs::path template_dir;  // scripts/make-bundle's bundle, copied by each case
  json base_config;       // its config.json: the runtime's own `spec`
  std::string run_id;
};

class CaseRun {
 public:
  CaseRun(const RunContext& ctx, const Case& c, size_t index);
  Outcome execute();
  // Never throws: problems are printed as warnings.
  void cleanup();

 private:
  using Result = husk_test::Result;
  using Ms = std::chrono::milliseconds;

  const RunContext& ctx_;
  const Case& c_;
  std::string id_, cgroup_;
  fs::path dir_, bundle_, rootfs_, log_;
  std::set<std::string> ids_;
  std::vector<husk_test::Child> bg_;
  json config_;
  bool config_written_ = false;
  std::shared_ptr<husk_test::Capture> container_out_, container_err_;
  std::unique_ptr<Console> console_;
  int step_no_ = 0;

  // case_run.cpp: placeholders, config, files, processes, cleanup
  std::string subst(std::string s);
  json subst_json(const json& j);
  std::string container_pid(const std::string& id);
  Result spawn(const std::vector<std::string>& argv, Ms timeout);
  Result runtime(const std::vector<std::string>& args, Ms timeout = Ms(10000));
  std::string step_id(const json& step);
  void build_config();
  void write_config();
  void setup_files();
  void cleanup_steps();
  void remove_cgroups();

  // steps.cpp: one method per step kind
  std::string run_step(const json& step);
  std::string step_create(const json& step, const std::string& action);
  std::string step_command(const json& step, const std::string& action, const std::vector<std::string>& extra);
  std::string step_wait(const json& step);
  std::string step_background(const json& step, const std::vector<std::string>& extra);
  std::string step_patch_config(const json& step);

  // checks.cpp: `check` steps and `expect`
  std::string check_step(const json& step, Result& r);
  std::string check_file(const json& step, Result& r);
  std::string check_exists(const json& step);
  std::string check_ns(const json& step, Result& r);
  std::string check_cgroup(const json& step, Result& r);
  std::string check_cgroup_of_pid(const json& step, Result& r);
  std::string verify(const json& expect, const Result& r, bool default_exit_zero);
  std::string verify_exit(const json& expect, const Result& r, bool default_exit_zero);
  std::string verify_output(const json& expect, const Result& r);
  std::string verify_json(const json& expect, const Result& r);
};

}  // namespace conformance
