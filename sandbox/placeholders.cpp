// Placeholders: the empty directories and files that stand in, on the host,
// for the missing protected names while a sandbox runs (a mount needs a point).
#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <functional>
#include <iostream>
#include <mutex>
#include <system_error>
#include <thread>

#include "base/dir.h"
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

// Marks a placeholder on the host, so that another sandbox that finds it
// there (and keeps it protected) can remove it when it is the last one out.
constexpr char kMark[] = "user.husk-sandbox-placeholder";

bool marked(int fd) {
  char mark;
  return ::fgetxattr(fd, kMark, &mark, 1) == 1;
}

bool is_kind(const struct stat& st, bool file) { return file ? S_ISREG(st.st_mode) : S_ISDIR(st.st_mode); }

// A placeholder opened again at its name, no symlink followed (O_NONBLOCK:
// a FIFO put in a file's place does not block the open).
Fd open_placeholder(int dir, const std::string& name, bool file) {
  return Fd(::openat(dir, name.c_str(),
                     (file ? O_RDONLY | O_NONBLOCK | O_NOCTTY : O_RDONLY | O_DIRECTORY) | O_NOFOLLOW | O_CLOEXEC));
}

// A protected name found there, opened to be held (flock) when it is a
// directory or a regular file: looked at through O_PATH first, so that
// nothing else (a FIFO, a device) is ever opened; O_NONBLOCK, so that a
// lease another process holds on a file does not stall the open.
Fd open_to_hold(int dir, const char* name) {
  Fd path(::openat(dir, name, O_PATH | O_NOFOLLOW | O_CLOEXEC));
  struct stat st;
  if (!path || ::fstat(path.get(), &st) != 0 || !(S_ISDIR(st.st_mode) || S_ISREG(st.st_mode))) return Fd();
  return Fd(::open(("/proc/self/fd/" + std::to_string(path.get())).c_str(),
                   O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
}

// A marked empty file, or a marked directory holding nothing but those
// (another sandbox's .git with .git/hooks in it, its .claude with
// settings.json), a few levels deep.
bool only_placeholders(int fd, int depth = 3) {
  struct stat st;
  if (!marked(fd) || ::fstat(fd, &st) != 0) return false;
  if (S_ISREG(st.st_mode)) return st.st_size == 0;
  base::Dir d = base::open_dir(fd);
  if (!d) return false;
  while (dirent* e = ::readdir(d.get())) {
    if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
    Fd sub = open_to_hold(fd, e->d_name);
    if (depth == 0 || !sub || !only_placeholders(sub.get(), depth - 1)) return false;
  }
  return true;
}

void identify(const struct stat& st, uint64_t id[4]) {
  id[0] = st.st_dev;
  id[1] = st.st_ino;
  id[2] = static_cast<uint64_t>(st.st_ctim.tv_sec);
  id[3] = static_cast<uint64_t>(st.st_ctim.tv_nsec);
}

}  // namespace

std::vector<std::string> Placeholders::make(const std::vector<MissingName>& names,
                                            const std::function<void(const One&)>& made,
                                            std::vector<MissingName>& found) {
  if (names.empty()) return {};
  std::vector<One> want;
  for (const auto& n : names)
    want.push_back({open_parent(n.path), n.path.substr(n.path.rfind('/') + 1), {}, {}, n.file});
  // The user's step says which it made (1), found (2), need not make (0)
  // and could not make (3, with errno) on a pipe: as root it is a child of ours.
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) throw sys_error("husk sandbox: pipe");
  Fd rd(p[0]), wr(p[1]);
  as_user(uid_, gid_, [&] {
    for (const auto& w : want) {
      char out[2] = {1, 0};
      // An ordinary directory or file on the host: what the user puts in it
      // while the sandbox runs (the sandbox sees the read-only mount over
      // it) is theirs, and stays. The user's alone (0700, 0600): another
      // user who opened one could hold it (flock) and keep it there.
      Fd placeholder;
      auto make_one = [&] {
        if (!w.file) return ::mkdirat(w.dir.get(), w.name.c_str(), 0700);
        placeholder =
            Fd(::openat(w.dir.get(), w.name.c_str(), O_CREAT | O_EXCL | O_RDONLY | O_NOFOLLOW | O_CLOEXEC, 0600));
        return placeholder ? 0 : -1;
      };
      if (with_owner_write(w.dir.get(), make_one)) {
        // A file system without user xattrs: the mark is missing, and a
        // sandbox that finds the placeholder leaves it.
        if (!w.file) placeholder = open_placeholder(w.dir.get(), w.name, false);
        if (placeholder) ::fsetxattr(placeholder.get(), kMark, "1", 1, 0);
      } else {
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
      failed += (failed.empty() ? "" : ", ") + base::printable(names[i].path) + " (" +
                std::strerror(static_cast<unsigned char>(said[1])) + ")";
    if (r == 0 || r == 3) {
      refused.push_back(names[i].path);
      continue;
    }
    One& w = want[i];
    // There by now (another sandbox made it meanwhile, or the walk stopped
    // at its bound before it): held as one the walk found; another
    // sandbox's placeholder of the same kind keeps the mount standing in,
    // anything else is bound read-only on itself.
    if (r == 2) {
      const Held h = hold_at(std::move(w.dir), w.name);
      const bool same_kind = h == (w.file ? Held::kPlaceholderFile : Held::kPlaceholderDir);
      if (h != Held::kNothing && !same_kind)
        found.push_back({names[i].path, h == Held::kOtherFile || h == Held::kPlaceholderFile});
      continue;
    }
    // Already replaced: not ours to remove.
    if (r != 1) continue;
    w.lock = open_placeholder(w.dir.get(), w.name, w.file);
    struct stat st;
    if (!w.lock || ::fstat(w.lock.get(), &st) != 0 || !is_kind(st, w.file) || ::flock(w.lock.get(), LOCK_SH) != 0)
      continue;
    identify(st, w.id);
    made(w);
    made_.push_back(std::move(w));
  }
  if (!failed.empty())
    throw Error("husk sandbox: cannot make the empty directory or file that keeps a protected name from being made: " +
                failed + "; --allow-write PATH leaves one unprotected");
  return refused;
}

namespace {

// One placeholder removed if it is still ours ("", also when it is held
// by another sandbox, which found ours and mounted over it: removed, its
// mount would go with it); else what stays and why. Its fd closed here,
// where the last one frees it. `writing`: with_owner_write's way. `err`:
// why it stays (0: removed, or not ours).
std::string remove_one(Placeholders::One& m, const std::function<bool(int, const std::function<int()>&)>& writing,
                       int& err) {
  err = 0;
  Fd opened;
  if (!m.lock)  // the guardian's: opened in a directory the command may have closed (chmod 0)
    writing(m.dir.get(), [&] {
      opened = open_placeholder(m.dir.get(), m.name, m.file);
      return opened ? 0 : -1;
    });
  const int fd = m.lock ? m.lock.get() : opened.get();
  struct stat st;
  uint64_t id[4];
  if (fd < 0 || ::flock(fd, LOCK_EX | LOCK_NB) != 0 || ::fstat(fd, &st) != 0) return "";
  // The same directory, and rmdir removes only an empty one: what the user
  // put there in the meantime stays. A marked one is known by its inode,
  // still at its name (a placeholder made and removed in it changed its
  // ctime); any other by its ctime too, which a rename, rmdir or write
  // changes.
  identify(st, id);
  struct stat now;
  const bool same =
      is_kind(st, m.file) && std::memcmp(id, m.id, (marked(fd) ? 2 : 4) * sizeof id[0]) == 0 &&
      writing(m.dir.get(), [&] { return ::fstatat(m.dir.get(), m.name.c_str(), &now, AT_SYMLINK_NOFOLLOW); }) &&
      now.st_dev == st.st_dev && now.st_ino == st.st_ino;
  // A file has no rmdir's check: one the user wrote in is theirs now (a
  // write between this look and the unlink would go with it).
  if (same && m.file && st.st_size != 0) {
    err = ENOTEMPTY;
  } else if (!same || writing(m.dir.get(), [&] {
               return ::unlinkat(m.dir.get(), m.name.c_str(), m.file ? 0 : AT_REMOVEDIR);
             })) {
    m.lock.reset();
    return "";
  } else {
    err = errno;
  }
  m.lock.reset();
  return placeholder_path(m.dir.get(), m.name) + " (" + left_reason(err) + ")";
}

}  // namespace

void Placeholders::remove() {
  if (made_.empty()) return;
  try {
    as_user(uid_, gid_, [&] {
      // Freeing a directory can wait for the disk (ext4 mounted with
      // discard waits ~4 ms for each), and each would wait in turn. A
      // directory the command closed (chmod) is opened again one at a time:
      // its mode is changed and put back around each step.
      std::mutex reopening;
      auto writing = [&](int dir, const std::function<int()>& step) {
        if (step() == 0) return true;
        if (errno != EACCES) return false;
        std::lock_guard<std::mutex> one(reopening);
        return with_owner_write(dir, step);
      };
      std::vector<std::string> left(made_.size());
      std::vector<int> errs(made_.size());
      auto remove_at = [&](size_t i) { left[i] = remove_one(made_[i], writing, errs[i]); };
      // The files here: unlinking an empty file frees no block, nothing to
      // wait for. The directories side by side, the first one here too:
      // this thread waits for the others anyway.
      std::vector<size_t> files, dirs;
      for (size_t i = 0; i < made_.size(); ++i) (made_[i].file ? files : dirs).push_back(i);
      std::vector<std::thread> removing;
      for (size_t k = 1; k < dirs.size(); ++k) {
        try {
          removing.emplace_back(remove_at, dirs[k]);
        } catch (const std::system_error&) {
          remove_at(dirs[k]);
        }
      }
      try {
        for (size_t i : files) remove_at(i);
        if (!dirs.empty()) remove_at(dirs[0]);
      } catch (...) {  // never leave a joinable thread behind
        for (auto& t : removing) t.join();
        throw;
      }
      for (auto& t : removing) t.join();
      // A directory that held another (another sandbox's .git with our
      // .git/hooks in it) is empty once the other is gone.
      for (size_t i : dirs)
        if (errs[i] == ENOTEMPTY || errs[i] == EEXIST) remove_at(i);
      std::string said;
      for (const auto& l : left)
        if (!l.empty()) said += (said.empty() ? "" : ", ") + l;
      if (!said.empty())
        std::cerr << "husk sandbox: left on the host, what stood in for protected names: " << said
                  << std::endl;
    });
  } catch (const Error&) {
    // What cannot be removed stays, like any leftover of remove_tree.
  }
  made_.clear();
}

Placeholders::Held Placeholders::hold_at(Fd parent, const std::string& name) {
  Fd fd = open_to_hold(parent.get(), name.c_str());
  struct stat st;
  if (!fd || ::flock(fd.get(), LOCK_SH) != 0 || ::fstat(fd.get(), &st) != 0) return Held::kNothing;
  const bool file = S_ISREG(st.st_mode);
  // Another sandbox's placeholder, still empty: ours to remove too, by the
  // same checks, if we are the last one holding it.
  if (only_placeholders(fd.get())) {
    One one{std::move(parent), name, {}, std::move(fd), file};
    identify(st, one.id);
    made_.push_back(std::move(one));
    return file ? Held::kPlaceholderFile : Held::kPlaceholderDir;
  }
  held_.push_back(std::move(fd));
  return file ? Held::kOtherFile : Held::kOtherDir;
}

void Placeholders::hold(const std::vector<std::string>& paths) {
  for (const auto& p : paths) {
    Fd parent;
    try {
      parent = open_parent(p);
    } catch (const Error&) {
      continue;
    }
    hold_at(std::move(parent), p.substr(p.rfind('/') + 1));
  }
}

void Placeholders::send(int sock, const One& one) {
  std::string msg(1 + sizeof one.id, one.file ? 'F' : 'P');
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
  if ((buf[0] != 'P' && buf[0] != 'F') || !dir || n <= static_cast<ssize_t>(kHead)) return Heard::done;
  One one{std::move(dir), std::string(buf + kHead, buf + n), {}, {}, buf[0] == 'F'};
  std::memcpy(one.id, buf + 1, sizeof one.id);
  made_.push_back(std::move(one));
  return Heard::placeholder;
}

}  // namespace husk::rt
