// Placeholders: the empty directories that stand in, on the host, for the
// missing protected names while a sandbox runs (a mount needs a point).
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <functional>
#include <iostream>
#include <mutex>
#include <system_error>
#include <thread>

#include "base/error.h"
#include "base/fdpass.h"
#include "base/printable.h"
#include "sandbox/internal.h"

namespace husk::rt {

using base::Fd;

namespace {

// The directory of a real path, no symlink followed on the way (it was
// judged to have none: one swapped in since is refused).
Fd open_parent(const std::string& path) {
  open_how how{};
  how.flags = O_PATH | O_DIRECTORY | O_CLOEXEC;
  how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  const std::string parent = path.substr(0, std::max<size_t>(path.rfind('/'), 1));
  Fd fd(static_cast<int>(::syscall(SYS_openat2, AT_FDCWD, parent.c_str(), &how, sizeof how)));
  if (!fd) throw sys_error("husk sandbox: open " + parent + " to make " + path + " (a symlink is not followed)");
  return fd;
}

void identify(const struct stat& st, uint64_t id[4]) {
  id[0] = st.st_dev;
  id[1] = st.st_ino;
  id[2] = static_cast<uint64_t>(st.st_ctim.tv_sec);
  id[3] = static_cast<uint64_t>(st.st_ctim.tv_nsec);
}

}  // namespace

std::vector<std::string> Placeholders::make(const std::vector<std::string>& paths,
                                            const std::function<void(const One&)>& made) {
  if (paths.empty()) return {};
  std::vector<One> want;
  for (const auto& p : paths) want.push_back({open_parent(p), p.substr(p.rfind('/') + 1), {}, {}});
  // The user's step says which it made (1), found (2), need not make (0)
  // and could not make (3, with errno) on a pipe: as root it is a child of ours.
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) throw sys_error("husk sandbox: pipe");
  Fd rd(p[0]), wr(p[1]);
  as_user(uid_, gid_, [&] {
    for (const auto& w : want) {
      char out[2] = {1, 0};
      // An ordinary directory on the host: what the user makes in it while
      // the sandbox runs (the sandbox sees the read-only mount over it) is
      // theirs, and stays.
      if (!with_owner_write(w.dir.get(), [&] { return ::mkdirat(w.dir.get(), w.name.c_str(), 0755); })) {
        // Not the user's to write, a read-only mount: nor the command's.
        const bool none_needed = errno == EACCES || errno == EPERM || errno == EROFS;
        out[0] = errno == EEXIST ? 2 : none_needed ? 0 : 3;
        out[1] = static_cast<char>(errno);
      }
      if (::write(wr.get(), out, 2) != 2) throw sys_error("husk sandbox: pipe");
    }
  });
  wr.reset();
  std::vector<std::string> refused;
  std::string failed;
  for (size_t i = 0; i < want.size(); ++i) {
    char said[2];
    if (::read(rd.get(), said, 2) != 2) throw Error("husk sandbox: the placeholders' step said nothing");
    const char r = said[0];
    // The command could make the name later (space freed, a link removed):
    // not started unprotected.
    if (r == 3)
      failed += (failed.empty() ? "" : ", ") + base::printable(paths[i]) + " (" +
                std::strerror(static_cast<unsigned char>(said[1])) + ")";
    if (r == 0 || r == 3) {
      refused.push_back(paths[i]);
      continue;
    }
    // Made by someone else (2) or already replaced: not ours to remove.
    if (r != 1) continue;
    One& w = want[i];
    w.lock = Fd(::openat(w.dir.get(), w.name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    struct stat st;
    if (!w.lock || ::fstat(w.lock.get(), &st) != 0 || ::flock(w.lock.get(), LOCK_SH) != 0) continue;
    identify(st, w.id);
    made(w);
    made_.push_back(std::move(w));
  }
  if (!failed.empty())
    throw Error("husk sandbox: cannot make the empty directory that keeps a protected name from being made: " +
                failed + "; --allow-write PATH leaves one unprotected");
  return refused;
}

namespace {

// One placeholder removed if it is still ours ("", also when it is held
// by another sandbox, which found ours and mounted over it: removed, its
// mount would go with it); else what stays and why. Its fd closed here,
// where the last one frees it. `writing`: with_owner_write's way.
std::string remove_one(Placeholders::One& m, const std::function<bool(int, const std::function<int()>&)>& writing) {
  Fd opened;
  if (!m.lock)  // the guardian's: opened in a directory the command may have closed (chmod 0)
    writing(m.dir.get(), [&] {
      opened = Fd(::openat(m.dir.get(), m.name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      return opened ? 0 : -1;
    });
  const int fd = m.lock ? m.lock.get() : opened.get();
  struct stat st;
  uint64_t id[4];
  if (fd < 0 || ::flock(fd, LOCK_EX | LOCK_NB) != 0 || ::fstat(fd, &st) != 0) return "";
  // The same directory, and rmdir removes only an empty one: what the user
  // put there in the meantime stays.
  identify(st, id);
  if (std::memcmp(id, m.id, sizeof id) != 0 ||
      writing(m.dir.get(), [&] { return ::unlinkat(m.dir.get(), m.name.c_str(), AT_REMOVEDIR); })) {
    m.lock.reset();
    return "";
  }
  const int err = errno;
  m.lock.reset();
  return placeholder_path(m.dir.get(), m.name) + " (" + left_reason(err) + ")";
}

}  // namespace

void Placeholders::remove() {
  if (made_.empty()) return;
  try {
    as_user(uid_, gid_, [&] {
      // Side by side: freeing a directory can wait for the disk (ext4
      // mounted with discard waits ~4 ms for each), and each would wait in
      // turn. A directory the command closed (chmod) is opened again one at
      // a time: its mode is changed and put back around each step.
      std::mutex reopening;
      std::vector<std::string> left(made_.size());
      auto remove_at = [&](size_t i) {
        left[i] = remove_one(made_[i], [&](int dir, const std::function<int()>& step) {
          if (step() == 0) return true;
          if (errno != EACCES) return false;
          std::lock_guard<std::mutex> one(reopening);
          return with_owner_write(dir, step);
        });
      };
      std::vector<std::thread> removing;
      for (size_t i = 0; i < made_.size(); ++i) {
        try {
          removing.emplace_back(remove_at, i);
        } catch (const std::system_error&) {
          remove_at(i);
        }
      }
      for (auto& t : removing) t.join();
      std::string said;
      for (const auto& l : left)
        if (!l.empty()) said += (said.empty() ? "" : ", ") + l;
      if (!said.empty())
        std::cerr << "husk sandbox: left on the host, empty directories that stood in for protected names: " << said
                  << std::endl;
    });
  } catch (const Error&) {
    // What cannot be removed stays, like any leftover of remove_tree.
  }
  made_.clear();
}

void Placeholders::hold(const std::vector<std::string>& paths) {
  for (const auto& p : paths) {
    open_how how{};
    how.flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
    how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    Fd fd(static_cast<int>(::syscall(SYS_openat2, AT_FDCWD, p.c_str(), &how, sizeof how)));
    if (fd && ::flock(fd.get(), LOCK_SH) == 0) held_.push_back(std::move(fd));
  }
}

void Placeholders::send(int sock, const One& one) {
  std::string msg(1 + sizeof one.id, 'P');
  std::memcpy(&msg[1], one.id, sizeof one.id);
  msg += one.name;
  if (base::send_with_fd(sock, msg.data(), msg.size(), one.dir.get()) < 0)
    throw sys_error("husk sandbox: tell the guardian of " + one.name);
}

Placeholders::Heard Placeholders::receive(int sock, NewFiles* watch) {
  constexpr size_t kHead = 1 + sizeof(One::id);
  char buf[kHead + 4096];
  int fd = -1;
  ssize_t n;
  while ((n = base::recv_with_fd(sock, buf, sizeof buf, &fd)) < 0 && errno == EINTR) {
  }
  if (n <= 0) return Heard::gone;  // or the socket broke: the same to us
  Fd dir(fd);
  if (buf[0] == 'W' && dir && watch) {
    watch->add(std::move(dir), std::string(buf + 1, buf + n));
    return Heard::placeholder;
  }
  if (buf[0] != 'P' || !dir || n <= static_cast<ssize_t>(kHead)) return Heard::done;
  One one{std::move(dir), std::string(buf + kHead, buf + n), {}, {}};
  std::memcpy(one.id, buf + 1, sizeof one.id);
  made_.push_back(std::move(one));
  return Heard::placeholder;
}

}  // namespace husk::rt
