// The systemd driver: a transient scope started through husk-systemd (the
// sd-bus bridge), with the cgroupfs manager (v2, or v1 on a hybrid/legacy
// host) for the scope's files.
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/fd.h"
#include "base/file.h"
#include "cgroups/internal.h"
#include "cgroups/systemd.h"


namespace husk::cgroups {

namespace {

using nlohmann::json;

constexpr const char* kHandle = "systemd:";
constexpr const char* kUserHandle = "systemd-user:";

json to_json(const UnitProperty& p) {
  json value;
  std::visit([&value](const auto& v) { value = v; }, p.value);
  return {{"name", p.name}, {"type", p.signature()}, {"value", value}};
}

void write_all(int fd, const std::string& text) {
  for (size_t off = 0; off < text.size();) {
    ssize_t n = ::write(fd, text.data() + off, text.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    off += static_cast<size_t>(n);
  }
}

std::string read_all(int fd) {
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    if (out.size() < (1 << 20)) out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

// husk-systemd is dynamically linked and runs as root: of husk's environment
// it gets the variables that choose the bus alone, none of the loader's.
std::vector<std::string> bridge_environment() {
  std::vector<std::string> env;
  for (const char* name : {"DBUS_SYSTEM_BUS_ADDRESS", "DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR"})
    if (const char* v = std::getenv(name)) env.push_back(std::string(name) + "=" + v);
  return env;
}

// One request to husk-systemd (its protocol: stdin one JSON object, stdout
// the reply); an error reply throws with systemd's message and errno.
json call_bridge(const std::string& bridge, const json& request, const std::string& what) {
  int in[2], out[2];
  if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0) throw sys_error(what + ": pipe");
  base::Fd in_rd(in[0]), in_wr(in[1]), out_rd(out[0]), out_wr(out[1]);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in_rd.get(), 0);
  posix_spawn_file_actions_adddup2(&fa, out_wr.get(), 1);
  char* argv[] = {const_cast<char*>(bridge.c_str()), nullptr};
  std::vector<std::string> env = bridge_environment();
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t child;
  int rc = posix_spawn(&child, bridge.c_str(), &fa, nullptr, argv, envp.data());
  posix_spawn_file_actions_destroy(&fa);
  in_rd.reset();
  out_wr.reset();
  if (rc != 0) throw sys_error(what + ": run " + bridge + " (husk's sd-bus helper)", rc);
  // A bridge that died early closes its stdin: its status says why.
  write_all(in_wr.get(), request.dump());
  in_wr.reset();
  std::string reply = read_all(out_rd.get());
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  json j = json::parse(reply, nullptr, false);
  if (j.is_object() && j.contains("error"))
    throw Error(what + ": " + j.value("error", std::string()), j.value("errno", 0));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !j.is_object())
    throw Error(what + ": " + bridge + " failed (status " + std::to_string(status) + ")");
  return j;
}

class SystemdManager : public Manager {
 public:
  explicit SystemdManager(const Config& c)
      : config_(c), path_(c.path), unit_(c.unit), user_(c.user_manager), mark_(c) {
    const std::string& h = c.handle;
    if (unit_.empty()) {
      user_ = h.rfind(kUserHandle, 0) == 0;
      unit_ = h.substr(std::string(user_ ? kUserHandle : kHandle).size());
    }
    if (!c.handle.empty()) inner_ = open_inner(path_);
  }

  const std::string& path() const override { return path_; }

  std::string prepare() override {
    if (user_ && v1())
      throw Error("--systemd-cgroup: a user's systemd instance needs a cgroup v2 (unified) host; this one is " +
                  std::string(hier().mode == Mode::hybrid ? "hybrid" : "legacy"));
    if (!user_ && !is_dir("/run/systemd/system"))
      throw Error("--systemd-cgroup: systemd is not running on this host (no /run/systemd/system); use cgroupfs");
    if (::access(config_.bridge.c_str(), X_OK) != 0)
      throw sys_error("--systemd-cgroup: husk's sd-bus helper " + config_.bridge +
                      " (installed next to husk or in <prefix>/libexec/husk)");
    return (user_ ? kUserHandle : kHandle) + unit_;
  }

