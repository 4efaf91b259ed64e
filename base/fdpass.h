// Passing one fd over an AF_UNIX socket (SCM_RIGHTS), the one copy every
// library uses. Syscall-level: -1 with errno, so each caller names what it
// was doing; EINTR is retried.
#pragma once

#include <sys/types.h>

#include <cstddef>

namespace husk::base {

// One sendmsg of data[0..len) with `fd` attached when fd >= 0 (MSG_NOSIGNAL).
// Returns the bytes sent.
ssize_t send_with_fd(int sock, const void* data, size_t len, int fd);

// One recvmsg into buf[0..len); *fd is the fd that came with it (installed
// O_CLOEXEC) or -1. Anything else in the control data is ignored (extra fds
// do not fit and are never installed). Returns the bytes received.
ssize_t recv_with_fd(int sock, void* buf, size_t len, int* fd);

}  // namespace husk::base
