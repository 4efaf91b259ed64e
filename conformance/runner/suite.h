// One run of the suite: the temporary tree, the template bundle, every case
// in turn, the report.
#pragma once

#include <vector>

#include "case_run.h"

namespace conformance {

class Suite {
 public:
  Suite(Options opt, HostInfo host) {
    ctx_.opt = std::move(opt);
    ctx_.host = std::move(host);
  }
  // The exit code: 1 when a case failed or the run was interrupted.
  int run(const std::vector<Case>& cases);

 private:
  RunContext ctx_;

  void prepare();
  void raise_oom_score_adj();
  void finish();
  Outcome run_case(const Case& c, size_t index);
  void report(const std::string& table, size_t passed, size_t failed, size_t skipped, long secs,
              size_t cases) const;
};

}  // namespace conformance
