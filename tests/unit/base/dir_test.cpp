// base::Dir / open_dir: a directory stream owned once, over its own open file description.
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <set>
#include <string>

#include "base/dir.h"
#include "base/fd.h"
#include "unit/temp_dir.h"

namespace base = husk::base;

namespace {

// The lowest free fd number: the same before and after means nothing leaked.
int lowest_free_fd() {
  const int probe = fcntl(0, F_DUPFD_CLOEXEC, 0);
  close(probe);
  return probe;
}

}  // namespace

TEST_CASE("open_dir reads the directory through its own fd; the caller's stays open") {
  husk_test::TempDir t;
  std::ofstream(t.path + "/a") << "x";
  std::ofstream(t.path + "/b") << "y";
  base::Fd fd(open(t.path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  REQUIRE(fd);
  const int free_before = lowest_free_fd();
  {
    base::Dir d = base::open_dir(fd.get());
    REQUIRE(d);
    CHECK(dirfd(d.get()) != fd.get());
    CHECK((fcntl(dirfd(d.get()), F_GETFD) & FD_CLOEXEC));
    std::set<std::string> names;
    while (dirent* e = readdir(d.get())) names.insert(e->d_name);
    CHECK(names == std::set<std::string>{".", "..", "a", "b"});
  }
  // A listing that read fd to its end does not leave the next one there.
  char buf[4096];
  while (syscall(SYS_getdents64, fd.get(), buf, sizeof buf) > 0) {
  }
  base::Dir again = base::open_dir(fd.get());
  REQUIRE(again);
  int n = 0;
  while (readdir(again.get())) ++n;
  CHECK(n == 4);
  again.reset();
  CHECK(lowest_free_fd() == free_before);
  CHECK(fcntl(fd.get(), F_GETFD) >= 0);
}

TEST_CASE("open_dir: a non-directory or closed fd gives none (errno set, nothing leaked); an O_PATH one is enough") {
  husk_test::TempDir t;
  std::ofstream(t.path + "/file") << "x";
  base::Fd file(open((t.path + "/file").c_str(), O_RDONLY | O_CLOEXEC));
  REQUIRE(file);
  const int free_before = lowest_free_fd();
  errno = 0;
  CHECK_FALSE(base::open_dir(file.get()));
  CHECK(errno == ENOTDIR);
  CHECK(lowest_free_fd() == free_before);
  // An O_PATH fd of a directory is enough: the new description reads it.
  base::Fd path(open(t.path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  REQUIRE(path);
  CHECK(base::open_dir(path.get()));
  errno = 0;
  CHECK_FALSE(base::open_dir(lowest_free_fd()));
  CHECK(errno == EBADF);
}

TEST_CASE("Dir closes what opendir opened") {
  husk_test::TempDir t;
  const int free_before = lowest_free_fd();
  {
    base::Dir d(opendir(t.path.c_str()));
    REQUIRE(d);
    CHECK(lowest_free_fd() != free_before);
  }
  CHECK(lowest_free_fd() == free_before);
  CHECK_FALSE(base::Dir(opendir((t.path + "/missing").c_str())));
}
