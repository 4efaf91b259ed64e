// husk-conformance: runs the data-driven OCI runtime conformance cases in
// conformance/cases/*.yaml against any runc-compatible runtime binary.
// The case file format is documented in conformance/README.md and --help.

#include "support.h"

#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <iostream>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

namespace conformance {
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

Every case runs in its own bundle (a busybox rootfs built from /bin/busybox)
under one temporary directory, with its own container id and an absolute
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

volatile sig_atomic_t g_interrupted = 0;

std::string one_line(std::string s, size_t max = 300) {
  s = trim(s);
  std::replace(s.begin(), s.end(), '\n', ' ');
  if (s.size() > max) s = s.substr(0, max) + "...";
  return s;
}

std::string as_text(const json& j) {
  if (j.is_string()) return j.get<std::string>();
  return j.dump();
}

std::vector<std::string> string_list(const json& j) {
  std::vector<std::string> out;
  if (j.is_null()) return out;
  if (j.is_array()) {
    for (auto& e : j) out.push_back(as_text(e));
  } else {
    out.push_back(as_text(j));
  }
  return out;
}

// One run: the temporary tree, the rootfs of each case, the base config from
// `<runtime> spec`, and the report.
class Suite {
 public:
  Suite(Options opt, HostInfo host) : opt_(std::move(opt)), host_(std::move(host)) {}

  int run(std::vector<Case>& cases);

 private:
  Options opt_;
  HostInfo host_;
  fs::path tmp_, root_, busybox_;
  std::vector<std::string> applets_;
  json base_config_;
  std::string run_id_;

  void prepare();
  void finish();
  void build_rootfs(const fs::path& rootfs);
  Outcome run_case(const Case& c, size_t index);
  friend class CaseRun;
};


// The receiving end of --console-socket: accepts the runtime's connection,
// takes the pty master passed with SCM_RIGHTS and collects what it prints.
class Console {
 public:
  explicit Console(const fs::path& path) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (fd_ < 0 || path.string().size() >= sizeof addr.sun_path) throw SuiteError("console socket " + path.string());
    std::strcpy(addr.sun_path, path.c_str());
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd_, 1) != 0)
      throw SuiteError("bind console socket " + path.string() + ": " + std::strerror(errno));
    reader_ = std::thread([this] { serve(); });
  }
  ~Console() {
    stop_ = true;
    reader_.join();
    if (master_ >= 0) ::close(master_);
    ::close(fd_);
  }
  std::string output() {
    std::lock_guard<std::mutex> l(mu_);
    return buf_;
  }

 private:
  int fd_ = -1, master_ = -1;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::string buf_;
  std::thread reader_;

  bool wait_readable(int fd) {
    while (!stop_) {
      pollfd p{fd, POLLIN, 0};
      int n = ::poll(&p, 1, 100);
      if (n > 0) return true;
      if (n < 0 && errno != EINTR) return false;
    }
    return false;
  }
  void serve() {
    if (!wait_readable(fd_)) return;
    int conn = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (conn < 0) return;
    char data[256];
    char ctrl[CMSG_SPACE(sizeof(int))] = {};
    iovec iov{data, sizeof data};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = ctrl;
    msg.msg_controllen = sizeof ctrl;
    if (wait_readable(conn) && ::recvmsg(conn, &msg, MSG_CMSG_CLOEXEC) >= 0) {
      for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) std::memcpy(&master_, CMSG_DATA(c), sizeof(int));
    }
    ::close(conn);
    if (master_ < 0) return;
    char b[4096];
    while (wait_readable(master_)) {
      ssize_t n = ::read(master_, b, sizeof b);
      if (n <= 0) break;  // EIO once every slave fd is closed
      std::lock_guard<std::mutex> l(mu_);
      buf_.append(b, static_cast<size_t>(n));
    }
  }
};

