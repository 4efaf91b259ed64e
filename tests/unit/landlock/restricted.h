// The landlock tests' child: a ruleset enforced in a forked process, checks
// run there and their result reported through the exit status.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "landlock/landlock.h"

// The line of the first failed check in the child, 0 when all held.
#define CHILD_CHECK(cond) \
  if (!(cond)) return __LINE__

// `fn` in a forked child restricted by `plan`: its result (0 or a failed
// line; 1000+errno when restricting failed).
inline int restricted(const husk::landlock::Plan& plan, const std::function<int()>& fn) {
  pid_t pid = ::fork();
  if (pid == 0) {
    int rc = 0;
    try {
      std::vector<std::string> notes;
      husk::base::Fd rs = husk::landlock::build(plan, husk::landlock::rights(plan, husk::landlock::abi()), notes);
      husk::landlock::restrict_self(rs.get());
      rc = fn();
    } catch (const std::exception&) {
      rc = 1000 + errno;
    }
    ::_exit(rc);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 999;
}
