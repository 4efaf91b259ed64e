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
#include "support.h"
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

// What a seccomp agent read from one connection (tests/support).
using husk_test::Received;

// Read conn to EOF, as a seccomp agent does, and close it.
inline Received receive_all(int conn) {
  Received r = husk_test::receive_until_eof(conn);
  close(conn);
  return r;
}

}  // namespace seccomp_test
