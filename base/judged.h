// Host objects a bundle names (namespace files, the rootfs, bind sources,
// overlay layers), opened once and judged by what the fd is, never by the
// path string again: a symlink swapped after the judgement must not change
// what is mounted or joined (issue 23).
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <string>

#include "base/fd.h"

namespace husk::base {

// What a judged fd is: its real path (what /proc/self/fd/N said when it was
// opened, no symlink left in it), device and inode.
struct Identity {
  std::string real;
  dev_t dev = 0;
  ino_t ino = 0;
};

struct Judged {
  std::string field;   // "mounts[2].source": the context of every error about it
  std::string opened;  // the path as it was opened
  Identity id;
  Fd fd;
};

// Open `path` once with `flags` | O_CLOEXEC (symlinks followed, as runc
// does: the path is the caller's) and record what the fd is. Throws naming
// `field` and the path.
Judged judge(const std::string& path, int flags, const std::string& field);

// The judged object found again by its real path, where the path may mean
// something else now (another mount namespace copied later, a rename):
// openat2 without following any symlink or magic link, and it must be the
// same device and inode, else "<field>: changed since it was checked".
Fd reopen_judged(const Identity& id, int flags, const std::string& field);

// Whether a stat result is the judged object.
bool same_object(const struct stat& st, const Identity& id);

}  // namespace husk::base