class CaseRun {
 public:
  CaseRun(Suite& s, const Case& c, size_t index) : s_(s), c_(c) {
    std::string n = c.name;
    id_ = "hc" + s.run_id_ + "-" + n;
    dir_ = s.tmp_ / "cases" / n;
    bundle_ = dir_ / "bundle";
    rootfs_ = bundle_ / "rootfs";
    log_ = bundle_ / "log";
    cgroup_ = "/husk-conformance/" + s.run_id_ + "-" + std::to_string(index);
  }

  Outcome execute();
  // Never throws: problems are printed as warnings.
  void cleanup();

 private:
  Suite& s_;
  const Case& c_;
  std::string id_, cgroup_;
  fs::path dir_, bundle_, rootfs_, log_;
  std::set<std::string> ids_;
  std::vector<pid_t> bg_;
  json config_;
  bool config_written_ = false;
  fs::path container_out_, container_err_;
  std::unique_ptr<Console> console_;
  int step_no_ = 0;

  std::string subst(std::string s);
  json subst_json(const json& j);
  std::string container_pid(const std::string& id);
  ProcResult runtime(const std::vector<std::string>& args, std::chrono::milliseconds timeout = std::chrono::milliseconds(10000));
  void build_config();
  void write_config();
  void setup_files();
  void cleanup_steps();
  std::string run_step(const json& step);
  std::string check_step(const json& step, ProcResult& r);
  std::string verify(const json& expect, const ProcResult& r, bool default_exit_zero);
  std::string step_id(const json& step) {
    std::string id = step.contains("id") ? subst(as_text(step["id"])) : id_;
    ids_.insert(id);
    return id;
  }
};

