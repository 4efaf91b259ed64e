#include "namespaces/id_maps.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <charconv>

#include "base/error.h"
#include "base/fd.h"
#include "base/file.h"
#include "namespaces/namespaces.h"

extern char** environ;

namespace husk::ns {

namespace {

constexpr uint64_t kIdLimit = uint64_t(1) << 32;

// The ':'-separated fields of a line.
std::vector<std::string_view> split(std::string_view line, char sep) {
  std::vector<std::string_view> out;
  for (size_t at = 0;;) {
    size_t end = line.find(sep, at);
    out.push_back(line.substr(at, end == std::string_view::npos ? std::string_view::npos : end - at));
    if (end == std::string_view::npos) return out;
    at = end + 1;
  }
}

bool parse_u64(std::string_view s, uint64_t& v) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return !s.empty() && ec == std::errc() && p == s.data() + s.size();
}

template <class F>
void for_each_line(std::string_view text, F&& f) {
  while (!text.empty()) {
    size_t nl = text.find('\n');
    f(text.substr(0, nl));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
}

// [start, start + count) lies within the union of `have`.
bool covered(uint64_t start, uint64_t count, const std::vector<IdRange>& have) {
  uint64_t end = start + count;
  while (start < end) {
    uint64_t next = start;
    for (const auto& r : have)
      if (r.start <= start && start < r.start + r.count) next = std::max(next, r.start + r.count);
    if (next == start) return false;
    start = next;
  }
  return true;
}

std::string span(uint64_t start, uint64_t count) {
  return std::to_string(start) + "-" + std::to_string(start + count - 1);
}

struct Kind {
  const char* field;  // "uidMappings"
  const char* file;   // "/etc/subuid"
  const char* proc;   // "uid_map"
  uint32_t own;
  const std::vector<IdRange>* own_ns;
  const std::vector<IdRange>* delegated;
};

MapWay plan_one(const MapCaller& c, const std::vector<spec::IdMapping>& maps, const Kind& k,
                const std::string& field) {
  std::string path = field + "." + k.field;
  if (maps.empty()) throw Error(path + ": required when creating a new user namespace");
  // Shapes the kernel refuses anyway: here they fail by name.
  spec::validate_id_mappings(maps, path);
  auto own_single = [&](const spec::IdMapping& m) { return m.size == 1 && m.host_id == k.own; };
  if (!c.privileged && maps.size() == 1 && own_single(maps[0])) return MapWay::Direct;
  for (size_t i = 0; i < maps.size(); ++i) {
    const auto& m = maps[i];
    std::string p = path + "[" + std::to_string(i) + "]";
    if (c.privileged) {
      if (!covered(m.host_id, m.size, *k.own_ns))
        throw Error(p + ": ids " + span(m.host_id, m.size) + " are not mapped in husk's own user namespace (/proc/self/" +
                    k.proc + "): the host ids must be mapped there");
    } else if (!own_single(m) && !covered(m.host_id, m.size, *k.delegated)) {
      std::string who = c.user.empty() ? "uid " + std::to_string(c.euid) : "user " + c.user;
      throw Error(p + ": host ids " + span(m.host_id, m.size) + " are not delegated to " + who + " (" + k.file + ")");
    }
  }
  return c.privileged ? MapWay::Direct : MapWay::Helper;
}

}  // namespace

std::vector<IdRange> parse_subids(std::string_view text, std::string_view user, uint32_t uid) {
  std::vector<IdRange> out;
  std::string uid_text = std::to_string(uid);
  for_each_line(text, [&](std::string_view line) {
    auto f = split(line, ':');
    if (f.size() != 3 || (f[0] != user && f[0] != uid_text) || f[0].empty()) return;
    IdRange r;
    if (!parse_u64(f[1], r.start) || !parse_u64(f[2], r.count)) return;
    if (r.count == 0 || r.start >= kIdLimit || r.count > kIdLimit - r.start) return;
    out.push_back(r);
  });
  return out;
}

std::string passwd_name(std::string_view text, uint32_t uid) {
  std::string found;
  for_each_line(text, [&](std::string_view line) {
    auto f = split(line, ':');
    uint64_t v;
    if (found.empty() && f.size() >= 3 && !f[0].empty() && parse_u64(f[2], v) && v == uid) found = f[0];
  });
  return found;
}

std::vector<IdRange> parse_proc_id_map(std::string_view text) {
  std::vector<IdRange> out;
  for_each_line(text, [&](std::string_view line) {
    std::vector<uint64_t> v;
    for (auto w : split(line, ' ')) {
      uint64_t n;
      if (!w.empty() && parse_u64(w, n)) v.push_back(n);
    }
    if (v.size() == 3 && v[2] > 0) out.push_back({v[0], v[2]});
  });
  return out;
}

MapPlan plan_id_maps(const MapCaller& c, const std::vector<spec::IdMapping>& uids,
                     const std::vector<spec::IdMapping>& gids, const std::string& field) {
  MapPlan p;
  p.uid = plan_one(c, uids, {"uidMappings", "/etc/subuid", "uid_map", c.euid, &c.own_uids, &c.subuids}, field);
  p.gid = plan_one(c, gids, {"gidMappings", "/etc/subgid", "gid_map", c.egid, &c.own_gids, &c.subgids}, field);
  p.deny_setgroups = !c.privileged && p.gid == MapWay::Direct;
  return p;
}

namespace {

std::string read_or_empty(const char* path) { return base::try_read_file(path).value_or(""); }

// /proc/<pid>/uid_map, gid_map or setgroups, written by husk itself.
void write_proc(const std::string& path, const std::string& text, const std::string& field, const MapCaller& c) {
  base::Fd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (fd && ::write(fd.get(), text.data(), text.size()) == static_cast<ssize_t>(text.size())) return;
  int err = errno;
  std::string msg = sys_error(field + ": write " + path, err).what();
  if (c.in_user_ns && (err == EPERM || err == EINVAL))
    msg += " (husk runs in a user namespace: the host ids must be mapped in husk's own user namespace)";
  throw Error(msg, err);
}

// newuidmap/newgidmap <pid> <inside> <outside> <count>...; its output is the error.
void run_helper(const char* tool, pid_t pid, const std::vector<spec::IdMapping>& maps, const std::string& field) {
  std::vector<std::string> args{tool, std::to_string(pid)};
  for (const auto& m : maps)
    for (uint32_t v : {m.container_id, m.host_id, m.size}) args.push_back(std::to_string(v));
  std::vector<char*> argv;
  std::string shown;
  for (auto& a : args) {
    argv.push_back(a.data());
    shown += (shown.empty() ? "" : " ") + a;
  }
  argv.push_back(nullptr);
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) throw sys_error(field + ": pipe for " + tool);
  base::Fd rd(out[0]), wr(out[1]);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, wr.get(), 1);
  posix_spawn_file_actions_adddup2(&fa, wr.get(), 2);
  pid_t child;
  int rc = posix_spawnp(&child, tool, &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  wr.reset();
  if (rc == ENOENT)
    throw Error(field + ": mapping these ids needs " + tool + " (Debian package uidmap), which is not in PATH");
  if (rc != 0) throw sys_error(field + ": run " + tool, rc);
  std::string said;
  char buf[4096];
  for (ssize_t n; (n = ::read(rd.get(), buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    if (said.size() < 65536) said.append(buf, static_cast<size_t>(n));
  }
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return;
  while (!said.empty() && (said.back() == '\n' || said.back() == ' ')) said.pop_back();
  if (said.empty()) said = WIFSIGNALED(status) ? "killed by signal " + std::to_string(WTERMSIG(status))
                                               : "exit status " + std::to_string(WEXITSTATUS(status));
  throw Error(field + ": " + shown + " failed: " + said);
}

}  // namespace

bool is_identity_map(const std::vector<IdRange>& map) {
  return map.size() == 1 && map[0].start == 0 && map[0].count == kIdLimit - 1;
}

bool in_user_namespace() {
  std::optional<std::string> map = base::try_read_file("/proc/self/uid_map");
  return map && !is_identity_map(parse_proc_id_map(*map));
}

MapCaller current_caller() {
  MapCaller c;
  c.euid = ::geteuid();
  c.egid = ::getegid();
  c.privileged = c.euid == 0;
  c.own_uids = parse_proc_id_map(read_or_empty("/proc/self/uid_map"));
  c.own_gids = parse_proc_id_map(read_or_empty("/proc/self/gid_map"));
  c.in_user_ns = !is_identity_map(c.own_uids);
  // The name only matters for the delegations (and their errors).
  if (!c.privileged) {
    c.user = passwd_name(read_or_empty("/etc/passwd"), c.euid);
    c.subuids = parse_subids(read_or_empty("/etc/subuid"), c.user, c.euid);
    c.subgids = parse_subids(read_or_empty("/etc/subgid"), c.user, c.euid);
  }
  return c;
}

void write_id_maps(pid_t pid, const std::vector<spec::IdMapping>& uids, const std::vector<spec::IdMapping>& gids,
                   const std::string& field, const MapCaller& c) {
  MapPlan p = plan_id_maps(c, uids, gids, field);
  std::string dir = "/proc/" + std::to_string(pid) + "/";
  if (p.uid == MapWay::Helper) run_helper("newuidmap", pid, uids, field + ".uidMappings");
  else write_proc(dir + "uid_map", id_map_text(uids), field + ".uidMappings", c);
  if (p.deny_setgroups) write_proc(dir + "setgroups", "deny", field + ".gidMappings", c);
  if (p.gid == MapWay::Helper) run_helper("newgidmap", pid, gids, field + ".gidMappings");
  else write_proc(dir + "gid_map", id_map_text(gids), field + ".gidMappings", c);
}

}  // namespace husk::ns
