#include "support.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <sstream>

#include "base/error.h"
#include "base/fdpass.h"
#include "base/mountinfo.h"

namespace fs = std::filesystem;

namespace husk_test {

using husk::sys_error;

std::string make_tempdir(const std::string& prefix) {
  std::string t = (fs::temp_directory_path() / (prefix + "XXXXXX")).string();
  if (!::mkdtemp(t.data())) throw sys_error("mkdtemp " + t);
  return t;
}

namespace {

void remove_below(int dirfd, dev_t dev, const std::string& shown);

void remove_entry(int dirfd, const std::string& name, bool is_dir, dev_t dev, const std::string& shown) {
  const std::string path = shown + "/" + name;
  if (!is_dir) {
    if (::unlinkat(dirfd, name.c_str(), 0) != 0) throw sys_error("unlink " + path);
    return;
  }
  Fd sub(::openat(dirfd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!sub) throw sys_error("open " + path);
  ::fchmod(sub.get(), 0700);  // a test may have left a read-only directory
  remove_below(sub.get(), dev, path);
  if (::unlinkat(dirfd, name.c_str(), AT_REMOVEDIR) != 0) throw sys_error("rmdir " + path);
}

void remove_below(int dirfd, dev_t dev, const std::string& shown) {
  std::vector<std::pair<std::string, bool>> entries;
  {
    DIR* d = ::fdopendir(::fcntl(dirfd, F_DUPFD_CLOEXEC, 0));
    if (!d) throw sys_error("opendir " + shown);
    std::unique_ptr<DIR, int (*)(DIR*)> guard(d, ::closedir);
    while (auto* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n == "." || n == "..") continue;
      struct stat st;
      if (::fstatat(dirfd, n.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      if (st.st_dev != dev) throw husk::Error("refusing to cross a mount at " + shown + "/" + n);
      entries.emplace_back(n, S_ISDIR(st.st_mode));
    }
  }
  for (auto& [n, is_dir] : entries) remove_entry(dirfd, n, is_dir, dev, shown);
}

}  // namespace

void remove_tree(const std::string& path) {
  fs::path p(path);
  if (!p.is_absolute() || std::distance(p.begin(), p.end()) < 3)
    throw husk::Error("refusing to remove " + path);
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) return;
  const std::string prefix = path + "/";
  for (auto& m : husk::base::read_mountinfo())
    if (m.mount_point == path || m.mount_point.rfind(prefix, 0) == 0)
      throw husk::Error("not removing " + path + ": " + m.mount_point + " is still mounted");
  if (!S_ISDIR(st.st_mode)) {
    if (::unlink(path.c_str()) != 0) throw sys_error("unlink " + path);
    return;
  }
  Fd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) throw sys_error("open " + path);
  remove_below(fd.get(), st.st_dev, path);
  if (::rmdir(path.c_str()) != 0) throw sys_error("rmdir " + path);
}

void write_file(const std::string& path, const std::string& data, int mode) {
  Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode));
  if (!fd) throw sys_error("open " + path);
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::write(fd.get(), data.data() + off, data.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw sys_error("write " + path);
    off += static_cast<size_t>(n);
  }
  if (::fchmod(fd.get(), static_cast<mode_t>(mode)) != 0) throw sys_error("chmod " + path);
}

std::string trim(std::string s) {
  auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> v;
  std::istringstream ss(s);
  for (std::string l; std::getline(ss, l);) v.push_back(l);
  return v;
}

bool contains(const std::string& hay, const std::string& needle) { return hay.find(needle) != std::string::npos; }

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  if (from.empty()) return s;
  for (size_t pos = 0; (pos = s.find(from, pos)) != std::string::npos; pos += to.size()) s.replace(pos, from.size(), to);
  return s;
}

Fd listen_unix(const std::string& path) {
  Fd s(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!s) throw sys_error("socket for " + path);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (path.size() >= sizeof a.sun_path) throw husk::Error("socket path too long: " + path);
  std::strcpy(a.sun_path, path.c_str());
  if (::bind(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) throw sys_error("bind " + path);
  if (::listen(s.get(), 1) != 0) throw sys_error("listen " + path);
  return s;
}

bool readable(int fd, int timeout_ms) {
  pollfd p{fd, POLLIN, 0};
  int n;
  do n = ::poll(&p, 1, timeout_ms);
  while (n < 0 && errno == EINTR);
  return n > 0;
}

Fd receive_fd(int listener, int timeout_ms) {
  if (!readable(listener, timeout_ms)) return Fd();
  Fd conn(::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC));
  if (!conn || !readable(conn.get(), timeout_ms)) return Fd();
  char data[4096];
  int fd;
  if (husk::base::recv_with_fd(conn.get(), data, sizeof data, &fd) < 0) return Fd();
  return Fd(fd);
}

Received receive_until_eof(int conn) {
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
    ssize_t n = ::recvmsg(conn, &m, MSG_CMSG_CLOEXEC);
    if (n <= 0) break;
    bool had = false;
    for (cmsghdr* cm = CMSG_FIRSTHDR(&m); cm; cm = CMSG_NXTHDR(&m, cm)) {
      if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS) continue;
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
  return r;
}

void make_bundle(const std::string& dir, const std::string& runtime) {
  auto r = run({HUSK_TEST_MAKE_BUNDLE, dir, runtime}, SpawnOpts{.timeout = 60s});
  if (!r.ok()) throw husk::Error("scripts/make-bundle " + dir + " failed (" + std::to_string(r.code) + "): " + r.err);
}

void copy_rootfs(const std::string& from, const std::string& to, bool hardlink) {
  auto r = run({"cp", hardlink ? "-al" : "-a", from, to}, SpawnOpts{.timeout = 60s});
  if (!r.ok()) throw husk::Error("cp " + from + " " + to + ": " + r.err);
}

}  // namespace husk_test
