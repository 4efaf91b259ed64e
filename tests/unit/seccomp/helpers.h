// Builders and fixtures the seccomp unit tests share.
#pragma once

#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "spec/spec.h"
#include "unit/temp_dir.h"

namespace seccomp_test {

inline husk::spec::SeccompSyscall call(std::vector<std::string> names, std::string action,
                                       std::optional<uint32_t> errno_ret = std::nullopt,
                                       std::vector<husk::spec::SeccompArg> args = {}) {
  husk::spec::SeccompSyscall s;
  s.names = std::move(names);
  s.action = std::move(action);
  s.errno_ret = errno_ret;
  s.args = std::move(args);
  return s;
}

inline husk::spec::Seccomp config(std::string default_action, std::vector<husk::spec::SeccompSyscall> calls = {}) {
  husk::spec::Seccomp c;
  c.default_action = std::move(default_action);
  c.syscalls = std::move(calls);
  return c;
}

// A fresh directory /tmp/<prefix>XXXXXX, removed with its contents.
using husk_test::TempDir;

// What a seccomp agent read from one connection.
struct Received {
  std::string payload;
  std::vector<int> fds;       // every SCM_RIGHTS fd, in order
  int messages_with_fds = 0;  // how many messages carried any
};

// Read conn to EOF, as a seccomp agent does, and close it.
inline Received receive_all(int conn) {
  Received r;
  for (;;) {
    char buf[65536];
    iovec iov{buf, sizeof buf};
    alignas(cmsghdr) char cbuf[CMSG_SPACE(sizeof(int) * 8)];
    msghdr m{};
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = cbuf;
    m.msg_controllen = sizeof cbuf;
    ssize_t n = recvmsg(conn, &m, MSG_CMSG_CLOEXEC);
    if (n <= 0) break;
    bool had = false;
    for (cmsghdr* cm = CMSG_FIRSTHDR(&m); cm; cm = CMSG_NXTHDR(&m, cm))
      if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
        size_t count = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < count; ++i) {
          int fd;
          std::memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof fd);
          r.fds.push_back(fd);
        }
        had = true;
      }
    r.messages_with_fds += had;
    r.payload.append(buf, static_cast<size_t>(n));
  }
  close(conn);
  return r;
}

}  // namespace seccomp_test
