// Landlock (Linux 5.13+): what a process may still reach on the file system
// and the network once restricted, enforced by the kernel whatever the mount
// view says. A Plan names trees and what is allowed there; rights() turns it
// into the access masks of the ABI this kernel has (pure, unit-tested);
// build() opens the trees and makes the ruleset; restrict_self() enforces it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/fd.h"

namespace husk::landlock {

// The kernel's access rights (uapi linux/landlock.h, which older headers
// lack in part), with the ABI that brought each.
constexpr uint64_t kExecute = 1ULL << 0, kWriteFile = 1ULL << 1, kReadFile = 1ULL << 2, kReadDir = 1ULL << 3,
                   kRemoveDir = 1ULL << 4, kRemoveFile = 1ULL << 5, kMakeChar = 1ULL << 6, kMakeDir = 1ULL << 7,
                   kMakeReg = 1ULL << 8, kMakeSock = 1ULL << 9, kMakeFifo = 1ULL << 10, kMakeBlock = 1ULL << 11,
                   kMakeSym = 1ULL << 12;
constexpr uint64_t kRefer = 1ULL << 13;     // ABI 2
constexpr uint64_t kTruncate = 1ULL << 14;  // ABI 3
constexpr uint64_t kIoctlDev = 1ULL << 15;  // ABI 5
constexpr uint64_t kBindTcp = 1ULL << 0, kConnectTcp = 1ULL << 1;             // ABI 4 (net)
constexpr uint64_t kScopeAbstractUnix = 1ULL << 0, kScopeSignal = 1ULL << 1;  // ABI 6
// The rights a rule on a file (not a directory) may carry.
constexpr uint64_t kFileRights = kExecute | kWriteFile | kReadFile | kTruncate | kIoctlDev;

struct Tree {
  std::string path;
  bool write = false;  // else read (and execute) only
};

struct Plan {
  std::vector<Tree> trees;
  // Nothing is granted at or below these inside a read-only tree: the
  // directories on the way down get listing only (which holds below them
  // too: a hidden directory's names can be listed, nothing read), their
  // other entries their tree's rights. Landlock only adds rights, and a right on a
  // directory holds for all below it: inside a writable tree a hidden path
  // would be writable through its parent, so it is left to the mount view
  // (see Rights::not_hidden).
  std::vector<std::string> hidden;
  bool scope_abstract_unix = false;  // no connect to abstract sockets made outside
  bool scope_signal = false;         // no signal to processes outside
  bool limit_tcp = false;            // TCP bind and connect handled: none allowed but...
  std::vector<uint16_t> connect_ports;  // ... connect to these
  // false: no mount view hides anything (husk sandbox without a user
  // namespace): hidden paths inside writable trees are walked around too,
  // and a directory that cannot be listed or has too many entries is never
  // granted whole.
  bool mount_view = true;
  // false: no file system access is handled, `trees` and `hidden` unused. A
  // domain that handles any refuses every mount, unmount and pivot_root, even
  // in a user namespace of its own: a sandbox nested inside needs them.
  bool file_system = true;
};

// The masks for one ABI, and what the plan asks that this kernel cannot do.
struct Rights {
  int abi = 0;
  uint64_t handled_fs = 0, handled_net = 0, scoped = 0;
  uint64_t read = 0, write = 0;  // a tree's rights
  uint64_t route = 0;            // a directory on the way down to a hidden path
  std::vector<std::string> lacking;     // "signals to processes outside (ABI 6)"
  std::vector<std::string> hidden;      // the plan's hidden paths build() denies
  std::vector<std::string> not_hidden;  // the others: inside writable trees
  bool mount_view = true;               // Plan::mount_view
};

// Pure. abi 0: no Landlock here (everything is lacking).
Rights rights(const Plan& plan, int abi);

// The highest ABI this kernel has, 0 without Landlock (disabled, or older
// than 5.13).
int abi();

// How many entries beside hidden paths build() grants one by one at most;
// past it the directory is granted whole, its hidden paths left to the
// mount view (said in `notes`).
constexpr size_t kMaxRules = 4096;

// Opens each tree (and, around hidden paths, each entry) by path as
// O_PATH|O_NOFOLLOW|O_CLOEXEC without following any symlink, so the rule is
// on the inode that was looked at; a tree that does not exist is skipped.
// Returns the ruleset's fd (O_CLOEXEC). Errors name the path:
// "landlock: add rule for /usr: ...".
base::Fd build(const Plan& plan, const Rights& r, std::vector<std::string>& notes);

// build() for this kernel's ABI, the fd moved to `lowest` or above (out of a
// --preserve-fds range); none when the kernel has no Landlock or the plan
// handles nothing it knows (a ruleset handling nothing is EINVAL).
base::Fd ruleset_for(const Plan& plan, int lowest, std::vector<std::string>& notes);

// Sets no_new_privs (Landlock asks for it without CAP_SYS_ADMIN) and
// enforces the ruleset on the calling thread and its future children.
// Allocates nothing unless it fails.
void restrict_self(int ruleset_fd);

}  // namespace husk::landlock