  // Before the scope exists (create): kept for attach(), which starts it.
  void apply(const spec::Resources& res) override {
    spec::Resources r = res;
    if (inner_) fill_quota(r);  // before the rounding, which depends on the period
    r = systemd_resources(r);
    if (!inner_) {
      pending_ = r;
      return;
    }
    call("set", {{"properties", properties(resource_props(r))}});
    scope().apply(r);
  }

  int clone_into_fd() override { return -1; }

  void attach(pid_t pid, bool) override {
    if (inner_) {
      try {
        return inner_->attach(pid, false);
      } catch (const Error& e) {
        // The kernel's rule for a move: write access to the common ancestor's cgroup.procs.
        if (!user_ || e.err() != EACCES) throw;
        throw Error(std::string(e.what()) + " (an unprivileged caller moves a process into the scope only "
                    "from a cgroup of its own systemd instance: run husk in the user's session, e.g. "
                    "under systemd-run --user --scope)", e.err());
      }
    }
    start(pid);
  }
  void attach_self(bool) override { throw Error("cgroup " + path_ + ": systemd places the init itself"); }
  bool self_attachable() const override { return false; }
  void freeze() override { scope().freeze(); }
  void thaw() override { scope().thaw(); }
  bool frozen() override { return scope().frozen(); }
  std::vector<pid_t> pids() override { return inner_ ? inner_->pids() : std::vector<pid_t>{}; }
  void kill_all(int sig) override {
    if (inner_) inner_->kill_all(sig);
  }

  // Stops the scope (systemd removes its cgroup) only when its cgroup
  // carries our mark: a record naming another unit never stops it. A scope
  // whose processes all exited is gone already, unless systemd keeps it
  // loaded as failed (an OOM kill): reset-failed lets the name be used again.
  // Callers kill the processes first and systemd drops an empty scope by
  // itself: as with runc, only a stop job that timed out (processes that
  // will not die) fails; a missing helper or bus does not keep the container.
  void destroy() override {
    if (!inner_) return;  // never started
    const Mark::Found found = mark_.find(mark_root() + path_);
    if (found == Mark::Found::other) return;
    try {
      call(found == Mark::Found::ours ? "stop" : "reset", {});
    } catch (const Error& e) {
      if (e.err() == ETIMEDOUT) throw;
      if (config_.log) config_.log(e.what());
    }
    inner_->destroy();
  }
  Stats stats() override { return scope().stats(); }
  uint64_t oom_kills() override { return scope().oom_kills(); }
  // The scope is made for this container alone; systemd removes it once empty.
  std::vector<std::string> created() const override { return {path_}; }
  // Gone counts too: destroy() then only resets a failed unit of that name.
  bool owned() const override {
    for (const auto& r : roots())
      if (mark_.find(r + path_) == Mark::Found::other) return false;
    return true;
  }

 private:
  const Hierarchies& hier() const { return config_.hierarchies ? *config_.hierarchies : host_hierarchies(); }
  bool v1() const { return hier().mode != Mode::unified; }
  const std::string& root() const { return hier().unified; }
  // Where systemd always has the scope: the unified hierarchy, or its own
  // name=systemd one on a legacy host.
  std::string mark_root() const {
    auto it = hier().v1.find("name=systemd");
    return hier().mode == Mode::legacy && it != hier().v1.end() ? it->second : root();
  }
  // Every hierarchy the scope has a directory in.
  std::vector<std::string> roots() const {
    std::set<std::string> out;
    for (const auto& [ctl, m] : hier().v1) out.insert(m);
    if (!root().empty()) out.insert(root());
    return {out.begin(), out.end()};
  }
  std::vector<UnitProperty> resource_props(const spec::Resources& r) const {
    return v1() ? v1_resource_properties(r, device_groups()) : resource_properties(r, bfq(), device_groups());
  }
  Manager& scope() const {
    if (!inner_) throw Error("systemd: " + unit_ + " is not started");
    return *inner_;
  }
  bool bfq() const { return file_exists(root() + path_ + "/io.bfq.weight"); }

  std::unique_ptr<Manager> open_inner(const std::string& path) const {
    Config c = config_;
    c.driver = Driver::cgroupfs;
    c.path = path;
    c.handle.clear();
    c.created = {path};  // destroy() removes what is left of the scope when it carries our mark
    c.rootless = user_;
    return v1() ? make_legacy(c, hier()) : make_unified(c, hier());
  }

