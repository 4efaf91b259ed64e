// landlock without a mount view (husk sandbox without a user namespace):
// hidden paths inside a writable tree are denied by the ruleset alone.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <functional>
#include <string>

#include "landlock/landlock.h"
#include "unit/landlock/restricted.h"
#include "skip.h"
#include "unit/temp_dir.h"

using namespace husk;
using namespace husk::landlock;

namespace {

int try_open(const std::string& path, int flags) {
  int fd = ::open(path.c_str(), flags | O_CLOEXEC, 0644);
  if (fd < 0) return errno;
  ::close(fd);
  return 0;
}

void make_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  REQUIRE(fd >= 0);
  ::close(fd);
}

}  // namespace

TEST_CASE("rights without a mount view: a hidden path inside a writable tree is hidden", "[landlock]") {
  Plan p;
  p.trees = {{"/", false}, {"/home/u", true}};
  p.hidden = {"/etc/shadow", "/home/u/.ssh"};
  p.mount_view = false;
  Rights r = rights(p, 7);
  CHECK(r.hidden == std::vector<std::string>{"/etc/shadow", "/home/u/.ssh"});
  CHECK(r.not_hidden.empty());
  CHECK_FALSE(r.mount_view);
}

TEST_CASE("build without a mount view: the home as a writable tree, its .ssh denied", "[landlock]") {
  if (abi() < 1) HUSK_SKIP("no Landlock in this kernel");
  husk_test::TempDir tmp{"husk-landlock-nomv-"};
  const std::string home = tmp.path + "/home", ssh = home + "/.ssh", proj = home + "/proj";
  for (const auto& d : {home, ssh, proj}) REQUIRE(::mkdir(d.c_str(), 0755) == 0);
  make_file(ssh + "/id_rsa");
  make_file(home + "/.profile");
  Plan p;
  p.trees = {{home, true}};
  p.hidden = {ssh};
  p.mount_view = false;
  int rc = restricted(p, [&] {
    CHILD_CHECK(try_open(ssh + "/id_rsa", O_RDONLY) == EACCES);
    CHILD_CHECK(try_open(ssh + "/id_rsa", O_WRONLY) == EACCES);
    CHILD_CHECK(try_open(ssh + "/authorized_keys", O_WRONLY | O_CREAT) == EACCES);
    // Moved out of the hidden directory, or the directory itself moved away.
    CHILD_CHECK(::rename((ssh + "/id_rsa").c_str(), (proj + "/k").c_str()) != 0);
    CHILD_CHECK(::rename(ssh.c_str(), (proj + "/ssh").c_str()) != 0);
    // The rest of the home: written, created below its entries.
    CHILD_CHECK(try_open(home + "/.profile", O_WRONLY) == 0);
    CHILD_CHECK(try_open(proj + "/new", O_WRONLY | O_CREAT) == 0);
    // Its top holds the hidden path: nothing new there (a right on it would
    // hold in .ssh too).
    CHILD_CHECK(try_open(home + "/new", O_WRONLY | O_CREAT) == EACCES);
    return 0;
  });
  CHECK(rc == 0);
}
