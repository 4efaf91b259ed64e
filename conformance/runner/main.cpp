// husk-conformance: runs the data-driven OCI runtime conformance cases in
// conformance/cases/*.yaml against any runc-compatible runtime binary.
// The case file format is documented in conformance/README.md and --help.
// cases.cpp loads the cases, suite.cpp runs them, case_run.cpp/steps.cpp/
// checks.cpp are one case, host.cpp probes what the host offers.

#include <signal.h>
#include <unistd.h>

#include <iostream>

#include "host.h"
#include "suite.h"

namespace conformance {

volatile sig_atomic_t g_interrupted = 0;

namespace {

const char* kUsage = R"(usage: husk-conformance --runtime PATH [options]

Runs the OCI runtime-spec conformance cases against PATH (any binary with
runc's command line: --root, create, start, state, kill, delete, exec, run,
spec).

options:
  --runtime PATH     runtime binary to test (required)
  --cases DIR        directory of *.yaml cases (default: the source tree's
                     conformance/cases, compiled in)
  --filter SUBSTR    only run cases whose name contains SUBSTR (repeatable)
  --markdown FILE    also write the per-requirement table to FILE
  --keep             keep the temporary bundles and runtime root
  --verbose          print every command, its exit code and output
  --list             list the cases and exit
  -h, --help         this text

Every case runs in its own bundle (a copy of the busybox bundle that
scripts/make-bundle builds once per run) under one temporary directory, with its own container id and an absolute
linux.cgroupsPath /husk-conformance/<run>-<case>. After each case, pass or
fail, the runner calls `delete --force`, removes the case's cgroups and its
bundle. The output ends with the table and the line
"N passed, N failed, N skipped"; the exit code is 1 when any case failed.

Case format (YAML, see conformance/README.md):
  requirement: the quoted MUST/SHOULD sentence
  section: runtime.md#... / config.md#... / config-linux.md#...
  level: MUST | SHOULD
  requires: [root, userns, timens, apparmor, selinux, no-apparmor, no-selinux, cgroup-v1, cgroup-v2,
             cgroup-v1:<ctrl>, cgroup-controller:<ctrl>, resctrl, no-resctrl, numa, shared-root,
             x86_64, file:<path>, cmd:<host command>, env:<VAR>]
  command: [argv of process.args]
  config: merge patch (RFC 7386) applied to the base config
  append: {"/json/pointer": [items appended to that array]}
  remove: {"/json/pointer": [objects; array items matching all fields go]}
  raw_config: literal config.json text (instead of the built config)
  files: [{path, content, mode, dir}]  (rootfs paths, or {bundle}/... paths)
  cleanup_host: shell command run on the host after the case, always
  steps: [create | start | state | kill | delete | exec | run | raw | wait |
          check | background | patch_config | sleep, each with expect:]
Placeholders in strings: {bundle} {rootfs} {log} {id} {cgroup} {root}
{pid} (container pid via `state`) {bgpid} {oom_score_adj}.
)";

}  // namespace
}  // namespace conformance

int main(int argc, char** argv) {
  using namespace conformance;
  Options opt;
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    for (size_t i = 0; i < args.size(); ++i) {
      auto need = [&](const std::string& flag) -> std::string {
        if (i + 1 >= args.size()) throw SuiteError(flag + " needs a value");
        return args[++i];
      };
      const auto& a = args[i];
      if (a == "-h" || a == "--help") {
        std::cout << kUsage;
        return 0;
      } else if (a == "--runtime") {
        opt.runtime = need(a);
      } else if (a == "--cases") {
        opt.cases_dir = need(a);
      } else if (a == "--filter") {
        opt.filters.push_back(need(a));
      } else if (a == "--markdown") {
        opt.markdown = fs::absolute(need(a));
      } else if (a == "--keep") {
        opt.keep = true;
      } else if (a == "--verbose" || a == "-v") {
        opt.verbose = true;
      } else if (a == "--list") {
        opt.list = true;
      } else {
        throw SuiteError("unknown argument " + a + " (see --help)");
      }
    }
    auto cases = load_cases(opt);
    if (opt.list) {
      for (auto& c : cases) std::cout << c.name << "\t" << c.level << "\t" << c.section << "\t" << c.requirement << "\n";
      return 0;
    }
    if (opt.runtime.empty()) throw SuiteError("--runtime PATH is required (see --help)");
    if (opt.runtime.is_relative()) opt.runtime = fs::absolute(opt.runtime);
    if (::access(opt.runtime.c_str(), X_OK) != 0) throw SuiteError("runtime " + opt.runtime.string() + " is not executable");
    struct sigaction sa {};
    sa.sa_handler = [](int) { g_interrupted = 1; };
    ::sigaction(SIGINT, &sa, nullptr);
    ::sigaction(SIGTERM, &sa, nullptr);
    Suite suite(opt, HostInfo::probe());
    return suite.run(cases);
  } catch (const std::exception& e) {
    std::cerr << "husk-conformance: " << e.what() << "\n";
    return 2;
  }
}