  static DeviceGroups device_groups() {
    return parse_proc_devices(base::try_read_file("/proc/devices").value_or(""));
  }

  static json properties(const std::vector<UnitProperty>& props) {
    json out = json::array();
    for (const auto& p : props) out.push_back(to_json(p));
    return out;
  }

  json call(const std::string& method, json request) const {
    request["bus"] = user_ ? "user" : "system";
    request["method"] = method;
    request["unit"] = unit_;
    return call_bridge(config_.bridge, request, "systemd: " + method + " " + unit_);
  }

  // cpu.max holds quota and period together: a new period alone keeps the
  // quota in force (as the cgroupfs manager does), in the unit too. On v1
  // the unit's quota per second is computed with the period: the other one
  // comes from its file.
  void fill_quota(spec::Resources& r) const {
    if (!r.cpu) return;
    const bool period = r.cpu->period.value_or(0) != 0, quota = r.cpu->quota.value_or(0) != 0;
    if (!v1()) return keep_quota(r, root() + path_ + "/cpu.max");
    auto cpu = hier().v1.find("cpu");
    if (period == quota || cpu == hier().v1.end()) return;
    const std::string file = cpu->second + path_ + (quota ? "/cpu.cfs_period_us" : "/cpu.cfs_quota_us");
    auto cur = base::try_read_file(file);
    if (!cur) return;
    if (quota) r.cpu->period = parse_u64(*cur, file);
    else if (int64_t q = parse_i64(*cur, file); q > 0) r.cpu->quota = q;
  }

  void start(pid_t pid);

  Config config_;
  std::string path_, unit_;
  bool user_;
  Mark mark_;
  spec::Resources pending_;
  std::unique_ptr<Manager> inner_;
};

// The scope with the init in it and the limits as properties; then marked
// ours, the controllers systemd does not manage enabled on the way (as
// cgroupfs prepare() does) and every file written. A failure stops it again.
void SystemdManager::start(pid_t pid) {
  SystemdUnit u{config_.slice, unit_, path_};
  auto props = scope_properties(u, pid, resource_props(pending_), v1());
  json reply = call("start", {{"properties", properties(props)}});
  try {
    path_ = reply.value("controlGroup", std::string());
    if (path_.empty() || path_[0] != '/' || path_ == "/")
      throw Error("systemd: start " + unit_ + ": no cgroup for the unit (ControlGroup \"" + path_ + "\")");
    mark_.put(mark_root() + path_);
    inner_ = open_inner(path_);
    inner_->prepare();
    if (v1()) {
      // systemd made the scope in its own hierarchies (those with a
      // directory now) and put the init there; prepare() made the rest.
      for (const auto& r : roots())
        if (r != mark_root() && is_dir(r + path_)) mark_.put(r + path_);
      inner_ = open_inner(path_);  // created: the scope in every hierarchy, for destroy()
      inner_->attach(pid, false);
    }
    inner_->apply(pending_);
  } catch (...) {
    try {
      call("stop", {});
      if (inner_ && v1()) inner_->destroy();  // the hierarchies systemd does not manage
    } catch (const Error&) {
    }
    throw;
  }
}

}  // namespace

std::unique_ptr<Manager> make_systemd(const Config& c) {
  // A recorded scope's cgroup is named after it (or "_" and its name: systemd
  // escapes a name starting with "_" or "." or a controller's name and a dot):
  // a record pairing another unit with some cgroup is not one husk wrote.
  if (!c.handle.empty()) {
    const std::string unit = c.handle.substr(c.handle.find(':') + 1);
    const bool scope = unit.size() > 6 && unit.compare(unit.size() - 6, 6, ".scope") == 0;
    const std::string leaf = c.path.substr(c.path.rfind('/') + 1);
    if (!scope || c.path.find('/') == std::string::npos || (leaf != unit && leaf != "_" + unit))
      throw Error("cgroup handle \"" + c.handle + "\" is not the systemd driver's for " + c.path);
  }
  return std::make_unique<SystemdManager>(c);
}

bool is_systemd_handle(const std::string& handle) {
  return handle.rfind(kHandle, 0) == 0 || handle.rfind(kUserHandle, 0) == 0;
}

}  // namespace husk::cgroups
