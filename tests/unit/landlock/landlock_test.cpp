// landlock: the masks per ABI (pure), and rulesets really enforced in forked
// children on a real directory tree. No root is needed: an unprivileged
// process may restrict itself once no_new_privs is set.
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/mount.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
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

void write_file(const std::string& path, const char* text = "x") {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  REQUIRE(fd >= 0);
  REQUIRE(::write(fd, text, 1) == 1);
  ::close(fd);
}

// 0 when opening succeeds, else errno.
int try_open(const std::string& path, int flags) {
  int fd = ::open(path.c_str(), flags | O_CLOEXEC, 0644);
  if (fd < 0) return errno;
  ::close(fd);
  return 0;
}

// root/ro/{a, bin/tool, secret/key, deep/x/hidden/key, deep/x/b, deep/y},
// root/rw/, root/outside/file.
struct Tree3 {
  husk_test::TempDir tmp{"husk-landlock-"};
  std::string ro = tmp.path + "/ro", rw = tmp.path + "/rw", out = tmp.path + "/outside";
  Tree3() {
    for (const auto& d : {ro, rw, out, ro + "/secret", ro + "/deep", ro + "/deep/x", ro + "/deep/x/hidden",
                          ro + "/deep/y"})
      REQUIRE(::mkdir(d.c_str(), 0755) == 0);
    for (const auto& f : {ro + "/a", ro + "/secret/key", ro + "/deep/x/hidden/key", ro + "/deep/x/b",
                          out + "/file"})
      write_file(f);
  }
  Plan plan() const {
    Plan p;
    p.trees = {{ro, false}, {rw, true}};
    p.hidden = {ro + "/secret", ro + "/deep/x/hidden"};
    return p;
  }
};

}  // namespace

TEST_CASE("rights: the masks follow the ABI", "[landlock]") {
  Plan p;
  p.limit_tcp = p.scope_abstract_unix = p.scope_signal = true;
  Rights none = rights(p, 0);
  CHECK(none.handled_fs == 0);
  CHECK(none.lacking.size() == 1);
  Rights one = rights(p, 1);
  CHECK(one.handled_fs == 0x1fff);
  CHECK_FALSE(one.handled_fs & (kRefer | kTruncate | kIoctlDev));
  CHECK(one.handled_net == 0);
  CHECK(one.scoped == 0);
  CHECK(one.lacking.size() == 5);
  CHECK(rights(p, 2).handled_fs == (0x1fff | kRefer));
  CHECK(rights(p, 3).handled_fs == (0x1fff | kRefer | kTruncate));
  Rights four = rights(p, 4);
  CHECK(four.handled_net == (kBindTcp | kConnectTcp));
  CHECK_FALSE(four.handled_fs & kIoctlDev);
  CHECK(rights(p, 5).handled_fs & kIoctlDev);
  CHECK(rights(p, 5).scoped == 0);
  CHECK(rights(p, 5).lacking.size() == 2);
  Rights seven = rights(p, 7);
  CHECK(seven.scoped == (kScopeAbstractUnix | kScopeSignal));
  CHECK(seven.lacking.empty());
  CHECK(seven.read == (kExecute | kReadFile | kReadDir));
  CHECK(seven.write == seven.handled_fs);
  CHECK(seven.route == kReadDir);
}

TEST_CASE("rights: nothing asked, nothing handled beyond the file system", "[landlock]") {
  Rights r = rights(Plan{}, 7);
  CHECK(r.handled_net == 0);
  CHECK(r.scoped == 0);
  CHECK(r.lacking.empty());
}

TEST_CASE("rights: without file system rules only the network and the scopes are handled", "[landlock]") {
  Plan p;
  p.trees = {{"/", false}, {"/home/u", true}};
  p.hidden = {"/etc/shadow"};
  p.limit_tcp = p.scope_abstract_unix = p.scope_signal = true;
  p.file_system = false;
  Rights r = rights(p, 7);
  CHECK(r.handled_fs == 0);
  CHECK(r.handled_net == (kBindTcp | kConnectTcp));
  CHECK(r.scoped == (kScopeAbstractUnix | kScopeSignal));
  CHECK(r.read == 0);
  CHECK(r.write == 0);
  CHECK(r.hidden.empty());
  CHECK(r.not_hidden.empty());
  // Nothing lacking is said about file system rights it does not ask for.
  CHECK(rights(p, 1).lacking.size() == 3);
  CHECK(rights(p, 0).lacking.size() == 1);
}

