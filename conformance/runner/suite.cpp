#include "suite.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <random>
#include <sstream>

#include "base/error.h"
#include "base/file.h"

namespace conformance {

using husk_test::replace_all;
using husk_test::trim;

// A distinctive oom_score_adj for the runtime to inherit, so a runtime that
// resets it when process.oomScoreAdj is unset is caught (raising our own
// value needs no privilege and only makes the runner likelier to be OOM-killed).
void Suite::raise_oom_score_adj() {
  if (ctx_.host.oom_score_adj != "0") return;
  try {
    husk_test::write_file("/proc/self/oom_score_adj", "7");
  } catch (const husk::Error&) {
  }
  ctx_.host.oom_score_adj = trim(husk::base::try_read_file("/proc/self/oom_score_adj").value_or(""));
}

void Suite::prepare() {
  std::random_device rd;
  char buf[16];
  std::snprintf(buf, sizeof buf, "%06x", rd() & 0xffffff);
  ctx_.run_id = buf;
  ctx_.tmp = husk_test::make_tempdir("husk-conformance.");
  ::chmod(ctx_.tmp.c_str(), 0755);  // user-namespaced containers must traverse it
  ctx_.root = ctx_.tmp / "root";
  fs::create_directories(ctx_.root);
  fs::create_directories(ctx_.tmp / "cases");
  raise_oom_score_adj();
  // Every case copies this bundle's rootfs; its config.json comes from the
  // runtime itself (`spec`), as a user would get it.
  ctx_.template_dir = ctx_.tmp / "template";
  try {
    husk_test::make_bundle(ctx_.template_dir, ctx_.opt.runtime.string());
  } catch (const husk::Error& e) {
    throw SuiteError(e.what());
  }
  ctx_.base_config = json::parse(husk::base::read_file(ctx_.template_dir / "config.json"));
}

void Suite::finish() {
  for (auto& mp : ctx_.host.cgroup_mounts) ::rmdir((mp / "husk-conformance").c_str());  // only if no other run uses it
  if (ctx_.tmp.empty()) return;
  if (ctx_.opt.keep) {
    std::cerr << "kept " << ctx_.tmp.string() << "\n";
    return;
  }
  try {
    husk_test::remove_tree(ctx_.tmp);
  } catch (const std::exception& e) {
    std::cerr << "warning: " << e.what() << "\n";
  }
}

Outcome Suite::run_case(const Case& c, size_t index) {
  CaseRun cr(ctx_, c, index);
  Outcome o;
  try {
    o = cr.execute();
  } catch (const std::exception& e) {
    o = {Outcome::Fail, std::string("suite error: ") + e.what()};
  }
  cr.cleanup();
  return o;
}

namespace {

std::string md_escape(std::string s) {
  s = replace_all(s, "|", "\\|");
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}

}  // namespace

int Suite::run(const std::vector<Case>& cases) {
  try {
    prepare();
  } catch (...) {
    finish();  // remove the half-made temporary tree
    throw;
  }
  size_t passed = 0, failed = 0, skipped = 0;
  std::ostringstream table;
  table << "| Case | Requirement section | Level | Result | Notes |\n";
  table << "| --- | --- | --- | --- | --- |\n";
  size_t index = 0;
  auto start = std::chrono::steady_clock::now();
  for (auto& c : cases) {
    if (g_interrupted) break;
    ++index;
    if (ctx_.opt.verbose) std::cerr << "== " << c.name << "\n";
    auto t0 = std::chrono::steady_clock::now();
    Outcome o = run_case(c, index);
    o.note = replace_all(o.note, ctx_.tmp.string(), "$TMP");  // keep notes short and stable
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
    const char* word = o.kind == Outcome::Pass ? "PASS" : o.kind == Outcome::Fail ? "FAIL" : "SKIP";
    std::cout << word << "  " << c.name << " (" << ms << " ms)";
    if (!o.note.empty()) std::cout << ": " << o.note;
    std::cout << std::endl;
    if (o.kind == Outcome::Fail) std::cout << "      " << c.section << " " << c.level << ": " << c.requirement << "\n";
    (o.kind == Outcome::Pass ? passed : o.kind == Outcome::Fail ? failed : skipped)++;
    table << "| " << c.name << " | " << md_escape(c.section) << " | " << c.level << " | " << word << " | "
          << md_escape(one_line(o.note, 200)) << " |\n";
  }
  finish();
  auto secs = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - start).count();
  report(table.str(), passed, failed, skipped, secs, cases.size());
  return failed == 0 && !g_interrupted ? 0 : 1;
}

void Suite::report(const std::string& table, size_t passed, size_t failed, size_t skipped, long secs,
                   size_t cases) const {
  std::cout << "\n" << table << "\n";
  std::cout << "runtime: " << ctx_.opt.runtime.string() << ", " << cases << " cases in " << secs << " s\n";
  if (!ctx_.opt.markdown.empty()) {
    std::ostringstream md;
    md << "Conformance of `" << ctx_.opt.runtime.filename().string() << "`: " << passed << " passed, " << failed
       << " failed, " << skipped << " skipped\n\n"
       << table;
    husk_test::write_file(ctx_.opt.markdown, md.str());
  }
  std::cout << passed << " passed, " << failed << " failed, " << skipped << " skipped" << std::endl;
}

}  // namespace conformance
