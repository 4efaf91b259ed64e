#include "case_run.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <iostream>
#include <sstream>

#include "base/file.h"

namespace conformance {

using husk_test::replace_all;
using husk_test::trim;
using husk_test::write_file;

CaseRun::CaseRun(const RunContext& ctx, const Case& c, size_t index) : ctx_(ctx), c_(c) {
  id_ = "hc" + ctx.run_id + "-" + c.name;
  dir_ = ctx.tmp / "cases" / c.name;
  bundle_ = dir_ / "bundle";
  rootfs_ = bundle_ / "rootfs";
  log_ = bundle_ / "log";
  cgroup_ = "/husk-conformance/" + ctx.run_id + "-" + std::to_string(index);
}

std::string CaseRun::subst(std::string s) {
  if (s.find('{') == std::string::npos) return s;
  s = replace_all(s, "{bundle}", bundle_.string());
  s = replace_all(s, "{rootfs}", rootfs_.string());
  s = replace_all(s, "{log}", log_.string());
  s = replace_all(s, "{id}", id_);
  s = replace_all(s, "{cgroup}", cgroup_);
  s = replace_all(s, "{root}", ctx_.root.string());
  s = replace_all(s, "{oom_score_adj}", ctx_.host.oom_score_adj);
  if (!bg_.empty()) s = replace_all(s, "{bgpid}", std::to_string(bg_.back().pid()));
  if (s.find("{pid}") != std::string::npos) s = replace_all(s, "{pid}", container_pid(id_));
  return s;
}

json CaseRun::subst_json(const json& j) {
  if (j.is_string()) return subst(j.get<std::string>());
  if (j.is_array()) {
    json a = json::array();
    for (auto& e : j) a.push_back(subst_json(e));
    return a;
  }
  if (j.is_object()) {
    json o = json::object();
    for (auto& [k, v] : j.items()) o[subst(k)] = subst_json(v);
    return o;
  }
  return j;
}

// Output goes to stepN.out/.err in the case directory (kept with --keep); in
// its own process group, all of which is killed on timeout.
husk_test::Result CaseRun::spawn(const std::vector<std::string>& argv, Ms timeout) {
  ++step_no_;
  husk_test::SpawnOpts o;
  o.out = std::make_shared<husk_test::Capture>((dir_ / ("step" + std::to_string(step_no_) + ".out")).string());
  o.err = std::make_shared<husk_test::Capture>((dir_ / ("step" + std::to_string(step_no_) + ".err")).string());
  o.own_group = true;
  o.timeout = timeout;
  return husk_test::run(argv, o);
}

husk_test::Result CaseRun::runtime(const std::vector<std::string>& args, Ms timeout) {
  std::vector<std::string> argv = {ctx_.opt.runtime.string(), "--root", ctx_.root.string()};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = spawn(argv, timeout);
  if (ctx_.opt.verbose) {
    std::string cmd;
    for (auto& a : argv) cmd += a + " ";
    std::cerr << "    $ " << cmd << "-> " << (r.timed_out ? "TIMEOUT" : std::to_string(r.code)) << "\n";
    if (!trim(r.out).empty() && args[0] != "create") std::cerr << "      out: " << one_line(r.out, 2000) << "\n";
    if (!trim(r.err).empty()) std::cerr << "      err: " << one_line(r.err, 2000) << "\n";
  }
  if (args[0] == "create") {
    container_out_ = r.out_cap;
    container_err_ = r.err_cap;
  }
  return r;
}

std::string CaseRun::container_pid(const std::string& id) {
  auto r = runtime({"state", id}, Ms(5000));
  if (r.code != 0) throw StepFail{"state failed while resolving {pid}: " + one_line(r.err)};
  auto st = json::parse(r.out, nullptr, false);
  if (st.is_discarded() || !st.contains("pid") || !st["pid"].is_number())
    throw StepFail{"state has no numeric pid: " + one_line(r.out)};
  return std::to_string(st["pid"].get<long long>());
}

std::string CaseRun::step_id(const json& step) {
  std::string id = step.contains("id") ? subst(as_text(step["id"])) : id_;
  ids_.insert(id);
  return id;
}

namespace {

// `remove`: array items matching every field of a pattern (or equal to it) go.
void remove_items(json& cfg, const json& remove) {
  for (auto& [ptr, patterns] : remove.items()) {
    json::json_pointer p(ptr);
    if (!cfg.contains(p)) continue;
    json kept = json::array();
    for (auto& item : cfg[p]) {
      bool drop = false;
      for (auto& pat : patterns) {
        bool all = pat.is_object();
        for (auto& [k, v] : pat.items())
          if (!item.is_object() || !item.contains(k) || item[k] != v) all = false;
        if (all || item == pat) drop = true;
      }
      if (!drop) kept.push_back(item);
    }
    cfg[p] = kept;
  }
}

void append_items(json& cfg, const json& append) {
  for (auto& [ptr, items] : append.items()) {
    json::json_pointer p(ptr);
    if (!cfg.contains(p) || cfg[p].is_null()) cfg[p] = json::array();
    for (auto& it : items) cfg[p].push_back(it);
  }
}

}  // namespace

void CaseRun::build_config() {
  json cfg = ctx_.base_config;
  cfg["process"]["terminal"] = false;
  cfg["process"]["args"] = c_.doc.contains("command") ? c_.doc["command"] : json::array({"true"});
  cfg["root"] = {{"path", "rootfs"}, {"readonly", false}};
  cfg["linux"]["cgroupsPath"] = cgroup_;
  if (c_.doc.contains("config")) cfg.merge_patch(c_.doc["config"]);
  // remove before append, so a case can replace an entry of the base config.
  if (c_.doc.contains("remove")) remove_items(cfg, c_.doc["remove"]);
  if (c_.doc.contains("append")) append_items(cfg, c_.doc["append"]);
  config_ = cfg;
}

void CaseRun::write_config() {
  if (c_.doc.contains("raw_config")) {
    write_file(bundle_ / "config.json", subst(c_.doc["raw_config"].get<std::string>()));
  } else {
    write_file(bundle_ / "config.json", subst_json(config_).dump(2));
  }
  config_written_ = true;
}

void CaseRun::setup_files() {
  if (!c_.doc.contains("files")) return;
  for (auto& f : c_.doc["files"]) {
    std::string raw = f.at("path").get<std::string>();
    bool host_side = raw.rfind("{bundle}", 0) == 0 || raw.rfind("{log}", 0) == 0;
    fs::path p = host_side ? fs::path(subst(raw)) : rootfs_ / fs::path(raw).relative_path();
    mode_t mode = f.contains("mode") ? static_cast<mode_t>(f["mode"].get<unsigned>()) : 0644;
    fs::create_directories(p.parent_path());
    if (f.value("dir", false)) {
      fs::create_directories(p);
      ::chmod(p.c_str(), f.contains("mode") ? mode : 0755);
    } else {
      write_file(p, subst(f.value("content", std::string())), static_cast<int>(mode));
    }
  }
}

Outcome CaseRun::execute() {
  for (auto& req : string_list(c_.doc.value("requires", json())))
    if (auto why = ctx_.host.missing(req); !why.empty()) return {Outcome::Skip, why};
  fs::create_directories(bundle_);
  husk_test::copy_rootfs(ctx_.template_dir / "rootfs", rootfs_, false);
  fs::create_directories(log_);
  ::chmod(log_.c_str(), 0777);  // hooks and processes of any uid write here
  build_config();
  setup_files();
  size_t i = 0;
  try {
    for (auto& step : c_.doc.at("steps")) {
      ++i;
      if (g_interrupted) return {Outcome::Fail, "interrupted"};
      std::string fail;
      try {
        fail = run_step(step);
      } catch (const StepFail& f) {
        fail = f.reason;
      }
      if (!fail.empty()) {
        std::string action = step.is_string() ? step.get<std::string>() : step.value("do", std::string("?"));
        return {Outcome::Fail, "step " + std::to_string(i) + " (" + action + "): " + fail};
      }
    }
  } catch (const CaseSkip& s) {
    return {Outcome::Skip, s.reason};
  }
  return {Outcome::Pass, ""};
}

void CaseRun::cleanup() {
  try {
    cleanup_steps();
  } catch (const std::exception& e) {
    std::cerr << "  warning: cleanup of " << c_.name << ": " << e.what() << "\n";
  }
}

void CaseRun::cleanup_steps() {
  if (!fs::exists(dir_)) return;  // skipped before anything was made
  for (auto& id : ids_) runtime({"delete", "--force", id}, Ms(10000));
  if (c_.doc.contains("cleanup_host")) spawn({"/bin/sh", "-c", subst(as_text(c_.doc["cleanup_host"]))}, Ms(20000));
  bg_.clear();  // kills them
  console_.reset();
  remove_cgroups();
  if (!ctx_.opt.keep) {
    try {
      husk_test::remove_tree(dir_);
    } catch (const std::exception& e) {
      std::cerr << "  warning: " << e.what() << "\n";
    }
  }
}

// Leftover cgroups of this case: rmdir bottom-up (cgroupfs only allows rmdir).
void CaseRun::remove_cgroups() {
  for (auto& mp : ctx_.host.cgroup_mounts) {
    fs::path top = mp / fs::path(cgroup_).relative_path();
    std::error_code ec;
    if (!fs::is_directory(top, ec)) continue;
    std::vector<fs::path> dirs;
    for (auto it = fs::recursive_directory_iterator(top, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec))
      if (it->is_directory(ec) && !it->is_symlink(ec)) dirs.push_back(it->path());
    dirs.push_back(top);
    // Processes the runtime left behind in this case's own cgroup (e.g. after
    // a timed-out create) are ours: kill them so the cgroup can go.
    husk_test::eventually(
        [&] {
          bool any = false;
          for (auto& d : dirs)
            for (auto& pid : husk_test::lines(husk::base::try_read_file(d / "cgroup.procs").value_or("")))
              if (!trim(pid).empty()) {
                ::kill(std::stoi(pid), SIGKILL);
                any = true;
              }
          return !any;
        },
        Ms(1000), Ms(20));
    std::sort(dirs.begin(), dirs.end(), [](auto& a, auto& b) { return a.string().size() > b.string().size(); });
    for (auto& d : dirs) ::rmdir(d.c_str());
    if (::rmdir(top.c_str()) != 0 && errno != ENOENT)
      std::cerr << "  warning: cannot remove cgroup " << top.string() << ": " << std::strerror(errno) << "\n";
  }
}

}  // namespace conformance
