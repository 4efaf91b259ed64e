// seccomp::compile(): BPF generation and the on-disk program cache.
#include <dirent.h>
#include <fcntl.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "helpers.h"
#include "seccomp/seccomp.h"

using namespace husk;
using seccomp_test::TempDir;

namespace {

spec::Seccomp errno_on(std::vector<std::string> names, std::optional<uint32_t> errno_ret = std::nullopt) {
  spec::Seccomp c;
  c.default_action = "SCMP_ACT_ALLOW";
  spec::SeccompSyscall s;
  s.names = std::move(names);
  s.action = "SCMP_ACT_ERRNO";
  s.errno_ret = errno_ret;
  c.syscalls.push_back(s);
  return c;
}

bool same(const std::vector<sock_filter>& a, const std::vector<sock_filter>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(sock_filter)) == 0;
}

std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') out.push_back(dir + "/" + e->d_name);
    closedir(d);
  }
  return out;
}

struct stat stat_of(const std::string& p) {
  struct stat st {};
  stat(p.c_str(), &st);
  return st;
}

// mkdir's errno in a child that loads prog, or -1 when the child failed otherwise.
int mkdir_errno_under(const seccomp::Program& prog) {
  pid_t pid = fork();
  if (pid == 0) {
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) _exit(200);
    try {
      seccomp::load(prog);
    } catch (...) {
      _exit(201);
    }
    errno = 0;
    _exit(mkdir("/tmp/husk-seccomp-never", 0700) == 0 ? 0 : errno);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) && WEXITSTATUS(st) < 200 ? WEXITSTATUS(st) : -1;
}

}  // namespace

TEST_CASE("compile: a program carries the plan's flags and notify", "[seccomp][compile]") {
  auto c = errno_on({"mkdir", "mkdirat"});
  c.flags = {"SECCOMP_FILTER_FLAG_LOG"};
  auto prog = seccomp::compile(seccomp::plan(c));
  CHECK(prog.flags == SECCOMP_FILTER_FLAG_LOG);
  CHECK_FALSE(prog.notify);
  CHECK(prog.insns.size() > 4);
  CHECK(mkdir_errno_under(prog) == EPERM);
}

TEST_CASE("compile: the cache reuses a program only for the same plan", "[seccomp][compile]") {
  TempDir tmp("husk-seccomp-cache-");
  const std::string dir = tmp.path + "/cache";
  const auto a = seccomp::plan(errno_on({"mkdir", "mkdirat"}));
  const auto b = seccomp::plan(errno_on({"mkdir", "mkdirat"}, ENOSYS));
  const auto fresh_a = seccomp::compile(a);
  const auto fresh_b = seccomp::compile(b);
  REQUIRE_FALSE(same(fresh_a.insns, fresh_b.insns));

  // First use creates the directory (0700) and one 0600 entry.
  auto first = seccomp::compile(a, dir);
  CHECK(same(first.insns, fresh_a.insns));
  CHECK((stat_of(dir).st_mode & 0777) == 0700);
  auto files = entries(dir);
  REQUIRE(files.size() == 1);
  CHECK((stat_of(files[0]).st_mode & 0777) == 0600);
  const ino_t ino = stat_of(files[0]).st_ino;

  SECTION("a hit reads the entry instead of rewriting it") {
    auto again = seccomp::compile(a, dir);
    CHECK(same(again.insns, fresh_a.insns));
    CHECK(stat_of(files[0]).st_ino == ino);
    CHECK(mkdir_errno_under(again) == EPERM);
  }
  SECTION("another plan gets its own entry") {
    auto other = seccomp::compile(b, dir);
    CHECK(same(other.insns, fresh_b.insns));
    CHECK(entries(dir).size() == 2);
    CHECK(mkdir_errno_under(other) == ENOSYS);
  }
  SECTION("an entry built from another plan is never used, even under the right name") {
    seccomp::compile(b, dir);
    auto both = entries(dir);
    REQUIRE(both.size() == 2);
    const std::string b_file = both[0] == files[0] ? both[1] : both[0];
    REQUIRE(rename(files[0].c_str(), b_file.c_str()) == 0);  // b's name now holds a's program
    CHECK(same(seccomp::compile(b, dir).insns, fresh_b.insns));
  }
  SECTION("a corrupt entry is rebuilt") {
    std::ofstream(files[0], std::ios::trunc) << "HUSKBPF1 garbage";
    CHECK(same(seccomp::compile(a, dir).insns, fresh_a.insns));
    CHECK(stat_of(files[0]).st_size > 100);
  }
  SECTION("an entry others can write is ignored and replaced") {
    REQUIRE(chmod(files[0].c_str(), 0666) == 0);
    CHECK(same(seccomp::compile(a, dir).insns, fresh_a.insns));
    CHECK(stat_of(files[0]).st_ino != ino);
    CHECK((stat_of(files[0]).st_mode & 0777) == 0600);
  }
  SECTION("a directory others can write is not used at all") {
    REQUIRE(chmod(dir.c_str(), 0777) == 0);
    CHECK(same(seccomp::compile(b, dir).insns, fresh_b.insns));
    CHECK(entries(dir).size() == 1);
  }
}

