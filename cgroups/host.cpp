// The host's hierarchies, the manager factory, and the questions about a
// cgroup path that need no manager (does it exist, who is in it).
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <sstream>

#include "base/file.h"
#include "base/mountinfo.h"
#include "base/path.h"
#include "cgroups/cgroups.h"
#include "cgroups/internal.h"

namespace husk::cgroups {

namespace {

constexpr const char* kRoot = "/sys/fs/cgroup";

const char* const kV1Controllers[] = {"cpu",     "cpuacct", "cpuset",   "memory",  "devices",    "freezer", "blkio",
                                      "pids",    "net_cls", "net_prio", "hugetlb", "perf_event", "rdma",    "misc"};

// controller -> mount point of its v1 hierarchy, from /proc/self/mountinfo.
std::map<std::string, std::string> read_v1_mounts() {
  std::map<std::string, std::string> out;
  for (const auto& m : base::read_mountinfo()) {
    if (m.fstype != "cgroup") continue;
    std::istringstream os(m.super_options);
    for (std::string o; std::getline(os, o, ',');) {
      for (const char* c : kV1Controllers)
        if (o == c && !out.count(o)) out[o] = m.mount_point;
      // No controller, but runc places containers there too (systemd and
      // tools reading /proc/<pid>/cgroup expect the same path in it).
      if (o == "name=systemd" && !out.count(o)) out[o] = m.mount_point;
    }
  }
  return out;
}

bool is_cgroup2(const std::string& path) {
  struct statfs st;
  return statfs(path.c_str(), &st) == 0 && st.f_type == CGROUP2_SUPER_MAGIC;
}

Hierarchies detect(const std::string& root) {
  Hierarchies h;
  if (is_cgroup2(root)) {
    h.unified = root;
    return h;
  }
  h.mode = is_cgroup2(root + "/unified") ? Mode::hybrid : Mode::legacy;
  if (h.mode == Mode::hybrid) h.unified = root + "/unified";
  h.v1 = read_v1_mounts();
  return h;
}

// /proc/<pid>/cgroup as (hierarchy id, controllers, path); empty when unreadable.
struct ProcCgroup {
  std::string id, controllers, path;
};
std::vector<ProcCgroup> read_proc_cgroup(const std::string& file) {
  std::vector<ProcCgroup> out;
  std::optional<std::string> text;
  try {
    text = base::try_read_file(file);
  } catch (const Error&) {
    return out;  // the process is gone
  }
  std::istringstream in(text.value_or(""));
  for (std::string line; std::getline(in, line);) {
    auto a = line.find(':'), b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    out.push_back({line.substr(0, a), line.substr(a + 1, b - a - 1), line.substr(b + 1)});
  }
  return out;
}

bool managed(const ProcCgroup& c, const Hierarchies& h) {
  if (c.id == "0") return h.mode != Mode::legacy;
  if (h.mode == Mode::unified) return false;
  std::istringstream in(c.controllers);
  // Not name=systemd: husk placed nothing there before, so its containers
  // from then sit at / in it and must still be recognised.
  for (std::string ctl; std::getline(in, ctl, ',');)
    if (ctl != "name=systemd" && h.v1.count(ctl)) return true;
  return false;
}

}  // namespace

const Hierarchies& host_hierarchies() {
  static const Hierarchies h = detect(kRoot);
  return h;
}

Mode detect_mode() { return host_hierarchies().mode; }

std::unique_ptr<Manager> make_manager(const Config& c) {
  if (c.driver == Driver::none) return make_none(c);
  const std::string& path = c.path;
  const bool dotdot = path.find("/../") != std::string::npos ||
                      (path.size() >= 3 && path.compare(path.size() - 3, 3, "/..") == 0);
  if (path.empty() || path[0] != '/' || path == "/" || dotdot)
    throw Error("cgroup path \"" + path + "\" must be absolute, not the root and without \"..\" (use resolve_path)");
  if (c.driver == Driver::systemd || is_systemd_handle(c.handle)) return make_systemd(c);
  // cgroupfs hands out the path itself: any other handle was not its own.
  if (!c.handle.empty() && c.handle != path)
    throw Error("cgroup handle \"" + c.handle + "\" is not the cgroupfs driver's for " + path);
  const Hierarchies& h = c.hierarchies ? *c.hierarchies : host_hierarchies();
  if (h.mode == Mode::unified) return make_unified(c, h);
  if (c.rootless) throw Error("cgroup " + path + ": rootless husk uses only a delegated cgroup v2 hierarchy, not v1");
  return make_legacy(c, h);
}

bool exists(const std::string& path, const Hierarchies& h) {
  if (h.mode == Mode::unified) return is_dir(h.unified + path);
  if (h.mode == Mode::hybrid && is_dir(h.unified + path)) return true;
  for (const auto& [c, mnt] : h.v1)
    if (is_dir(mnt + path)) return true;
  return false;
}

bool contains_self(const std::string& path) {
  if (path == "/") return true;
  for (const auto& c : read_proc_cgroup("/proc/self/cgroup"))
    if (base::is_within(c.path, path)) return true;
  return false;
}

std::string unified_cgroup_of(pid_t pid) {
  for (const auto& c : read_proc_cgroup("/proc/" + std::to_string(pid) + "/cgroup"))
    if (c.id == "0") return c.path;
  return "";
}

std::string cgroup_of(pid_t pid, const Hierarchies& h) {
  std::string path;
  for (const auto& c : read_proc_cgroup("/proc/" + std::to_string(pid) + "/cgroup")) {
    if (!managed(c, h)) continue;
    if (!path.empty() && c.path != path) return "";
    path = c.path;
  }
  return path;
}

bool process_in(pid_t pid, const std::string& path, const Hierarchies& h) {
  bool any = false;
  for (const auto& c : read_proc_cgroup("/proc/" + std::to_string(pid) + "/cgroup")) {
    if (!managed(c, h)) continue;
    if (!base::is_within(c.path, path)) return false;
    any = true;
  }
  return any;
}

RootlessHost rootless_host() {
  RootlessHost h;
  h.mode = host_hierarchies().mode;
  h.own = unified_cgroup_of(::getpid());
  h.uid = ::geteuid();
  const std::string root = host_hierarchies().unified;
  // AT_EACCESS: the effective ids decide, as they will for the mkdir and the moves.
  h.access = [root](const std::string& path) {
    const std::string dir = root + (path == "/" ? "" : path);
    if (!is_dir(dir)) return Access::missing;
    bool w = ::faccessat(AT_FDCWD, dir.c_str(), W_OK | X_OK, AT_EACCESS) == 0 &&
             ::faccessat(AT_FDCWD, (dir + "/cgroup.procs").c_str(), W_OK, AT_EACCESS) == 0;
    return w ? Access::writable : Access::not_writable;
  };
  return h;
}

void check_host(const spec::Resources& r) {
  if (!r.cpu || (r.cpu->cpus.empty() && r.cpu->mems.empty())) return;
  auto cpus = base::try_read_file("/sys/devices/system/cpu/online").value_or("");
  // Kernels without NUMA have no node directory: node 0 only.
  auto mems = base::try_read_file("/sys/devices/system/node/online").value_or("0");
  check_cpuset(r, cpus, mems);
}

}  // namespace husk::cgroups
