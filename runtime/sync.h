// Parent <-> child messages over a SOCK_SEQPACKET socketpair (one byte of
// type, then a payload), and the raw clone3 both the init and exec use.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace husk::rt {

void send_msg(int fd, char type, const std::string& payload = {});
// Returns false on EOF (the other side exited or exec'd).
bool recv_msg(int fd, char& type, std::string& payload);

// clone3 returning in the child like fork; cgroup_fd >= 0 adds CLONE_INTO_CGROUP.
pid_t clone3_raw(uint64_t flags, int cgroup_fd);

// Report an exception from a child over the sync socket and exit; the
// parent turns the message into its own error.
[[noreturn]] void child_fail(int sock, const char* what) noexcept;

}  // namespace husk::rt
