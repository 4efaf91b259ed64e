// Hand the seccomp notify fd to the agent at linux.seccomp.listenerPath
// (runtime-spec config-linux.md "The Container Process State").
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "base/fdpass.h"
#include "seccomp/seccomp.h"

namespace husk::seccomp {

std::string process_state_json(const std::string& oci_version, int pid,
                               const std::string& metadata, const std::string& state_json) {
  nlohmann::json j;
  j["ociVersion"] = oci_version;
  j["fds"] = nlohmann::json::array({"seccompFd"});
  j["pid"] = pid;
  if (!metadata.empty()) j["metadata"] = metadata;
  try {
    j["state"] = nlohmann::json::parse(state_json);
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("seccomp: container state is not JSON: ") + e.what());
  }
  return j.dump();
}

void send_to_listener(const std::string& listener_path, int notify_fd,
                      const std::string& state_json) {
  // The socket is the caller's agent, not husk's: errors point at the config field.
  const std::string field = "linux.seccomp.listenerPath: ";
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (listener_path.empty() || listener_path.size() >= sizeof addr.sun_path)
    throw Error(field + listener_path + ": a socket path must be 1.." +
                std::to_string(sizeof addr.sun_path - 1) + " bytes");
  std::memcpy(addr.sun_path, listener_path.data(), listener_path.size());

  int sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (sock < 0) throw sys_error(field + "socket for " + listener_path);
  struct Closer {
    int fd;
    ~Closer() { close(fd); }
  } closer{sock};

  int rc;
  do {
    rc = connect(sock, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  } while (rc < 0 && errno == EINTR);
  if (rc < 0) throw sys_error(field + "connect to " + listener_path);

  // The fd rides on the first sendmsg only; the rest of a partially sent
  // payload follows without it (the spec allows several sendmsg calls).
  size_t sent = 0;
  bool fd_sent = false;
  while (!fd_sent || sent < state_json.size()) {
    ssize_t n = base::send_with_fd(sock, state_json.data() + sent, state_json.size() - sent, fd_sent ? -1 : notify_fd);
    if (n < 0) throw sys_error(field + "send to " + listener_path);
    fd_sent = true;
    sent += static_cast<size_t>(n);
  }
}

}  // namespace husk::seccomp
