#include "checkpoint/criu.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>
#include <string>

#include "base/error.h"
#include "base/fdpass.h"

extern char** environ;

namespace husk::ckpt {

using base::Fd;
using nlohmann::json;

namespace {

constexpr size_t kMaxMessage = 1 << 20;
constexpr const char* kNoCriu = "CRIU is needed for checkpoint and restore: no criu program in PATH (Debian: apt install criu)";

// posix_spawn(p) of `argv` with `fds` ({fd here, number there}) and nothing
// else of ours; signals at their defaults and unblocked (husk may block them
// for its signalfd).
pid_t spawn(const std::string& path, bool search, const std::vector<std::string>& args,
            const std::vector<std::pair<int, int>>& fds, char** envp) {
  // Sources out of the way of the targets first, so no dup2 clobbers another's source.
  std::vector<Fd> high;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  for (const auto& [from, to] : fds) {
    Fd h(::fcntl(from, F_DUPFD_CLOEXEC, 100));
    if (!h) throw sys_error("dup fd " + std::to_string(from) + " for " + path);
    posix_spawn_file_actions_adddup2(&fa, h.get(), to);
    high.push_back(std::move(h));
  }
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = search ? posix_spawnp(&pid, path.c_str(), &fa, &attr, argv.data(), envp)
                        : posix_spawn(&pid, path.c_str(), &fa, &attr, argv.data(), envp);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) throw sys_error("run " + path, rc);
  return pid;
}

int reap(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return -1;
  return status;
}

void send_json(int sock, const json& j) {
  const std::string text = j.dump();
  if (base::send_with_fd(sock, text.data(), text.size(), -1) < 0) throw sys_error("send to husk-criu");
}

// The next message of the bridge, with the fd it carried; null at its end.
json recv_json(int sock, Fd& fd) {
  std::string buf(kMaxMessage, '\0');
  int got = -1;
  const ssize_t n = base::recv_with_fd(sock, buf.data(), buf.size(), &got);
  fd.reset(got);
  if (n < 0) throw sys_error("receive from husk-criu");
  if (n == 0) return nullptr;
  return json::parse(buf.substr(0, static_cast<size_t>(n)), nullptr, false);
}

}  // namespace

Criu::Criu(const std::vector<std::pair<int, int>>& fds) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) throw sys_error("socketpair for criu");
  sock_.reset(sv[0]);
  Fd theirs(sv[1]);
  std::vector<std::pair<int, int>> all = fds;
  all.emplace_back(theirs.get(), 3);
  try {
    pid_ = spawn("criu", true, {"criu", "swrk", "3"}, all, environ);
  } catch (const Error& e) {
    if (e.err() == ENOENT)
      throw Error(kNoCriu, ENOENT);
    throw;
  }
}

Criu::~Criu() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  reap(pid_);
}

bool criu_in_path() {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');)
    if (!dir.empty() && ::access((dir + "/criu").c_str(), X_OK) == 0) return true;
  return false;
}

void require_criu(const std::string& bridge) {
  if (!criu_in_path()) throw Error(kNoCriu, ENOENT);
  if (::access(bridge.c_str(), X_OK) != 0)
    throw sys_error("husk's CRIU bridge " + bridge +
                    " (built when libcriu is found: Debian's criu and libprotobuf-c-dev; installed next to husk "
                    "or in <prefix>/libexec/husk)");
}

Reply Criu::call(const std::string& bridge, const std::string& type, const json& opts,
                 const std::function<void(Notification&)>& on_notify) {
  require_criu(bridge);
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) throw sys_error("socketpair for husk-criu");
  Fd ours(sv[0]), theirs(sv[1]);
  char* no_env[] = {nullptr};
  const pid_t bridge_pid = spawn(bridge, false, {"husk-criu"}, {{theirs.get(), 3}, {sock_.get(), 4}}, no_env);
  theirs.reset();
  // Only the bridge talks to criu now: if it dies, criu sees the end.
  sock_.reset();
  std::string refused;
  Reply reply;
  try {
    send_json(ours.get(), {{"type", type}, {"opts", opts}});
    for (;;) {
      Fd fd;
      const json m = recv_json(ours.get(), fd);
      if (m.is_null()) throw Error("husk-criu ended without an answer");
      if (!m.is_object()) throw Error("husk-criu sent a message husk cannot read");
      if (m.contains("error")) throw Error("husk-criu: " + m.value("error", std::string()));
      if (!m.contains("notify")) {
        reply.success = m.value("success", false);
        reply.cr_errno = m.value("cr_errno", 0);
        reply.cr_errmsg = m.value("cr_errmsg", std::string());
        reply.pid = m.value("pid", 0);
        break;
      }
      Notification n{m.value("notify", std::string()), m.value("pid", 0), std::move(fd)};
      bool ok = true;
      try {
        on_notify(n);
      } catch (const Error& e) {
        ok = false;
        if (refused.empty()) refused = e.what();
      }
      send_json(ours.get(), {{"ok", ok}});
    }
  } catch (...) {
    ours.reset();
    reap(bridge_pid);
    throw;
  }
  ours.reset();
  reap(bridge_pid);
  reap(pid_);
  pid_ = -1;
  if (!refused.empty()) throw Error(refused);
  return reply;
}

std::string log_errors(int work_fd, const std::string& log_name) {
  Fd log(::openat(work_fd, log_name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!log) return "";
  std::string text;
  char buf[65536];
  for (ssize_t n; (n = ::read(log.get(), buf, sizeof buf)) > 0;) {
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > (4u << 20)) text.erase(0, text.size() - (1u << 20));
  }
  // CRIU marks its errors "Error (file:line): ..."; the last ones say why.
  std::vector<std::string> errors;
  for (size_t pos = 0; pos < text.size();) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(pos, end - pos);
    const size_t at = line.find("Error (");
    if (at != std::string::npos) errors.push_back(line.substr(at));
    pos = end + 1;
  }
  std::string out;
  for (size_t i = errors.size() > 3 ? errors.size() - 3 : 0; i < errors.size(); ++i)
    out += (out.empty() ? "" : "; ") + errors[i];
  return out;
}

}  // namespace husk::ckpt
