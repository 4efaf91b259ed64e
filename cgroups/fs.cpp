// What every manager does with cgroup files and directories: one-write
// values, strict number parsing, recursive pid lists and removal.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cctype>
#include <charconv>
#include <chrono>
#include <climits>
#include <cstring>
#include <sstream>
#include <thread>

#include "base/dir.h"
#include "base/fd.h"
#include "base/file.h"
#include "cgroups/cgroups.h"
#include "cgroups/internal.h"

namespace husk::cgroups {

bool file_exists(const std::string& p) { return access(p.c_str(), F_OK) == 0; }

bool is_dir(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

int write_raw(const std::string& path, const std::string& value) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  ssize_t n = write(fd, value.data(), value.size());
  int err = n < 0 ? errno : 0;
  close(fd);
  return err;
}

void write_file(const std::string& path, const std::string& value) {
  if (int err = write_raw(path, value)) throw sys_error("write \"" + value + "\" to " + path, err);
}

namespace {

template <typename T>
T parse_number(const std::string& text, const std::string& file) {
  std::string t = trim(text);
  T v{};
  auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (t.empty() || ec != std::errc() || end != t.data() + t.size())
    throw Error(file + ": \"" + t + "\" is not a number");
  return v;
}

}  // namespace

uint64_t parse_u64(const std::string& text, const std::string& file) {
  if (trim(text) == "max") return UINT64_MAX;
  return parse_number<uint64_t>(text, file);
}

int64_t parse_i64(const std::string& text, const std::string& file) { return parse_number<int64_t>(text, file); }

uint64_t read_u64(const std::string& path) {
  auto s = base::try_read_file(path);
  return s ? parse_u64(*s, path) : 0;
}

std::map<std::string, uint64_t> read_kv(const std::string& path) {
  std::map<std::string, uint64_t> out;
  auto s = base::try_read_file(path);
  if (!s) return out;
  std::istringstream in(*s);
  std::string k, v;
  while (in >> k >> v) out[k] = parse_u64(v, path);
  return out;
}

void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

namespace {

// The sub-cgroups of `dir` (none when it cannot be read: gone meanwhile).
std::vector<std::string> subdirs(const std::string& dir) {
  std::vector<std::string> out;
  base::Dir d(opendir(dir.c_str()));
  if (!d) return out;
  while (dirent* e = readdir(d.get()))
    if (e->d_type == DT_DIR && std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0)
      out.push_back(dir + "/" + e->d_name);
  return out;
}

}  // namespace

bool cgroup_gone(const Error& e) { return e.err() == ENOENT || e.err() == ENODEV; }

void collect_pids(const std::string& dir, std::vector<pid_t>& out) {
  std::optional<std::string> procs;
  try {
    procs = base::try_read_file(dir + "/cgroup.procs");
  } catch (const Error& e) {
    if (!cgroup_gone(e)) throw;
  }
  if (procs) {
    std::istringstream in(*procs);
    pid_t p;
    while (in >> p) out.push_back(p);
  }
  for (const auto& sub : subdirs(dir)) collect_pids(sub, out);
}

int rmdir_retry(const std::string& dir, bool retry) {
  for (int i = 0;; ++i) {
    if (rmdir(dir.c_str()) == 0 || errno == ENOENT) return 0;
    if (!retry || errno != EBUSY || i >= 100) return errno;
    sleep_ms(10);
  }
}

int remove_tree(const std::string& dir) {
  // Most leaves have no sub-cgroups: one rmdir, no listing.
  if (rmdir(dir.c_str()) == 0 || errno == ENOENT) return 0;
  for (const auto& sub : subdirs(dir))
    if (int err = remove_tree(sub)) return err;
  return rmdir_retry(dir, true);
}

std::vector<std::string> prefixes(const std::string& path) {
  std::vector<std::string> out;
  for (size_t i = 1; i <= path.size(); ++i)
    if (i == path.size() || path[i] == '/') out.push_back(path.substr(0, i));
  return out;
}

std::vector<std::string> hugepage_sizes() {
  std::vector<std::string> out;
  base::Dir d(opendir("/sys/kernel/mm/hugepages"));
  if (!d) return out;
  while (dirent* e = readdir(d.get())) {
    unsigned long kb = 0;
    if (std::sscanf(e->d_name, "hugepages-%lukB", &kb) != 1) continue;
    if (kb % (1024 * 1024) == 0) out.push_back(std::to_string(kb / (1024 * 1024)) + "GB");
    else if (kb % 1024 == 0) out.push_back(std::to_string(kb / 1024) + "MB");
    else out.push_back(std::to_string(kb) + "KB");
  }
  return out;
}

MadeDirs::~MadeDirs() {
  for (auto it = dirs_.rbegin(); it != dirs_.rend(); ++it) rmdir_retry(*it, false);
}

void Mark::put(const std::string& dir) const {
  if (lsetxattr(dir.c_str(), xattr.c_str(), owner.data(), owner.size(), 0) != 0)
    throw sys_error("set the xattr " + xattr + " on " + dir);
}

Mark::Found Mark::find(const std::string& dir) const {
  struct stat st;
  if (::lstat(dir.c_str(), &st) != 0) return errno == ENOENT || errno == ENOTDIR ? Found::missing : Found::other;
  if (uid && st.st_uid != *uid) return Found::other;
  // One byte more than the owner: a longer value reads as ERANGE, not ours.
  std::string value(owner.size() + 1, '\0');
  ssize_t n = lgetxattr(dir.c_str(), xattr.c_str(), value.data(), value.size());
  if (n < 0 && (errno == ENOENT || errno == ENOTDIR)) return Found::missing;
  // Made by a husk killed before it could mark it (see MadeDirs::make). Only
  // the caller's euid can make a directory its own with that mode (root's:
  // root); without its owner's name in it, it counts only while empty.
  if (n < 0 && errno == ENODATA && (st.st_mode & S_ISVTX) && st.st_uid == ::geteuid()) {
    std::vector<pid_t> pids;
    collect_pids(dir, pids);
    return pids.empty() ? Found::ours : Found::other;
  }
  bool ours = n == static_cast<ssize_t>(owner.size()) && value.compare(0, owner.size(), owner) == 0;
  return ours ? Found::ours : Found::other;
}

bool MadeDirs::make(const std::string& dir) {
  // The sticky bit, set by the mkdir itself, says "husk's, not marked yet":
  // a husk killed before the xattr leaves a directory delete --force still
  // knows as its own (cgroupfs cannot rename a marked one into place on v2).
  if (mkdir(dir.c_str(), 0755 | S_ISVTX) != 0) {
    if (errno != EEXIST) throw sys_error("mkdir " + dir);
    return false;
  }
  dirs_.push_back(dir);
  mark_.put(dir);
  struct stat st;
  if (::lstat(dir.c_str(), &st) != 0) throw sys_error("stat " + dir);
  if (::chmod(dir.c_str(), st.st_mode & 0777) != 0) throw sys_error("chmod " + dir);
  return true;
}

void remove_created(const std::string& root, const std::string& leaf, const std::vector<std::string>& created,
                    const Mark& mark) {
  for (auto it = created.rbegin(); it != created.rend(); ++it) {
    const std::string dir = root + *it;
    if (!mark.on(dir)) continue;
    if (*it != leaf) rmdir_retry(dir, false);
    else if (int err = remove_tree(dir)) throw sys_error("rmdir " + dir, err);
  }
}

namespace {

// Writes that may be skipped when the file is absent: hugetlb reservations
// (older kernels), and swap values that only say "no swap limit" / "no swap"
// on a kernel without swap accounting (runc's rule).
bool optional_when_missing(const std::string& path, const std::string& value) {
  auto ends = [&](const std::string& f) {
    return path.size() >= f.size() && path.compare(path.size() - f.size(), f.size(), f) == 0;
  };
  if (path.find(".rsvd.") != std::string::npos) return true;
  if (ends("/memory.swap.max")) return value == "max" || value == "0";
  if (ends("/memory.memsw.limit_in_bytes")) return value == "-1";
  return false;
}

}  // namespace

void apply_writes(const std::vector<std::pair<std::string, std::string>>& writes) {
  std::vector<std::pair<std::string, std::string>> later;
  // Runs of writes to one file (the device rules) share one open: cgroup
  // files take each write(2) as a command of its own.
  base::Fd fd;
  int open_err = 0;
  const std::string* fd_path = nullptr;
  for (const auto& [path, value] : writes) {
    if (!fd_path || *fd_path != path) {
      fd.reset(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
      open_err = fd ? 0 : errno;
      fd_path = &path;
    }
    int err = open_err ? open_err : ::write(fd.get(), value.data(), value.size()) < 0 ? errno : 0;
    if (err == ENOENT && optional_when_missing(path, value)) continue;
    if (err == EINVAL) {
      later.emplace_back(path, value);
      continue;
    }
    if (err == ENOENT)
      throw Error("write \"" + value + "\" to " + path +
                      ": no such file (its controller is not enabled for this cgroup or the kernel lacks it)",
                  err);
    if (err) throw sys_error("write \"" + value + "\" to " + path, err);
  }
  for (const auto& [path, value] : later) write_file(path, value);
}

void check_usage(const spec::Resources& r, const std::string& usage_file) {
  if (!r.memory || !r.memory->check_before_update.value_or(false)) return;
  int64_t limit = r.memory->limit.value_or(0);
  if (limit <= 0) return;
  uint64_t usage = read_u64(usage_file);
  if (static_cast<uint64_t>(limit) < usage)
    throw Error("linux.resources.memory.limit: " + std::to_string(limit) + " is below the current usage of " +
                std::to_string(usage) + " bytes (checkBeforeUpdate)");
}

void kill_members(Manager& m, int sig, const std::string& kill_file, bool can_freeze) {
  try {
    if (sig == SIGKILL && !kill_file.empty() && file_exists(kill_file)) {
      write_file(kill_file, "1");
      return;
    }
    // Empty, it stays empty (no process left to fork): no freeze needed, the
    // usual case at delete, where freezing and thawing cost more than the rest.
    if (m.pids().empty()) return;
    // Frozen, nothing can fork between listing and signalling.
    const bool thaw = can_freeze && !m.frozen();
    if (thaw) m.freeze();
    try {
      for (pid_t p : m.pids())
        if (kill(p, sig) != 0 && errno != ESRCH) throw sys_error("kill " + std::to_string(p));
    } catch (...) {
      if (thaw) m.thaw();
      throw;
    }
    if (thaw) m.thaw();
  } catch (const Error& e) {
    if (!cgroup_gone(e) || !m.pids().empty()) throw;  // removed meanwhile: nobody left to signal
  }
}

}  // namespace husk::cgroups
