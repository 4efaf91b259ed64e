// The output of the commands that report; each returns the exit status.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "container/commands.h"
#include "spec/spec.h"

namespace husk::rt {

int print_state(const spec::State& s);
// --format table|json, or the ids alone (--quiet).
int print_list(const std::vector<spec::State>& states, const std::string& format, bool quiet);
// --format json: the pids; table: the host's `ps` (ps_args, else -ef) filtered to them.
int print_ps(const std::vector<pid_t>& pids, const std::string& format, const std::vector<std::string>& ps_args);
// The findings as a table; 1 when one is an error.
int print_check(const std::string& bundle, const CheckResult& r);
int print_features(const spec::Features& f);
void print_event(const std::string& json_line);
// start's and run's error of an exec that failed after the release, on
// stderr (start itself succeeded); nothing when there was none.
void print_late_error(const std::string& error);

}  // namespace husk::rt
