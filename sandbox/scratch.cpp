// The scratch home: what the command wrote there is lost at exit, and said.
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <sys/statfs.h>
#include <sys/syscall.h>

#include <cstdlib>
#include <cstring>

#include "base/dir.h"
#include "base/file.h"
#include "base/path.h"
#include "base/printable.h"
#include "sandbox/internal.h"

namespace husk::rt {
namespace {

constexpr size_t kMaxListed = 1000;

}  // namespace

ScratchHome::ScratchHome(const nlohmann::ordered_json& config, const std::string& home) {
  bool scratch = false;
  for (const auto& m : config["mounts"]) {
    const std::string dest = m["destination"];
    if (dest == home && m["type"] == "tmpfs") scratch = true;
    if (dest == home || !base::is_within(dest, home)) continue;
    // The mount points the runtime made in it, and the directories above them.
    for (size_t slash = dest.find('/', home.size() + 1);; slash = dest.find('/', slash + 1)) {
      made_.insert(dest.substr(home.size() + 1, slash == std::string::npos ? slash : slash - home.size() - 1));
      if (slash == std::string::npos) break;
    }
  }
  if (scratch) home_ = home;
}

void ScratchHome::open(pid_t pid) {
  if (home_.empty() || fd_) return;
  const std::string proc = "/proc/" + std::to_string(pid);
  base::Fd root(::open((proc + "/root").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  // The sandbox's pid 1 never execs: only its child, the command, was
  // exec'd in the sandbox's user namespace, where unprivileged husk may look.
  if (!root) {
    const std::string children = base::try_read_file(proc + "/task/" + std::to_string(pid) + "/children").value_or("");
    const long child = std::strtol(children.c_str(), nullptr, 10);
    if (child > 0) root = base::Fd(::open(("/proc/" + std::to_string(child) + "/root").c_str(),
                                          O_PATH | O_DIRECTORY | O_CLOEXEC));
  }
  if (!root) return;
  open_how how{};
  how.flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  base::Fd fd(static_cast<int>(::syscall(SYS_openat2, root.get(), home_.c_str() + 1, &how, sizeof how)));
  struct statfs fs;
  if (fd && ::fstatfs(fd.get(), &fs) == 0 && fs.f_type == TMPFS_MAGIC) fd_ = std::move(fd);
}

void ScratchHome::look(int dir, const std::string& rel, std::vector<std::string>& out) const {
  base::Dir d = base::open_dir(dir);
  if (!d) return;
  // The command may have made millions of names: the exit waits for no more than kMaxListed.
  while (out.size() < kMaxListed) {
    dirent* e = ::readdir(d.get());
    if (!e) break;
    if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
    const std::string path = rel.empty() ? e->d_name : rel + "/" + e->d_name;
    if (!made_.count(path)) {
      out.push_back(path);
      continue;
    }
    // Below a mount point is the mount's; above one, the command may have written too.
    base::Fd sub(::openat(dir, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    struct statfs fs;
    if (sub && ::fstatfs(sub.get(), &fs) == 0 && fs.f_type == TMPFS_MAGIC) look(sub.get(), path, out);
  }
}

std::string ScratchHome::discarded() const {
  if (!fd_) return "";
  std::vector<std::string> written;
  look(fd_.get(), "", written);
  if (written.empty()) return "";
  std::string list;
  // Names the command chose: no control byte of theirs reaches the terminal.
  for (size_t i = 0; i < written.size() && i < 5; ++i) list += (i ? ", " : "") + base::printable(written[i]);
  if (written.size() > 5)
    list += ", ... (" + std::string(written.size() < kMaxListed ? "" : "at least ") + std::to_string(written.size()) +
            " in all)";
  return "husk sandbox: what the command wrote in the scratch home " + base::printable(home_) +
         " (a tmpfs: no flag shows the real one) is discarded: " + list;
}

}  // namespace husk::rt
