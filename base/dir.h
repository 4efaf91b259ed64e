// Owns one directory stream: closed when the owner goes.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <memory>

namespace husk::base {

struct CloseDir {
  void operator()(DIR* d) const { ::closedir(d); }
};
// Dir d(::opendir(path)): empty, with errno set, when it could not be opened.
using Dir = std::unique_ptr<DIR, CloseDir>;

// A stream over a new open file description of the directory `fd` (which
// stays the caller's): it starts at the first entry whatever an earlier
// listing of `fd` read, as a dup, sharing the position, would not. Empty,
// with errno set, when it cannot be opened.
inline Dir open_dir(int fd) {
  const int copy = ::openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (copy < 0) return nullptr;
  Dir d(::fdopendir(copy));
  if (!d) {
    const int err = errno;
    ::close(copy);
    errno = err;
  }
  return d;
}

}  // namespace husk::base