std::string CaseRun::subst(std::string s) {
  if (s.find('{') == std::string::npos) return s;
  s = replace_all(s, "{bundle}", bundle_.string());
  s = replace_all(s, "{rootfs}", rootfs_.string());
  s = replace_all(s, "{log}", log_.string());
  s = replace_all(s, "{id}", id_);
  s = replace_all(s, "{cgroup}", cgroup_);
  s = replace_all(s, "{root}", s_.root_.string());
  s = replace_all(s, "{oom_score_adj}", s_.host_.oom_score_adj);
  if (!bg_.empty()) s = replace_all(s, "{bgpid}", std::to_string(bg_.back()));
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

ProcResult CaseRun::runtime(const std::vector<std::string>& args, std::chrono::milliseconds timeout) {
  ++step_no_;
  SpawnOptions o;
  o.argv = {s_.opt_.runtime.string(), "--root", s_.root_.string()};
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  o.stdout_file = dir_ / ("step" + std::to_string(step_no_) + ".out");
  o.stderr_file = dir_ / ("step" + std::to_string(step_no_) + ".err");
  o.timeout = timeout;
  auto r = run_process(o);
  if (s_.opt_.verbose) {
    std::string cmd;
    for (auto& a : o.argv) cmd += a + " ";
    std::cerr << "    $ " << cmd << "-> " << (r.timed_out ? "TIMEOUT" : std::to_string(r.exit_code)) << "\n";
    if (!trim(r.out).empty() && args[0] != "create") std::cerr << "      out: " << one_line(r.out, 2000) << "\n";
    if (!trim(r.err).empty()) std::cerr << "      err: " << one_line(r.err, 2000) << "\n";
  }
  if (args[0] == "create") {
    container_out_ = o.stdout_file;
    container_err_ = o.stderr_file;
  }
  return r;
}

std::string CaseRun::container_pid(const std::string& id) {
  auto r = runtime({"state", id}, std::chrono::milliseconds(5000));
  if (r.exit_code != 0) throw StepFail{"state failed while resolving {pid}: " + one_line(r.err)};
  auto st = json::parse(r.out, nullptr, false);
  if (st.is_discarded() || !st.contains("pid") || !st["pid"].is_number())
    throw StepFail{"state has no numeric pid: " + one_line(r.out)};
  return std::to_string(st["pid"].get<long long>());
}

void CaseRun::build_config() {
  json cfg = s_.base_config_;
  cfg["process"]["terminal"] = false;
  cfg["process"]["args"] = c_.doc.contains("command") ? c_.doc["command"] : json::array({"true"});
  cfg["root"] = {{"path", "rootfs"}, {"readonly", false}};
  cfg["linux"]["cgroupsPath"] = cgroup_;
  if (c_.doc.contains("config")) cfg.merge_patch(c_.doc["config"]);
  // remove before append, so a case can replace an entry of the base config.
  if (c_.doc.contains("remove")) {
    for (auto& [ptr, patterns] : c_.doc["remove"].items()) {
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
  if (c_.doc.contains("append")) {
    for (auto& [ptr, items] : c_.doc["append"].items()) {
      json::json_pointer p(ptr);
      if (!cfg.contains(p) || cfg[p].is_null()) cfg[p] = json::array();
      for (auto& it : items) cfg[p].push_back(it);
    }
  }
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
      write_file(p, subst(f.value("content", std::string())), mode);
    }
  }
}

std::string CaseRun::verify(const json& expect, const ProcResult& r, bool default_exit_zero) {
  if (r.timed_out) return "timed out";
  json exit = expect.contains("exit") ? expect["exit"] : (default_exit_zero ? json(0) : json("any"));
  std::string tail = r.err.empty() ? "" : " (stderr: " + one_line(r.err) + ")";
  if (exit.is_number()) {
    if (r.exit_code != exit.get<int>())
      return "exit code " + std::to_string(r.exit_code) + ", expected " + exit.dump() + tail;
  } else if (exit == "nonzero") {
    if (r.exit_code == 0) return "succeeded, but an error was required";
  } else if (exit != "any") {
    throw SuiteError("expect.exit must be a number, 'nonzero' or 'any'");
  }
  const std::string out = r.out;
  if (expect.contains("stdout")) {
    auto want = trim(subst(as_text(expect["stdout"])));
    if (trim(out) != want) return "output '" + one_line(out) + "', expected '" + want + "'" + tail;
  }
  for (auto& w : string_list(expect.value("stdout_contains", json())))
    if (out.find(subst(w)) == std::string::npos)
      return "output '" + one_line(out) + "' lacks '" + subst(w) + "'" + tail;
  for (auto& w : string_list(expect.value("stdout_not_contains", json())))
    if (out.find(subst(w)) != std::string::npos)
      return "output '" + one_line(out) + "' contains '" + subst(w) + "'";
  for (auto& w : string_list(expect.value("stdout_matches", json())))
    if (!std::regex_search(out, std::regex(subst(w), std::regex::multiline)))
      return "output '" + one_line(out) + "' does not match /" + subst(w) + "/" + tail;
  for (auto& w : string_list(expect.value("output_contains", json())))
    if ((out + r.err).find(subst(w)) == std::string::npos)
      return "stdout+stderr '" + one_line(out + " " + r.err) + "' lacks '" + subst(w) + "'";
  for (auto& w : string_list(expect.value("stderr_contains", json())))
    if (r.err.find(subst(w)) == std::string::npos)
      return "stderr '" + one_line(r.err) + "' lacks '" + subst(w) + "'";
  json fields = expect.value("json", json::object());
  if (expect.contains("status")) fields["/status"] = expect["status"];
  if (!fields.empty()) {
    auto doc = json::parse(out, nullptr, false);
    if (doc.is_discarded()) return "output is not JSON: '" + one_line(out) + "'";
    for (auto& [ptr, want_j] : fields.items()) {
      json::json_pointer p(ptr);
      bool present = doc.contains(p);
      std::string want = subst(as_text(want_j));
      if (want == "<absent>") {
        if (present) return ptr + " is present (" + as_text(doc[p]) + "), expected absent";
        continue;
      }
      if (!present) return ptr + " is missing in '" + one_line(out) + "'";
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
  }
  return "";
}

std::string CaseRun::check_step(const json& step, ProcResult& r) {
  r.exit_code = 0;
  if (step.contains("file")) {
    fs::path p = subst(as_text(step["file"]));
    auto content = try_read_file(p);
    if (!content) return "cannot read " + p.string();
    r.out = *content;
    if (step.contains("field")) {
      std::string field = as_text(step["field"]) + ":";
      std::istringstream in(*content);
      std::string line;
      bool found = false;
      while (std::getline(in, line))
        if (line.rfind(field, 0) == 0) {
          r.out = trim(line.substr(field.size()));
          found = true;
          break;
        }
      if (!found) return "no field " + field + " in " + p.string();
    }
    return "";
  }
  if (step.contains("exists") || step.contains("not_exists")) {
    bool want = step.contains("exists");
    fs::path p = subst(as_text(want ? step["exists"] : step["not_exists"]));
    std::error_code ec;
    bool is = fs::exists(fs::symlink_status(p, ec));
    if (is != want) return p.string() + (is ? " exists" : " does not exist");
    return "";
  }
  if (step.contains("ns")) {
    std::string type = as_text(step["ns"]);
    auto mine = readlink_or_empty(subst("/proc/{pid}/ns/" + type));
    auto ref = readlink_or_empty(subst(step.contains("ref") ? as_text(step["ref"]) : "/proc/self/ns/" + type));
    if (mine.empty() || ref.empty()) return "cannot read the " + type + " namespace links";
    r.out = mine == ref ? "same" : "differs";
    return "";
  }
  if (step.contains("cgroup")) {
    const json& cg = step["cgroup"];
    const char* mode = s_.host_.cgroup_v2 ? "v2" : "v1";
    if (!cg.contains(mode)) throw CaseSkip{std::string("not observable on cgroup ") + mode};
    std::string spec = as_text(cg[mode]);
    std::string cgpath = config_.at("/linux/cgroupsPath"_json_pointer).get<std::string>();
    fs::path p;
    if (s_.host_.cgroup_v2) {
      p = fs::path("/sys/fs/cgroup") / fs::path(cgpath).relative_path() / spec;
    } else {
      auto slash = spec.find('/');
      if (slash == std::string::npos) throw SuiteError("cgroup.v1 must be <controller>/<file>");
      auto ctrl = spec.substr(0, slash);
      auto it = s_.host_.v1_mounts.find(ctrl);
      if (it == s_.host_.v1_mounts.end()) throw CaseSkip{"cgroup v1 controller " + ctrl + " is not mounted"};
      p = it->second / fs::path(cgpath).relative_path() / spec.substr(slash + 1);
    }
    if (step.value("absent", false)) {
      if (fs::exists(p.parent_path())) return p.parent_path().string() + " still exists";
      return "";
    }
    auto content = try_read_file(p);
    if (!content) return "cannot read " + p.string();
    r.out = *content;
    return "";
  }
  if (step.contains("cgroup_of_pid")) {
    // The container process's cgroup for a v1 controller (or the unified one).
    std::string ctrl = as_text(step["cgroup_of_pid"]);
    std::istringstream in(read_file(subst("/proc/{pid}/cgroup")));
    std::string line;
    while (std::getline(in, line)) {
      auto a = line.find(':'), b = line.find(':', a + 1);
      if (a == std::string::npos || b == std::string::npos) continue;
      std::string ctrls = line.substr(a + 1, b - a - 1);
      bool match = s_.host_.cgroup_v2 ? ctrls.empty() : ("," + ctrls + ",").find("," + ctrl + ",") != std::string::npos;
      if (match) {
        r.out = line.substr(b + 1);
        return "";
      }
    }
    return "no " + ctrl + " line in /proc/<pid>/cgroup";
  }
  if (step.contains("host")) {
    ++step_no_;
    SpawnOptions o;
    o.argv = {"/bin/sh", "-c", subst(as_text(step["host"]))};
    o.stdout_file = dir_ / ("step" + std::to_string(step_no_) + ".out");
    o.stderr_file = dir_ / ("step" + std::to_string(step_no_) + ".err");
    r = run_process(o);
    if (s_.opt_.verbose)
      std::cerr << "    host$ " << o.argv[2] << " -> " << r.exit_code << " out: " << one_line(r.out) << "\n";
    return "";
  }
  throw SuiteError("check step needs one of file/exists/not_exists/ns/cgroup/cgroup_of_pid/host");
}

std::string CaseRun::run_step(const json& step_in) {
  json step = step_in.is_string() ? json{{"do", step_in}} : step_in;
  std::string action = step.at("do").get<std::string>();
  json expect = step.value("expect", json::object());
  ProcResult r;
  std::vector<std::string> extra = string_list(step.value("args", json()));
  for (auto& a : extra) a = subst(a);

  if (action == "create" || action == "run") {
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
    r = runtime(a, std::chrono::milliseconds(step.value("timeout_ms", 20000)));
    return verify(expect, r, true);
  }
  if (action == "start" || action == "state") {
    r = runtime({action, step_id(step)});
    return verify(expect, r, true);
  }
  if (action == "kill") {
    std::string id = step_id(step);
    r = runtime({"kill", id, extra.empty() ? "KILL" : extra[0]});
    return verify(expect, r, true);
  }
  if (action == "delete") {
    std::vector<std::string> a = {"delete"};
    if (step.value("force", false)) a.push_back("--force");
    a.push_back(step_id(step));
    r = runtime(a);
    return verify(expect, r, true);
  }
  if (action == "exec") {
    std::vector<std::string> a = {"exec", step_id(step)};
    a.insert(a.end(), extra.begin(), extra.end());
    r = runtime(a);
    return verify(expect, r, true);
  }
  if (action == "raw") {
    // Any runtime command line, for argument errors the typed steps cannot express.
    if (extra.empty()) throw SuiteError("raw step needs args");
    r = runtime(extra);
    return verify(expect, r, true);
  }
  if (action == "wait") {
    // Poll `state` until the wanted status; then the container's captured
    // output is what `expect` sees.
    std::string id = step_id(step);
    std::string want = step.value("status", std::string("stopped"));
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(step.value("timeout_ms", 10000));
    std::string last = "?";
    for (;;) {
      auto st = runtime({"state", id}, std::chrono::milliseconds(5000));
      auto doc = json::parse(st.out, nullptr, false);
      if (st.exit_code == 0 && !doc.is_discarded() && doc.contains("status")) last = as_text(doc["status"]);
      else if (step.value("or_gone", false)) break;  // destroyed counts as stopped
      else last = "<state failed: " + one_line(st.err, 120) + ">";
      if (last == want) break;
      if (std::chrono::steady_clock::now() > deadline)
        return "status stayed '" + last + "', waited for '" + want + "'";
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    r.exit_code = 0;
    if (console_) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));  // let the reader drain the pty
      r.out = console_->output();
    } else if (!container_out_.empty())
      r.out = try_read_file(container_out_).value_or("");
    if (!container_err_.empty()) r.err = try_read_file(container_err_).value_or("");
    return verify(expect, r, false);
  }
  if (action == "check") {
    auto fail = check_step(step, r);
    if (!fail.empty()) return fail;
    return verify(expect, r, step.contains("host"));
  }
  if (action == "background") {
    std::vector<std::string> argv = extra;
    pid_t pid = spawn_background(argv);
    bg_.push_back(pid);
    // Wait until it has exec'd the named program (its namespaces are set up).
    std::string comm = step.value("comm", std::string());
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!comm.empty()) {
      auto c = trim(try_read_file("/proc/" + std::to_string(pid) + "/comm").value_or(""));
      if (c == comm) break;
      if (std::chrono::steady_clock::now() > deadline) throw SuiteError("background process never became " + comm);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return "";
  }
  if (action == "patch_config") {
    auto cfg = json::parse(read_file(bundle_ / "config.json"));
    cfg.merge_patch(subst_json(step.at("config")));
    write_file(bundle_ / "config.json", cfg.dump(2));
    return "";
  }
  if (action == "sleep") {
    std::this_thread::sleep_for(std::chrono::milliseconds(step.value("ms", 100)));
    return "";
  }
  throw SuiteError("unknown step '" + action + "'");
}

