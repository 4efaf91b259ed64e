#include "container/state.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <nlohmann/json.hpp>

#include "base/dir.h"
#include "base/error.h"
#include "base/fd.h"
#include "base/file.h"
#include "base/log.h"
#include "base/path.h"
#include "base/process.h"
#include "cgroups/cgroups.h"
#include "container/rootless.h"
#include "launch/self_exe.h"
#include "namespaces/id_maps.h"

namespace husk::rt {

using base::Fd;
using json = nlohmann::json;

namespace {

// Someone else owning it, or able to write to it, could plant a state.json
// that makes husk signal or remove what is not a container's.
void check_private(int fd, const std::string& shown) {
  struct stat st;
  if (::fstat(fd, &st) != 0) throw sys_error("stat " + shown);
  if (st.st_uid != ::geteuid())
    throw Error(shown + ": owned by uid " + std::to_string(st.st_uid) + ", not by the caller (uid " +
                std::to_string(::geteuid()) + "); refusing to use it");
  if (st.st_mode & (S_IWGRP | S_IWOTH)) {
    char mode[8];
    snprintf(mode, sizeof mode, "%04o", st.st_mode & 07777);
    throw Error(shown + ": writable by group or others (mode " + mode + "); refusing to use it");
  }
}

void lock(int fd, const std::string& dir) {
  while (::flock(fd, LOCK_EX) != 0)
    if (errno != EINTR) throw sys_error("lock " + dir);
}

const json& member(const json& j, const char* key) {
  static const json null;
  auto it = j.find(key);
  return it == j.end() ? null : *it;
}

std::string str(const json& j, const char* key) {
  const json& v = member(j, key);
  if (v.is_null()) return "";
  if (!v.is_string()) throw Error(std::string(key) + ": must be a string");
  return v.get<std::string>();
}

}  // namespace

Store::Store(std::string root) : root_(std::move(root)) {
  // default_state_root() found none: a non-root caller without XDG_RUNTIME_DIR.
  if (root_.empty())
    throw Error("state root: XDG_RUNTIME_DIR is not set (a non-root user's default is $XDG_RUNTIME_DIR/husk); "
                "give --root DIR");
}

void Store::check_id(const std::string& id) {
  // A leading dot is refused: list skips such entries.
  bool ok = !id.empty() && id[0] != '.' && id.size() <= 1024;
  for (char c : id)
    if (!(isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '+' || c == '-' || c == '.'))
      ok = false;
  if (!ok) throw Error("invalid container id " + quote(id) + ": must match [A-Za-z0-9_+-][A-Za-z0-9_+.-]*");
}

Fd Store::open_root(bool create) const {
  if (create) base::mkdir_all(root_, 0700);
  Fd fd(::open(root_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) {
    if (errno == ENOENT && !create) return fd;
    throw sys_error("open state root " + root_);
  }
  check_private(fd.get(), "state root " + root_);
  return fd;
}

std::vector<std::string> Store::ids() const {
  std::vector<std::string> out;
  Fd root = open_root(false);
  if (!root) return out;
  base::Dir d = base::open_dir(root.get());
  if (!d) throw sys_error("read state root " + root_);
  while (dirent* e = readdir(d.get())) {
    if (e->d_name[0] == '.') continue;
    struct stat st;
    bool dir = e->d_type == DT_DIR || (e->d_type == DT_UNKNOWN &&
                                       ::fstatat(root.get(), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                                       S_ISDIR(st.st_mode));
    if (dir) out.emplace_back(e->d_name);
  }
  return out;
}

Handle Handle::create(const Store& store, const std::string& id) {
  Store::check_id(id);
  Handle h;
  h.id_ = id;
  h.dir_ = store.dir(id);
  h.root_fd_ = store.open_root(true);
  if (::mkdirat(h.root_fd_.get(), id.c_str(), 0700) != 0) {
    if (errno == EEXIST) throw Error("container with id " + quote(id) + " already exists");
    throw sys_error("mkdir " + h.dir_);
  }
  h.fd_ = Fd(::openat(h.root_fd_.get(), id.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!h.fd_) throw sys_error("open " + h.dir_);
  lock(h.fd_.get(), h.dir_);
  return h;
}

// Opens <root>/<id> (never through a symlink); an invalid fd_ when it is missing.
Handle Handle::open_locked(const Store& store, const std::string& id, bool locked, bool require_state) {
  Store::check_id(id);
  Handle h;
  h.id_ = id;
  h.dir_ = store.dir(id);
  h.root_fd_ = store.open_root(false);
  if (!h.root_fd_) return h;
  Fd fd(::openat(h.root_fd_.get(), id.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) {
    if (errno == ENOENT) return h;
    if (errno == ELOOP || errno == ENOTDIR) throw Error(h.dir_ + ": not a directory (a symlink?); refusing to follow it");
    throw sys_error("open " + h.dir_);
  }
  check_private(fd.get(), h.dir_);
  if (locked) lock(fd.get(), h.dir_);
  // A concurrent delete may have removed it while we waited for the lock.
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) throw sys_error("stat " + h.dir_);
  if (st.st_nlink == 0) return h;
  if (require_state && ::fstatat(fd.get(), "state.json", &st, AT_SYMLINK_NOFOLLOW) != 0) return h;
  h.fd_ = std::move(fd);
  return h;
}

Handle Handle::open(const Store& store, const std::string& id, bool lock) {
  Handle h = open_locked(store, id, lock, true);
  if (!h.fd_) throw Error("container " + quote(id) + " does not exist", ENOENT);
  return h;
}

std::optional<Handle> Handle::open_dir(const Store& store, const std::string& id) {
  Store::check_id(id);
  Fd root = store.open_root(false);
  struct stat st;
  if (!root) return std::nullopt;
  if (::fstatat(root.get(), id.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return std::nullopt;
    throw sys_error("stat " + store.dir(id));
  }
  if (!S_ISDIR(st.st_mode)) {
    // Only the entry in our root goes, never what a symlink points to.
    if (::unlinkat(root.get(), id.c_str(), 0) != 0 && errno != ENOENT) throw sys_error("remove " + store.dir(id));
    return std::nullopt;
  }
  Handle h = open_locked(store, id, true, false);
  if (!h.fd_) return std::nullopt;
  return h;
}

void Handle::unlock() const { ::flock(fd_.get(), LOCK_UN); }

bool Handle::held_elsewhere() const {
  // Our own open of the directory gets no shared lock while another holds it exclusively.
  if (::flock(fd_.get(), LOCK_SH | LOCK_NB) == 0) {
    ::flock(fd_.get(), LOCK_UN);
    return false;
  }
  return errno == EWOULDBLOCK;
}

Record parse_record(const std::string& text) {
  try {
    json j = json::parse(text);
    if (!j.is_object()) throw Error("must be a JSON object");
    Record r;
    r.oci.oci_version = str(j, "ociVersion");
    r.oci.id = str(j, "id");
    r.oci.status = str(j, "status");
    // "paused" is never recorded: live_status reads it off the freezer.
    auto recorded = parse_status(r.oci.status);
    if (!recorded || *recorded == Status::paused)
      throw Error("status: \"" + r.oci.status + "\" is not creating, created, running or stopped");
    const json& pid = member(j, "pid");
    if (!pid.is_null()) {
      if (!pid.is_number_integer() || pid.get<int64_t>() < 0 || pid.get<int64_t>() > INT_MAX)
        throw Error("pid: must be an integer from 0 to " + std::to_string(INT_MAX));
      r.oci.pid = static_cast<pid_t>(pid.get<int64_t>());
    }
    r.oci.bundle = str(j, "bundle");
    r.oci.rootfs = str(j, "rootfs");
    r.oci.created = str(j, "created");
    r.oci.owner = str(j, "owner");
    const json& ann = member(j, "annotations");
    if (!ann.is_null()) {
      if (!ann.is_object()) throw Error("annotations: must be an object");
      for (const auto& [k, v] : ann.items()) {
        if (!v.is_string()) throw Error("annotations: \"" + k + "\" must be a string");
        r.oci.annotations[k] = v.get<std::string>();
      }
    }
    const json& start = member(j, "initStartTime");
    if (!start.is_null()) {
      if (!start.is_number_unsigned()) throw Error("initStartTime: must be a non-negative integer");
      r.start_time = start.get<uint64_t>();
    }
    r.cgroup_path = str(j, "cgroupPath");
    // Only a path create could have resolved, so nothing outside the container's own.
    if (!r.cgroup_path.empty() && cgroups::resolve_path(r.cgroup_path, r.oci.id) != r.cgroup_path)
      throw Error("cgroupPath: \"" + r.cgroup_path + "\" is not a normalised absolute cgroup path");
    const json& made = member(j, "cgroupCreated");
    if (!made.is_null()) {
      if (!made.is_array()) throw Error("cgroupCreated: must be an array");
      for (const auto& c : made) {
        if (!c.is_string() || c.get<std::string>().size() < 2 || c.get<std::string>()[0] != '/' ||
            !base::is_within(r.cgroup_path, c.get<std::string>()))
          throw Error("cgroupCreated: entries must be cgroupPath or its ancestors below the root");
        r.cgroup_created.push_back(c.get<std::string>());
      }
    }
    r.cgroup_handle = str(j, "cgroupHandle");  // absent in a state.json from before handles
    const json& rootless = member(j, "cgroupRootless");
    if (!rootless.is_null() && !rootless.is_boolean()) throw Error("cgroupRootless: must be a boolean");
    r.cgroup_rootless = rootless.is_boolean() && rootless.get<bool>();
    r.no_cgroup = str(j, "noCgroup");
    if (!r.no_cgroup.empty() && !r.cgroup_path.empty()) throw Error("noCgroup: given with a cgroupPath");
    return r;
  } catch (const json::exception& e) {
    throw Error(e.what());
  }
}

namespace {

// A --root shared with runc (containerd's shim root): runc's own state.json
// (libcontainer's, with init_process_pid) must never be read as husk's, nor
// its container removed as a broken husk one.
void check_written_by_husk(const std::string& text, const std::string& shown) {
  json j = json::parse(text, nullptr, false);
  if (j.is_object() && !j.contains("initStartTime") && j.contains("init_process_pid"))
    throw Error(shown + ": written by runc, not husk; refusing to touch the container (give husk its own --root)");
}

}  // namespace

void Handle::check_ours() const {
  const std::string shown = dir_ + "/state.json";
  struct stat st;
  if (::fstatat(fd_.get(), "state.json", &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) return;
  std::string text;
  try {
    text = spec::read_json_file_at(fd_.get(), "state.json", shown);
  } catch (const Error&) {
    return;  // unreadable: the broken-state path deals with it
  }
  check_written_by_husk(text, shown);
}

Record Handle::load() const {
  const std::string shown = dir_ + "/state.json";
  std::string text = spec::read_json_file_at(fd_.get(), "state.json", shown);
  check_written_by_husk(text, shown);
  try {
    Record r = parse_record(text);
    if (r.oci.id != id_) throw Error("id: " + quote(r.oci.id) + " is not the container's (" + quote(id_) + ")");
    return r;
  } catch (const Error& e) {
    rethrow_with(shown, e);
  }
}

void Handle::save(const Record& r) const {
  json j = {{"ociVersion", r.oci.oci_version}, {"id", r.oci.id},         {"status", r.oci.status},
            {"pid", r.oci.pid},                {"bundle", r.oci.bundle}, {"rootfs", r.oci.rootfs},
            {"created", r.oci.created},        {"owner", r.oci.owner},   {"annotations", r.oci.annotations},
            {"initStartTime", r.start_time},   {"cgroupPath", r.cgroup_path},
            {"cgroupCreated", r.cgroup_created}, {"cgroupHandle", r.cgroup_handle},
            {"cgroupRootless", r.cgroup_rootless}, {"noCgroup", r.no_cgroup}};
  base::write_file_atomic(fd_.get(), "state.json", j.dump(), 0600, dir_ + "/state.json");
}

spec::Spec Handle::config() const {
  return spec::parse(spec::read_json_file_at(fd_.get(), "config.json", dir_ + "/config.json"));
}

void Handle::save_config(const std::string& json_text) const {
  base::write_file_atomic(fd_.get(), "config.json", json_text, 0600, dir_ + "/config.json");
}

std::vector<pid_t> Handle::fifo_holders() const {
  std::vector<pid_t> out;
  struct stat fifo;
  if (::fstatat(fd_.get(), "exec.fifo", &fifo, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISFIFO(fifo.st_mode)) return out;
  base::Dir proc(opendir("/proc"));
  if (!proc) throw sys_error("open /proc");
  while (dirent* e = readdir(proc.get())) {
    char* end;
    long pid = strtol(e->d_name, &end, 10);
    if (*end != '\0' || pid <= 0 || pid == ::getpid()) continue;
    std::string fds = std::string("/proc/") + e->d_name + "/fd";
    base::Dir d(opendir(fds.c_str()));
    if (!d) continue;
    while (dirent* f = readdir(d.get())) {
      struct stat st;
      if (f->d_name[0] == '.' || ::stat((fds + "/" + f->d_name).c_str(), &st) != 0) continue;
      if (st.st_dev == fifo.st_dev && st.st_ino == fifo.st_ino) {
        out.push_back(static_cast<pid_t>(pid));
        break;
      }
    }
  }
  return out;
}

void Handle::remove() {
  // Only plain entries are expected (state.json, config.json, exec.fifo, a
  // temp file left by a killed husk); unlinkat never follows a symlink.
  std::vector<std::string> names;
  {
    base::Dir d = base::open_dir(fd_.get());
    if (!d) throw sys_error("read " + dir_);
    while (dirent* e = readdir(d.get()))
      if (std::string n = e->d_name; n != "." && n != "..") names.push_back(n);
  }
  for (const auto& n : names)
    if (::unlinkat(fd_.get(), n.c_str(), 0) != 0 && errno != ENOENT) throw sys_error("remove " + dir_ + "/" + n);
  if (::unlinkat(root_fd_.get(), id_.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) throw sys_error("remove " + dir_);
}

cgroups::Config cgroup_config(const Record& rec) {
  cgroups::Config c;
  c.path = rec.cgroup_path;
  c.container_id = rec.oci.id;
  c.owner = rec.oci.id;
  c.handle = rec.cgroup_handle;
  c.created = rec.cgroup_created;
  c.rootless = rec.cgroup_rootless;
  c.log = log::warn;
  if (rec.cgroup_path.empty() && !rec.no_cgroup.empty()) {
    c.driver = cgroups::Driver::none;
    c.none_reason = rec.no_cgroup;
    c.log = log::notice;
  }
  if (rec.cgroup_handle.rfind("systemd", 0) == 0) c.bridge = companion_path("husk-systemd");
  c.debug = log::debug;
  return c;
}

std::unique_ptr<cgroups::Manager> open_cgroup(const Record& rec) {
  if (rec.cgroup_path.empty()) return rec.no_cgroup.empty() ? nullptr : cgroups::make_manager(cgroup_config(rec));
  if (cgroups::contains_self(rec.cgroup_path))
    throw Error("cgroup " + rec.cgroup_path + " holds husk's own process; refusing to touch it");
  return cgroups::make_manager(cgroup_config(rec));
}

Status live_status(const Record& r) {
  // parse_record let only these through; a record made here says one of them.
  const Status recorded = parse_status(r.oci.status).value_or(Status::stopped);
  if (recorded == Status::stopped) return recorded;
  // Also covers "creating" left behind by a husk create that was killed.
  if (!base::process_alive(r.oci.pid, r.start_time)) return Status::stopped;
  // Only a started container can be paused.
  if (recorded == Status::running && !r.cgroup_path.empty()) {
    try {
      if (cgroups::make_manager(cgroup_config(r))->frozen()) return Status::paused;
    } catch (const Error&) {
    }
  }
  return recorded;
}

Fd open_init(const Record& r) {
  if (r.oci.pid <= 0 || r.start_time == 0) return Fd();
  // A container without a cgroup (rootless) is known by pid and start time
  // only: the kernel lets an unprivileged caller signal its own processes
  // alone. Root makes a cgroup unless it ran --rootless=true, which the
  // record says (no_cgroup); any other cgroup-less record is not husk's.
  const bool by_cgroup = !r.cgroup_path.empty();
  const bool root = ::geteuid() == 0 && !ns::in_user_namespace();
  if (by_cgroup ? cgroups::contains_self(r.cgroup_path) : root && r.no_cgroup.empty()) return Fd();
  Fd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, r.oci.pid, 0)));
  // Checked after pidfd_open: the pidfd pins this very process.
  if (!pidfd || !base::process_alive(r.oci.pid, r.start_time) ||
      (by_cgroup && !cgroups::process_in(r.oci.pid, r.cgroup_path)))
    return Fd();
  return pidfd;
}

}  // namespace husk::rt