TEST_CASE("build: a file system domain refuses mounts even in a user namespace of its own; none without it",
          "[landlock]") {
  if (abi() < 4) HUSK_SKIP("Landlock ABI < 4: no network rules to enforce alone");
  husk_test::TempDir tmp{"husk-landlock-"};
  auto mount_inside = [&] {
    if (::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) return 200;
    return ::mount("none", tmp.path.c_str(), "tmpfs", 0, nullptr) == 0 ? 0 : errno == EPERM ? 201 : 202;
  };
  Plan p;
  p.trees = {{"/", true}};
  p.limit_tcp = true;
  int with_fs = restricted(p, mount_inside);
  if (with_fs == 200) HUSK_SKIP("no unprivileged user namespaces here");
  CHECK(with_fs == 201);
  p.file_system = false;
  CHECK(restricted(p, mount_inside) == 0);
}

TEST_CASE("rights: a hidden path inside a writable tree is left to the mount view", "[landlock]") {
  Plan p;
  p.trees = {{"/", false}, {"/home/u", true}};
  p.hidden = {"/etc/shadow", "/home/u/.ssh"};
  Rights r = rights(p, 7);
  CHECK(r.hidden == std::vector<std::string>{"/etc/shadow"});
  CHECK(r.not_hidden == std::vector<std::string>{"/home/u/.ssh"});
}

TEST_CASE("build: reads and writes only where the trees allow, hidden paths denied", "[landlock]") {
  if (abi() < 1) HUSK_SKIP("no Landlock in this kernel");
  Tree3 t;
  const std::string ro = t.ro, rw = t.rw, out = t.out;
  int rc = restricted(t.plan(), [&] {
    CHILD_CHECK(try_open(ro + "/a", O_RDONLY) == 0);
    CHILD_CHECK(try_open(ro + "/a", O_WRONLY) == EACCES);
    CHILD_CHECK(try_open(ro + "/new", O_WRONLY | O_CREAT) == EACCES);
    CHILD_CHECK(try_open(ro + "/deep/x/b", O_RDONLY) == 0);
    CHILD_CHECK(try_open(ro + "/deep/y", O_RDONLY | O_DIRECTORY) == 0);
    // Hidden: not read, at any depth. Its names can be listed: listing
    // the way down is granted, and a right holds for all below.
    CHILD_CHECK(try_open(ro + "/secret/key", O_RDONLY) == EACCES);
    CHILD_CHECK(try_open(ro + "/secret/key", O_WRONLY) == EACCES);
    CHILD_CHECK(try_open(ro + "/secret/new", O_WRONLY | O_CREAT) == EACCES);
    CHILD_CHECK(try_open(ro + "/deep/x/hidden/key", O_RDONLY) == EACCES);
    // The way down may be listed, nothing more.
    CHILD_CHECK(try_open(ro + "/deep/x", O_RDONLY | O_DIRECTORY) == 0);
    CHILD_CHECK(try_open(ro + "/deep/x/new", O_WRONLY | O_CREAT) == EACCES);
    CHILD_CHECK(try_open(rw + "/new", O_WRONLY | O_CREAT) == 0);
    CHILD_CHECK(::mkdir((rw + "/d").c_str(), 0755) == 0);
    CHILD_CHECK(::rename((rw + "/new").c_str(), (rw + "/d/moved").c_str()) == 0);
    // Outside every tree: nothing.
    CHILD_CHECK(try_open(out + "/file", O_RDONLY) == EACCES);
    CHILD_CHECK(try_open(out + "/new", O_WRONLY | O_CREAT) == EACCES);
    // A hidden file cannot be moved out to where it could be read.
    CHILD_CHECK(::rename((ro + "/secret/key").c_str(), (rw + "/key").c_str()) != 0);
    return 0;
  });
  CHECK(rc == 0);
}

