#include <catch2/catch.hpp>

#include "base/error.h"
#include "launch/process.h"

using husk::rt::find_executable;

TEST_CASE("args[0] is found on the container's PATH") {
  CHECK(find_executable("sh", {"PATH=/nonexistent:/bin"}) == "/bin/sh");
  CHECK(find_executable("/bin/sh", {}) == "/bin/sh");
  // the default PATH applies when env has none
  CHECK(find_executable("sh", {"HOME=/"}).find("/sh") != std::string::npos);
}

TEST_CASE("a missing executable is an error naming it") {
  REQUIRE_THROWS_WITH(find_executable("no-such-binary-xyz", {"PATH=/bin"}),
                      "exec: \"no-such-binary-xyz\": executable file not found in $PATH");
  REQUIRE_THROWS_WITH(find_executable("/etc/passwd", {}), Catch::Contains("exec: \"/etc/passwd\""));
  // runc's wording, which docker maps to exit status 126.
  REQUIRE_THROWS_WITH(find_executable("/", {}), "exec: \"/\": permission denied");
}

TEST_CASE("the lookup keeps why args[0] cannot be run") {
  using husk::rt::lookup_executable;
  auto l = lookup_executable("sh", {"PATH=/nonexistent:/bin"});
  CHECK(l.path == "/bin/sh");
  CHECK(l.err == 0);
  CHECK(l.on_path);
  l = lookup_executable("no-such-binary-xyz", {"PATH=/bin"});
  CHECK(l.path.empty());
  CHECK(l.err == ENOENT);
  // On PATH but not executable: EACCES, as execvp says, though something else comes first.
  l = lookup_executable("passwd", {"PATH=/nonexistent:/etc"});
  CHECK(l.path.empty());
  CHECK(l.err == EACCES);
  l = lookup_executable("/etc/passwd", {});
  CHECK((l.path.empty() && l.err == EACCES && !l.on_path));
  l = lookup_executable("/no/such/file", {});
  CHECK((l.path.empty() && l.err == ENOENT));
  l = lookup_executable("/etc/passwd/x", {});
  CHECK((l.path.empty() && l.err == ENOTDIR));
}

TEST_CASE("a command that cannot be run: a shell's status and words") {
  using husk::rt::Lookup;
  using husk::rt::shell_exec_error;
  using husk::rt::shell_exec_status;
  const Lookup nowhere{"", ENOENT, true}, no_file{"", ENOENT, false}, not_exec{"", EACCES, true},
      found{"/bin/x", 0, true};
  CHECK(shell_exec_status(nowhere) == 127);
  CHECK(shell_exec_status(no_file) == 127);
  CHECK(shell_exec_status(not_exec) == 126);
  CHECK(shell_exec_status(Lookup{"", ENOTDIR, false}) == 126);
  // Found, and execve failed (even with ENOENT: the interpreter): 126.
  CHECK(shell_exec_status(found) == 126);
  CHECK(shell_exec_error("nosuchcmd", nowhere, false, 0) == "nosuchcmd: command not found");
  CHECK(shell_exec_error("./x", no_file, false, 0) == "./x: no such file or directory");
  CHECK(shell_exec_error("x", not_exec, false, 0) == "x: permission denied");
  CHECK(shell_exec_error("x", found, true, ENOENT) ==
        "x: cannot execute: no such file or directory (its interpreter, the #! line's or the ELF loader, is missing)");
  CHECK(shell_exec_error("x", found, true, ENOEXEC) == "x: cannot execute: exec format error");
}