TEST_CASE("compile: a cache below a directory others may write or a symlink is not used", "[seccomp][compile]") {
  TempDir tmp("husk-seccomp-cache-");
  const auto p = seccomp::plan(errno_on({"mkdir", "mkdirat"}));
  const auto fresh = seccomp::compile(p);
  SECTION("the parent open to others (a planted /tmp/husk-UID)") {
    REQUIRE(chmod(tmp.path.c_str(), 0777) == 0);
    CHECK(same(seccomp::compile(p, tmp.path + "/cache").insns, fresh.insns));
    CHECK(entries(tmp.path).empty());
  }
  SECTION("the parent a symlink") {
    REQUIRE(mkdir((tmp.path + "/real").c_str(), 0700) == 0);
    REQUIRE(symlink("real", (tmp.path + "/link").c_str()) == 0);
    CHECK(same(seccomp::compile(p, tmp.path + "/link/cache").insns, fresh.insns));
    CHECK(entries(tmp.path + "/real").empty());
  }
  SECTION("control: a parent of ours alone, below root's sticky /tmp") {
    seccomp::compile(p, tmp.path + "/cache");
    CHECK(entries(tmp.path + "/cache").size() == 1);
  }
}

TEST_CASE("compile: an unusable cache path only costs the reuse", "[seccomp][compile]") {
  const auto p = seccomp::plan(errno_on({"mkdir", "mkdirat"}));
  CHECK(same(seccomp::compile(p, "/nonexistent-husk/cache").insns, seccomp::compile(p).insns));
}

TEST_CASE("load(Program): bad programs are refused before the kernel", "[seccomp][compile]") {
  seccomp::Program empty;
  CHECK_THROWS_WITH(seccomp::load(empty),
                    "seccomp: load filter: 0 BPF instructions, the kernel takes 1..4096");
  seccomp::Program big;
  big.insns.resize(70000);  // would wrap the 16-bit length seccomp(2) takes
  CHECK_THROWS_WITH(seccomp::load(big),
                    "seccomp: load filter: 70000 BPF instructions, the kernel takes 1..4096");
}

TEST_CASE("load: notify with TSYNC returns the listener; closing it fails the call", "[seccomp][compile]") {
  spec::Seccomp c;
  c.default_action = "SCMP_ACT_ALLOW";
  c.listener_path = "/run/agent.sock";
  c.flags = {"SECCOMP_FILTER_FLAG_TSYNC"};
  spec::SeccompSyscall s;
  s.names = {"getppid"};
  s.action = "SCMP_ACT_NOTIFY";
  c.syscalls.push_back(s);
  auto prog = seccomp::compile(seccomp::plan(c));
  REQUIRE(prog.notify);
  pid_t pid = fork();
  if (pid == 0) {
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) _exit(10);
    int fd;
    try {
      fd = seccomp::load(prog);
    } catch (...) {
      _exit(11);
    }
    if (fd < 0 || !(fcntl(fd, F_GETFD) & FD_CLOEXEC)) _exit(12);
    close(fd);
    // With no listener left the kernel fails notified syscalls with ENOSYS.
    errno = 0;
    _exit(syscall(SYS_getppid) == -1 && errno == ENOSYS ? 0 : 13);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  CHECK(WIFEXITED(st));
  CHECK(WEXITSTATUS(st) == 0);
}
