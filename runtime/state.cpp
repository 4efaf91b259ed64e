#include "runtime/state.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "cgroups/cgroups.h"
#include "spec/error.h"

namespace husk::rt {
using json = nlohmann::json;

Store::Store(std::string root) : root_(std::move(root)) {}

void Store::check_id(const std::string& id) {
  // A leading dot is refused: <root>/.name holds husk's own files.
  bool ok = !id.empty() && id[0] != '.' && id.size() <= 1024;
  for (char c : id)
    if (!(isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '+' || c == '-' || c == '.'))
      ok = false;
  if (!ok) throw Error("invalid container id \"" + id + "\": must match [A-Za-z0-9_+-][A-Za-z0-9_+.-]*");
}

std::vector<std::string> Store::ids() const {
  std::vector<std::string> out;
  DIR* d = opendir(root_.c_str());
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    if (e->d_type != DT_DIR && e->d_type != DT_UNKNOWN) continue;
    out.emplace_back(e->d_name);
  }
  closedir(d);
  return out;
}

static Fd lock_dir(const std::string& dir) {
  Fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) throw sys_error("open " + dir);
  while (::flock(fd.get(), LOCK_EX) != 0)
    if (errno != EINTR) throw sys_error("lock " + dir);
  return fd;
}

Handle Handle::create(const Store& store, const std::string& id) {
  Store::check_id(id);
  mkdir_all(store.root(), 0711);
  Handle h;
  h.id_ = id;
  h.dir_ = store.dir(id);
  if (::mkdir(h.dir_.c_str(), 0711) != 0) {
    if (errno == EEXIST) throw Error("container with id \"" + id + "\" already exists");
    throw sys_error("mkdir " + h.dir_);
  }
  h.fd_ = lock_dir(h.dir_);
  return h;
}

Handle Handle::open(const Store& store, const std::string& id, bool lock) {
  Store::check_id(id);
  Handle h;
  h.id_ = id;
  h.dir_ = store.dir(id);
  const Error missing("container \"" + id + "\" does not exist");
  Fd fd(::open(h.dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) {
    if (errno == ENOENT) throw missing;
    throw sys_error("open " + h.dir_);
  }
  while (lock && ::flock(fd.get(), LOCK_EX) != 0)
    if (errno != EINTR) throw sys_error("lock " + h.dir_);
  // A concurrent delete may have removed it while we waited for the lock.
  if (::faccessat(fd.get(), "state.json", F_OK, 0) != 0) throw missing;
  h.fd_ = std::move(fd);
  return h;
}

void Handle::unlock() const { ::flock(fd_.get(), LOCK_UN); }

Record parse_record(const std::string& text) {
  json j = json::parse(text);
  Record r;
  r.oci.oci_version = j.value("ociVersion", "");
  r.oci.id = j.value("id", "");
  r.oci.status = j.value("status", "");
  r.oci.pid = j.value("pid", 0);
  r.oci.bundle = j.value("bundle", "");
  r.oci.rootfs = j.value("rootfs", "");
  r.oci.created = j.value("created", "");
  r.oci.owner = j.value("owner", "");
  if (j.contains("annotations")) r.oci.annotations = j["annotations"].get<std::map<std::string, std::string>>();
  r.start_time = j.value("initStartTime", uint64_t{0});
  r.cgroup_path = j.value("cgroupPath", "");
  r.cgroup_created = j.value("cgroupCreated", std::vector<std::string>{});
  return r;
}

Record Handle::load() const { return parse_record(read_file(dir_ + "/state.json")); }

void Handle::save(const Record& r) const {
  json j = {{"ociVersion", r.oci.oci_version}, {"id", r.oci.id},         {"status", r.oci.status},
            {"pid", r.oci.pid},                {"bundle", r.oci.bundle}, {"rootfs", r.oci.rootfs},
            {"created", r.oci.created},        {"owner", r.oci.owner},   {"annotations", r.oci.annotations},
            {"initStartTime", r.start_time},   {"cgroupPath", r.cgroup_path},
            {"cgroupCreated", r.cgroup_created}};
  write_file_atomic(dir_ + "/state.json", j.dump(), 0600);
}

spec::Spec Handle::config() const { return spec::parse(read_file(dir_ + "/config.json")); }

void Handle::save_config(const std::string& json_text) const {
  write_file_atomic(dir_ + "/config.json", json_text, 0600);
}

void remove_container_dir(const std::string& dir) {
  for (const char* f : {"state.json", "state.json.tmp", "config.json", "config.json.tmp", "exec.fifo"})
    ::unlink((dir + "/" + f).c_str());
  if (::rmdir(dir.c_str()) != 0 && errno != ENOENT) throw sys_error("remove " + dir);
}

void Handle::remove() { remove_container_dir(dir_); }

std::string live_status(const Record& r) {
  if (r.oci.status == "stopped") return r.oci.status;
  // Also covers "creating" left behind by a husk create that was killed.
  if (!process_alive(r.oci.pid, r.start_time)) return "stopped";
  // Only a started container can be paused.
  if (r.oci.status == "running" && !r.cgroup_path.empty()) {
    try {
      auto cg = cgroups::Manager::open(r.cgroup_path, cgroups::detect_mode());
      if (cg->frozen()) return "paused";
    } catch (const Error&) {
    }
  }
  return r.oci.status;
}

}  // namespace husk::rt