Outcome CaseRun::execute() {
  for (auto& req : string_list(c_.doc.value("requires", json())))
    if (auto why = s_.host_.missing(req); !why.empty()) return {Outcome::Skip, why};
  fs::create_directories(dir_);
  s_.build_rootfs(rootfs_);
  fs::create_directories(log_);
  ::chmod(log_.c_str(), 0777);  // hooks and processes of any uid write here
  build_config();
  setup_files();
  const json& steps = c_.doc.at("steps");
  size_t i = 0;
  try {
    for (auto& step : steps) {
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
  for (auto& id : ids_) runtime({"delete", "--force", id}, std::chrono::milliseconds(10000));
  if (c_.doc.contains("cleanup_host")) {
    SpawnOptions o;
    o.argv = {"/bin/sh", "-c", subst(as_text(c_.doc["cleanup_host"]))};
    o.stdout_file = dir_ / "cleanup.out";
    o.stderr_file = dir_ / "cleanup.err";
    run_process(o);
  }
  for (pid_t p : bg_) kill_background(p);
  bg_.clear();
  console_.reset();
  // Leftover cgroups of this case: rmdir bottom-up (cgroupfs only allows rmdir).
  for (auto& mp : s_.host_.cgroup_mounts) {
    fs::path top = mp / fs::path(cgroup_).relative_path();
    std::error_code ec;
    if (!fs::is_directory(top, ec)) continue;
    std::vector<fs::path> dirs;
    for (auto it = fs::recursive_directory_iterator(top, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
      if (it->is_directory(ec) && !it->is_symlink(ec)) dirs.push_back(it->path());
    dirs.push_back(top);
    // Processes the runtime left behind in this case's own cgroup (e.g. after
    // a timed-out create) are ours: kill them so the cgroup can go.
    for (int attempt = 0; attempt < 50; ++attempt) {
      bool any = false;
      for (auto& d : dirs) {
        std::istringstream procs(try_read_file(d / "cgroup.procs").value_or(""));
        for (std::string pid; std::getline(procs, pid);)
          if (!trim(pid).empty()) {
            ::kill(std::stoi(pid), SIGKILL);
            any = true;
          }
      }
      if (!any) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    std::sort(dirs.begin(), dirs.end(), [](auto& a, auto& b) { return a.string().size() > b.string().size(); });
    for (auto& d : dirs) ::rmdir(d.c_str());
    if (::rmdir(top.c_str()) != 0 && errno != ENOENT)
      std::cerr << "  warning: cannot remove cgroup " << top.string() << ": " << std::strerror(errno) << "\n";
  }
  if (!s_.opt_.keep) {
    try {
      remove_tree(dir_);
    } catch (const SuiteError& e) {
      std::cerr << "  warning: " << e.what() << "\n";
    }
  }
}

void Suite::build_rootfs(const fs::path& rootfs) {
  for (auto d : {"bin", "sbin", "usr/bin", "usr/sbin", "etc", "proc", "sys", "dev", "tmp", "root", "home/user", "data", "mnt"})
    fs::create_directories(rootfs / d);
  ::chmod((rootfs / "tmp").c_str(), 01777);
  ::chmod((rootfs / "home/user").c_str(), 0777);
  fs::create_hard_link(busybox_, rootfs / "bin/busybox");
  for (auto& a : applets_) {
    fs::path link = rootfs / a;
    if (a == "bin/busybox" || fs::exists(fs::symlink_status(link))) continue;
    fs::create_directories(link.parent_path());
    fs::create_symlink("/bin/busybox", link);
  }
  write_file(rootfs / "etc/passwd",
             "root:x:0:0:root:/root:/bin/sh\n"
             "user:x:1000:1000:user:/home/user:/bin/sh\n"
             "nobody:x:65534:65534:nobody:/nonexistent:/bin/false\n");
  write_file(rootfs / "etc/group", "root:x:0:\nuser:x:1000:\nnogroup:x:65534:\n");
  write_file(rootfs / "etc/hostname", "conformance\n");
}

void Suite::prepare() {
  std::random_device rd;
  char buf[16];
  std::snprintf(buf, sizeof buf, "%06x", rd() & 0xffffff);
  run_id_ = buf;
  std::string tmpl = (fs::temp_directory_path() / "husk-conformance.XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) throw SuiteError("mkdtemp failed");
  tmp_ = tmpl;
  ::chmod(tmp_.c_str(), 0755);  // user-namespaced containers must traverse it
  root_ = tmp_ / "root";
  fs::create_directories(root_);
  fs::create_directories(tmp_ / "cases");

  // A distinctive oom_score_adj for the runtime to inherit, so a runtime that
  // resets it when process.oomScoreAdj is unset is caught (raising our own
  // value needs no privilege and only makes the runner likelier to be OOM-killed).
  if (host_.oom_score_adj == "0") {
    try {
      write_file("/proc/self/oom_score_adj", "7");
    } catch (const SuiteError&) {
    }
    host_.oom_score_adj = trim(try_read_file("/proc/self/oom_score_adj").value_or(""));
  }
  if (::access("/bin/busybox", X_OK) != 0) throw SuiteError("/bin/busybox is required (a static busybox)");
  busybox_ = tmp_ / "busybox";
  fs::copy_file("/bin/busybox", busybox_);
  ::chmod(busybox_.c_str(), 0755);
  SpawnOptions o;
  o.argv = {"/bin/busybox", "--list-full"};
  o.stdout_file = tmp_ / "applets";
  o.stderr_file = tmp_ / "applets.err";
  auto r = run_process(o);
  if (r.exit_code != 0) throw SuiteError("busybox --list-full failed");
  std::istringstream in(r.out);
  for (std::string l; std::getline(in, l);)
    if (!trim(l).empty()) applets_.push_back(trim(l));

  // The base config comes from the runtime itself (`spec`), as a user would get it.
  fs::path specdir = tmp_ / "spec";
  fs::create_directories(specdir);
  o.argv = {opt_.runtime.string(), "spec"};
  o.cwd = specdir;
  o.stdout_file = tmp_ / "spec.out";
  o.stderr_file = tmp_ / "spec.err";
  r = run_process(o);
  auto text = try_read_file(specdir / "config.json");
  if (r.exit_code != 0 || !text)
    throw SuiteError("`" + opt_.runtime.string() + " spec` failed: " + one_line(r.err));
  base_config_ = json::parse(*text);
}

void Suite::finish() {
  for (auto& mp : host_.cgroup_mounts) {
    ::rmdir((mp / "husk-conformance").c_str());  // only if no other run uses it
  }
  if (tmp_.empty()) return;
  if (!opt_.keep) {
    try {
      remove_tree(tmp_);
    } catch (const SuiteError& e) {
      std::cerr << "warning: " << e.what() << "\n";
    }
  } else {
    std::cerr << "kept " << tmp_.string() << "\n";
  }
}

Outcome Suite::run_case(const Case& c, size_t index) {
  CaseRun cr(*this, c, index);
  Outcome o;
  try {
    o = cr.execute();
  } catch (const std::exception& e) {
    o = {Outcome::Fail, std::string("suite error: ") + e.what()};
  }
  cr.cleanup();
  return o;
}

std::string md_escape(std::string s) {
  s = replace_all(s, "|", "\\|");
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}

int Suite::run(std::vector<Case>& cases) {
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
    if (opt_.verbose) std::cerr << "== " << c.name << "\n";
    auto t0 = std::chrono::steady_clock::now();
    Outcome o = run_case(c, index);
    o.note = replace_all(o.note, tmp_.string(), "$TMP");  // keep notes short and stable
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
  std::cout << "\n" << table.str() << "\n";
  std::cout << "runtime: " << opt_.runtime.string() << ", " << cases.size() << " cases in " << secs << " s\n";
  if (!opt_.markdown.empty()) {
    std::ostringstream md;
    md << "Conformance of `" << opt_.runtime.filename().string() << "`: " << passed << " passed, " << failed
       << " failed, " << skipped << " skipped\n\n"
       << table.str();
    write_file(opt_.markdown, md.str());
  }
  std::cout << passed << " passed, " << failed << " failed, " << skipped << " skipped" << std::endl;
  return failed == 0 && !g_interrupted ? 0 : 1;
}

std::vector<Case> load_cases(const Options& opt) {
  std::vector<fs::path> files;
  if (!fs::is_directory(opt.cases_dir)) throw SuiteError("no cases directory " + opt.cases_dir.string());
  for (auto& e : fs::directory_iterator(opt.cases_dir))
    if (e.path().extension() == ".yaml") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::vector<Case> out;
  for (auto& f : files) {
    Case c;
    c.file = f;
    c.name = f.stem().string();
    if (!opt.filters.empty() &&
        std::none_of(opt.filters.begin(), opt.filters.end(), [&](auto& s) { return c.name.find(s) != std::string::npos; }))
      continue;
    try {
      c.doc = yaml_to_json(YAML::LoadFile(f.string()));
    } catch (const YAML::Exception& e) {
      throw SuiteError(f.string() + ": " + e.what());
    }
    if (!c.doc.is_object()) throw SuiteError(f.string() + ": not a mapping");
    for (auto key : {"requirement", "section", "level", "steps"})
      if (!c.doc.contains(key)) throw SuiteError(f.string() + ": missing '" + key + "'");
    static const std::set<std::string> known = {"requirement", "section", "level", "requires", "command", "config",
                                                "append", "remove", "raw_config", "files", "steps", "description",
                                                "cleanup_host"};
    for (auto& [k, v] : c.doc.items())
      if (!known.count(k)) throw SuiteError(f.string() + ": unknown key '" + k + "'");
    if (!c.doc["steps"].is_array() || c.doc["steps"].empty()) throw SuiteError(f.string() + ": steps must be a non-empty list");
    static const std::set<std::string> step_keys = {"do", "expect", "id", "args", "force", "status", "timeout_ms",
                                                    "or_gone", "comm", "config", "ms", "file", "field", "exists",
                                                    "not_exists", "ns", "ref", "cgroup", "absent", "cgroup_of_pid",
                                                    "host"};
    static const std::set<std::string> expect_keys = {"exit", "stdout", "stdout_contains", "stdout_not_contains",
                                                      "stdout_matches", "stderr_contains", "output_contains",
                                                      "json", "status"};
    // A misspelt key would silently check nothing: refuse it.
    for (auto& step : c.doc["steps"]) {
      if (step.is_string()) continue;
      if (!step.is_object() || !step.contains("do")) throw SuiteError(f.string() + ": a step needs 'do'");
      for (auto& [k, v] : step.items())
        if (!step_keys.count(k)) throw SuiteError(f.string() + ": unknown step key '" + k + "'");
      if (step.contains("expect"))
        for (auto& [k, v] : step["expect"].items())
          if (!expect_keys.count(k)) throw SuiteError(f.string() + ": unknown expect key '" + k + "'");
    }
    c.requirement = as_text(c.doc["requirement"]);
    c.section = as_text(c.doc["section"]);
    c.level = as_text(c.doc["level"]);
    if (c.level != "MUST" && c.level != "SHOULD") throw SuiteError(f.string() + ": level must be MUST or SHOULD");
    out.push_back(std::move(c));
  }
  return out;
}

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