TEST_CASE("build: a symlink is never followed into another tree", "[landlock]") {
  if (abi() < 1) HUSK_SKIP("no Landlock in this kernel");
  Tree3 t;
  // Planted where a tree and an entry beside a hidden path are expected.
  REQUIRE(::symlink(t.out.c_str(), (t.tmp.path + "/link").c_str()) == 0);
  REQUIRE(::symlink(t.out.c_str(), (t.ro + "/deep/x/swapped").c_str()) == 0);
  Plan p = t.plan();
  p.trees.push_back({t.tmp.path + "/link", true});
  const std::string out = t.out, ro = t.ro;
  int rc = restricted(p, [&] {
    CHILD_CHECK(try_open(out + "/file", O_RDONLY) == EACCES);
    CHILD_CHECK(try_open(out + "/new", O_WRONLY | O_CREAT) == EACCES);
    CHILD_CHECK(try_open(ro + "/deep/x/swapped/file", O_RDONLY) == EACCES);
    return 0;
  });
  CHECK(rc == 0);
}

TEST_CASE("build: a hidden tree root grants nothing", "[landlock]") {
  if (abi() < 1) HUSK_SKIP("no Landlock in this kernel");
  Tree3 t;
  Plan p = t.plan();
  p.hidden.push_back(t.ro);
  const std::string ro = t.ro;
  CHECK(restricted(p, [&] {
          CHILD_CHECK(try_open(ro + "/a", O_RDONLY) == EACCES);
          return 0;
        }) == 0);
}

TEST_CASE("build: abstract sockets and signals stay inside", "[landlock]") {
  if (abi() < 6) HUSK_SKIP("Landlock ABI < 6: no scopes");
  int listener = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(listener >= 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string name = "husk-landlock-test-" + std::to_string(::getpid());
  std::copy(name.begin(), name.end(), addr.sun_path + 1);
  const socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  REQUIRE(::bind(listener, reinterpret_cast<sockaddr*>(&addr), len) == 0);
  REQUIRE(::listen(listener, 4) == 0);
  auto connects = [&] {
    int s = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int rc = ::connect(s, reinterpret_cast<sockaddr*>(&addr), len) == 0 ? 0 : errno;
    ::close(s);
    return rc;
  };
  const pid_t parent = ::getpid();
  Plan open_plan;
  CHECK(restricted(open_plan, [&] {
          CHILD_CHECK(connects() == 0);
          CHILD_CHECK(::kill(parent, 0) == 0);
          return 0;
        }) == 0);
  Plan scoped;
  scoped.scope_abstract_unix = scoped.scope_signal = true;
  CHECK(restricted(scoped, [&] {
          CHILD_CHECK(connects() == EPERM);
          CHILD_CHECK(::kill(parent, 0) != 0 && errno == EPERM);
          // Its own children are inside.
          pid_t kid = ::fork();
          if (kid == 0) {
            ::pause();
            ::_exit(0);
          }
          CHILD_CHECK(::kill(kid, SIGKILL) == 0);
          ::waitpid(kid, nullptr, 0);
          return 0;
        }) == 0);
  ::close(listener);
}

TEST_CASE("build: TCP connect only to the given port", "[landlock]") {
  if (abi() < 4) HUSK_SKIP("Landlock ABI < 4: no TCP rules");
  auto listen_any = [](uint16_t& port) {
    int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(::listen(s, 4) == 0);
    socklen_t l = sizeof a;
    ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &l);
    port = ntohs(a.sin_port);
    return s;
  };
  uint16_t allowed = 0, other = 0;
  int s1 = listen_any(allowed), s2 = listen_any(other);
  auto connects = [](uint16_t port) {
    int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    int rc = ::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 ? 0 : errno;
    ::close(s);
    return rc;
  };
  Plan p;
  p.limit_tcp = true;
  p.connect_ports = {allowed};
  CHECK(restricted(p, [&] {
          CHILD_CHECK(connects(allowed) == 0);
          CHILD_CHECK(connects(other) == EACCES);
          int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
          sockaddr_in a{};
          a.sin_family = AF_INET;
          a.sin_port = htons(other + 1);
          CHILD_CHECK(::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 && errno == EACCES);
          return 0;
        }) == 0);
  ::close(s1);
  ::close(s2);
}
