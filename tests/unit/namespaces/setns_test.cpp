// Unprivileged checks of the syscall helpers: error messages, and that
// open_in_root keeps symlinks inside the root.
#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "namespaces/namespaces.h"
#include "unit/temp_dir.h"

using namespace husk;
using namespace husk::ns;
namespace fs = std::filesystem;

namespace {

// The tests build paths with fs::path's operator/.
struct TempDir : husk_test::TempDir {
  fs::path path{husk_test::TempDir::path};
  TempDir() : husk_test::TempDir("husk-ns-unit-") {}
};

std::string read_fd(int fd) {
  std::string out;
  char buf[256];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  return out;
}

}  // namespace

TEST_CASE("join_namespace joins only an fd the runtime opened, never the path") {
  NamespacePlan::Join j{"network", "/proc/self/ns/net", CLONE_NEWNET};
  CHECK_THROWS_WITH(join_namespace(j), Catch::Contains("join network namespace /proc/self/ns/net: not opened by the runtime"));
}

TEST_CASE("join_namespace refuses a file that is not a namespace of that type") {
  husk::base::Judged net = husk::base::judge("/proc/self/ns/net", O_RDONLY, "linux.namespaces[0].path");
  NamespacePlan::Join j{"ipc", "/proc/self/ns/net", CLONE_NEWIPC, 0, net.fd.get()};
  // setns checks the type before privileges: EINVAL even without root.
  CHECK_THROWS_WITH(join_namespace(j), Catch::Contains("join ipc namespace /proc/self/ns/net"));
}

TEST_CASE("write_time_offsets rejects unknown clocks and does nothing for none") {
  CHECK_NOTHROW(write_time_offsets({}));
  CHECK_THROWS_WITH(write_time_offsets({{"realtime", {1, 0}}}), Catch::Contains("unknown clock \"realtime\""));
}

TEST_CASE("open_in_root resolves absolute symlinks and .. inside the root") {
  TempDir root;
  fs::create_directories(root.path / "etc");
  fs::create_directories(root.path / "a/b");
  std::ofstream(root.path / "etc/passwd") << "inside\n";
  fs::create_symlink("/etc/passwd", root.path / "link");
  fs::create_symlink("../../../../../../etc", root.path / "a/b/up");

  int rfd = open(root.path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  REQUIRE(rfd >= 0);
  for (const char* p : {"/link", "link", "/a/b/up/passwd", "/../../etc/passwd", "/a/../../../etc/passwd"}) {
    INFO(p);
    int fd = open_in_root(rfd, p, O_RDONLY);
    CHECK(read_fd(fd) == "inside\n");
    CHECK((fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0);
    close(fd);
  }
  int dfd = open_in_root(rfd, "/", O_PATH | O_DIRECTORY);
  struct stat a{}, b{};
  fstat(dfd, &a);
  stat(root.path.c_str(), &b);
  CHECK(a.st_ino == b.st_ino);
  close(dfd);
  CHECK_THROWS_WITH(open_in_root(rfd, "/missing", O_RDONLY), Catch::Contains("/missing") && Catch::Contains("No such file"));
  close(rfd);
}

TEST_CASE("open_in_root refuses magic links out of the root") {
  TempDir root;
  fs::create_symlink("/proc/self/root", root.path / "escape");
  int rfd = open(root.path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  REQUIRE(rfd >= 0);
  // /proc/self/root is resolved inside the root, where there is no /proc: ENOENT, never the host.
  CHECK_THROWS_AS(open_in_root(rfd, "/escape/etc/hostname", O_RDONLY), Error);
  close(rfd);
}
