// Reading a bundle's config.json and writing the `husk spec` template.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "spec/spec.h"

namespace husk::spec {

namespace {

std::string read_bounded(int dirfd, const std::string& name, const std::string& shown, int extra_flags) {
  int fd = ::openat(dirfd, name.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | extra_flags);
  if (fd < 0) {
    if (errno == ELOOP && (extra_flags & O_NOFOLLOW)) throw Error(shown + ": is a symlink, refusing to follow it");
    throw sys_error("open " + shown);
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    throw sys_error("stat " + shown, err);
  }
  if (!S_ISREG(st.st_mode) || st.st_size > static_cast<off_t>(kMaxJsonSize)) {
    ::close(fd);
    throw Error(shown + (S_ISREG(st.st_mode) ? ": larger than 64 MiB" : ": not a regular file"));
  }
  std::string out;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      throw sys_error("read " + shown, err);
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > kMaxJsonSize) {
      ::close(fd);
      throw Error(shown + ": larger than 64 MiB");
    }
  }
  ::close(fd);
  return out;
}

}  // namespace

std::string read_json_file(const std::string& path) { return read_bounded(AT_FDCWD, path, path, 0); }

std::string read_json_file_at(int dirfd, const std::string& name, const std::string& shown) {
  return read_bounded(dirfd, name, shown, O_NOFOLLOW);
}

Spec load_bundle(const std::string& bundle_dir, std::string* config_text) {
  std::string dir = bundle_dir.empty() ? "." : bundle_dir;
  if (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  std::string text = read_json_file(dir == "/" ? "/config.json" : dir + "/config.json");
  try {
    Spec s = parse(text);
    validate(s, true);
    if (config_text) *config_text = std::move(text);
    return s;
  } catch (const Error& e) {
    rethrow_with("config.json", e);
  }
}

std::string default_config_json(bool rootless) {
  using ojson = nlohmann::ordered_json;
  const ojson caps = {"CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE"};

  ojson process = {
      {"terminal", true},
      {"user", {{"uid", 0}, {"gid", 0}}},
      {"args", {"sh"}},
      {"env", {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "TERM=xterm"}},
      {"cwd", "/"},
      {"capabilities", {{"bounding", caps}, {"effective", caps}, {"permitted", caps}}},
      {"rlimits", {{{"type", "RLIMIT_NOFILE"}, {"hard", 1024}, {"soft", 1024}}}},
      {"noNewPrivileges", true},
  };

  auto mount = [](const char* dest, const char* type, const char* source, std::vector<std::string> options) {
    ojson m = {{"destination", dest}, {"type", type}, {"source", source}};
    if (!options.empty()) m["options"] = options;
    return m;
  };
  // Rootless: the devpts gid=5 (tty) is not mapped; sysfs mounts fresh in
  // the container's own network namespace (unlike an rbind of the host's
  // /sys it has no cgroup mounts below, so /sys/fs/cgroup stays read-only)
  // and no cgroup is mounted: the host's hierarchy is not the user's.
  ojson mounts = ojson::array();
  mounts.push_back(mount("/proc", "proc", "proc", {}));
  mounts.push_back(mount("/dev", "tmpfs", "tmpfs", {"nosuid", "strictatime", "mode=755", "size=65536k"}));
  std::vector<std::string> devpts = {"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"};
  if (!rootless) devpts.push_back("gid=5");
  mounts.push_back(mount("/dev/pts", "devpts", "devpts", devpts));
  mounts.push_back(mount("/dev/shm", "tmpfs", "shm", {"nosuid", "noexec", "nodev", "mode=1777", "size=65536k"}));
  mounts.push_back(mount("/dev/mqueue", "mqueue", "mqueue", {"nosuid", "noexec", "nodev"}));
  mounts.push_back(mount("/sys", "sysfs", "sysfs", {"nosuid", "noexec", "nodev", "ro"}));
  if (!rootless)
    mounts.push_back(mount("/sys/fs/cgroup", "cgroup", "cgroup", {"nosuid", "noexec", "nodev", "relatime", "ro"}));

  ojson namespaces = ojson::array();
  for (const char* t : {"pid", "network", "ipc", "uts", "mount", "cgroup"}) namespaces.push_back({{"type", t}});

  ojson linux_cfg = ojson::object();
  if (rootless) {
    namespaces.push_back({{"type", "user"}});
    linux_cfg["uidMappings"] = {{{"containerID", 0}, {"hostID", ::geteuid()}, {"size", 1}}};
    linux_cfg["gidMappings"] = {{{"containerID", 0}, {"hostID", ::getegid()}, {"size", 1}}};
  } else {
    linux_cfg["resources"] = {{"devices", {{{"allow", false}, {"access", "rwm"}}}}};
  }
  linux_cfg["namespaces"] = namespaces;
  linux_cfg["maskedPaths"] = {"/proc/acpi",        "/proc/asound",      "/proc/kcore",        "/proc/keys",
                              "/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug",
                              "/sys/firmware",     "/proc/scsi"};
  linux_cfg["readonlyPaths"] = {"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"};

  ojson spec = {
      {"ociVersion", kOciVersionMax},
      {"process", process},
      {"root", {{"path", "rootfs"}, {"readonly", true}}},
      {"hostname", "husk"},
      {"mounts", mounts},
      {"linux", linux_cfg},
  };
  return spec.dump(1, '\t') + "\n";
}

}  // namespace husk::spec
