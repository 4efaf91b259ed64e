// terminal: true — the container gets a new pty whose master goes to the
// caller over --console-socket (SCM_RIGHTS), as runc does.
#pragma once

#include <optional>
#include <string>

#include "base/fd.h"
#include "spec/spec.h"

namespace husk::rt {

using base::Fd;

// Connect to the caller's console socket (before clone, on the host).
int connect_console_socket(const std::string& path);

// Where a container process's pty master goes. `child` is handed to the
// process (-1: no terminal); `parent` is set when husk receives the master
// itself (a foreground run/exec without --console-socket) to proxy its stdio.
struct ConsoleChannel {
  Fd child, parent;
};
ConsoleChannel open_console_channel(bool terminal, const std::string& console_socket);

// In the container (after pivot, /dev/ptmx of its devpts): open a pty, send
// the master over `socket_fd`, make the slave the controlling terminal (the
// caller is a session leader already) and stdio. The init (bind_console) also binds it on /dev/console; exec does not.
void setup_console(int socket_fd, const std::optional<spec::ConsoleSize>& size, bool bind_console);

// Send / receive one fd with a name over a unix socket.
void send_fd(int sock, int fd, const std::string& name);
int recv_fd(int sock);

}  // namespace husk::rt
