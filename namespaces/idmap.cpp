// Idmapped bind mounts, and the bind sources the runtime opens for an init in
// a user namespace: both are made on the host, in the container's mount
// namespace, and passed to the init as fds.
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "base/fdpass.h"
#include "namespaces/id_maps.h"
#include "namespaces/internal.h"

namespace husk::ns {

namespace detail {

// A child unshares the user namespace and waits while we write its maps and
// open it. The child names itself as /proc sees it: in a new pid namespace
// whose /proc is still the host's (the init before pivot) fork()'s answer is
// the wrong number there (2 is the host's kthreadd).
Fd userns_with_mappings(const spec::Mount& m, const std::string& what) {
  int ready[2], hold[2];
  if (pipe2(ready, O_CLOEXEC) < 0) throw sys_error("pipe");
  if (pipe2(hold, O_CLOEXEC) < 0) {
    close(ready[0]);
    close(ready[1]);
    throw sys_error("pipe");
  }
  pid_t pid = fork();
  if (pid == 0) {
    close(ready[0]);
    close(hold[1]);
    char msg[32] = "n";
    ssize_t n = 1;
    if (unshare(CLONE_NEWUSER) == 0) {
      n = readlink("/proc/self", msg + 1, sizeof msg - 2);
      msg[0] = n > 0 ? 'y' : 'p';
      n = n > 0 ? n + 1 : 1;
    }
    if (write(ready[1], msg, static_cast<size_t>(n)) != n) _exit(1);
    (void)!read(hold[0], msg, 1);  // until the parent is done with us
    _exit(0);
  }
  int fork_err = errno;
  close(ready[1]);
  close(hold[0]);
  Fd hold_w(hold[1]);
  Fd ready_r(ready[0]);
  if (pid < 0) throw sys_error("fork for the user namespace of " + what, fork_err);
  Fd ns;
  std::string err;
  char msg[32];
  ssize_t n = read(ready_r.get(), msg, sizeof msg);
  if (n == 1 && msg[0] == 'p') {
    err = what + ": the helper for the idmapped mount's user namespace cannot find itself in /proc";
  } else if (n < 2 || msg[0] != 'y') {
    err = what + ": could not create a user namespace for the idmapped mount";
  } else {
    std::string named(msg + 1, static_cast<size_t>(n - 1));
    std::string dir = "/proc/" + named + "/";
    try {
      // As the container's maps are: by husk, or by newuidmap/newgidmap.
      // Errors name the field: `what` is "mounts[N] (destination)".
      write_id_maps(static_cast<pid_t>(std::stol(named)), m.uid_mappings, m.gid_mappings,
                    what.substr(0, what.find(" (")), current_caller());
    } catch (const Error& e) {
      err = e.what();
    }
    if (err.empty()) {
      ns = Fd(open((dir + "ns/user").c_str(), O_RDONLY | O_CLOEXEC));
      if (!ns) err = sys_error(what + ": open " + dir + "ns/user").what();
    }
  }
  hold_w.reset();
  waitpid(pid, nullptr, 0);
  if (!err.empty()) throw Error(err);
  return ns;
}

Fd idmapped_tree(const spec::Mount& m, int userns_fd, const std::string& what, const base::Identity* judged) {
  spec::MountOptions mo = spec::parse_mount_options(m.options);
  if (!mo.bind && m.type != "bind") throw Error(what + ": idmap is only supported on bind mounts");
  if (m.uid_mappings.empty() != m.gid_mappings.empty())
    throw Error(what + ": uidMappings and gidMappings must be given together");
  Fd own;
  if (!m.uid_mappings.empty()) {
    own = userns_with_mappings(m, what);
    userns_fd = own.get();
  }
  if (userns_fd < 0) throw Error(what + ": an idmapped mount needs uidMappings/gidMappings or a user namespace");
  Fd source = judged ? base::reopen_judged(*judged, O_PATH, what + ": source") : open_source(m.source, what);
  Fd tree = bind_tree(source.get(), m.source, mo, what);
  struct mount_attr a{};
  a.attr_set = MOUNT_ATTR_IDMAP;
  a.userns_fd = static_cast<uint64_t>(userns_fd);
  if (mount_setattr(tree.get(), "", AT_EMPTY_PATH | (mo.recursive_idmap ? AT_RECURSIVE : 0), &a, sizeof a) < 0) {
    int e = errno;
    std::string msg = sys_error(what + ": idmap " + m.source, e).what();
    if (e == EPERM)
      msg += " (the kernel idmaps a filesystem only for a caller privileged over the user namespace it was "
             "mounted in: without root on the host, not a host filesystem)";
    if (e == EINVAL) msg += " (its filesystem does not support idmapped mounts)";
    throw Error(msg, e);
  }
  return tree;
}

}  // namespace detail

using detail::Fd;

int make_idmapped_mount(const spec::Mount& m, int userns_fd) {
  std::string what = "mount " + m.destination;
  Fd tree = detail::idmapped_tree(m, userns_fd, what);
  return tree.release();
}

std::vector<size_t> runtime_opened_sources(const spec::Spec& spec, bool init_is_runtime_user) {
  std::vector<size_t> out;
  if (init_is_runtime_user || !spec.linux_ || !spec.linux_->has_namespace("user") || !spec.linux_->has_namespace("mount"))
    return out;
  for (size_t i = 0; i < spec.mounts.size(); ++i) {
    const auto& m = spec.mounts[i];
    if (!spec::is_idmapped(m) && (m.type == "bind" || spec::parse_mount_options(m.options).bind)) out.push_back(i);
  }
  return out;
}

InitNamespaces open_init_namespaces(const spec::Spec& spec, pid_t pid, int joined_mnt) {
  InitNamespaces at;
  at.proc = "/proc/" + std::to_string(pid) + "/";
  const spec::Namespace* mnt = spec.linux_ ? spec.linux_->find_namespace("mount") : nullptr;
  bool joined = mnt && !mnt->path.empty();
  at.mnt_path = joined ? mnt->path : at.proc + "ns/mnt";
  at.user = Fd(open((at.proc + "ns/user").c_str(), O_RDONLY | O_CLOEXEC));
  if (!at.user) throw sys_error("open the container's user namespace " + at.proc + "ns/user");
  if (joined && joined_mnt < 0) throw Error("the mount namespace " + at.mnt_path + " was not opened by the runtime");
  at.mnt = Fd(joined ? fcntl(joined_mnt, F_DUPFD_CLOEXEC, 0) : open(at.mnt_path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!at.mnt) throw sys_error("open the container's mount namespace " + at.mnt_path);
  if (!joined) {
    at.cwd = Fd(open((at.proc + "cwd").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!at.cwd) throw sys_error("open " + at.proc + "cwd");
  }
  return at;
}

namespace {

// One message per source: {stage, errno, why} and, when it opened, the fd.
struct SourceReply {
  char stage;  // 'u' setns user, 'n' setns mount, 'c' fchdir, 'i' idmapped tree (why), 'o' opened (or err)
  int err;
  char why[1024];
};

// The forked helper: enter the init's mount namespace and cwd and send back
// each source (an idmapped one as its detached idmapped tree, cloned from the
// container's copy of the source's mount so the host's locked flags hold).
[[noreturn]] void serve_sources(int sock, const InitNamespaces& at, const spec::Spec& spec,
                                const std::vector<size_t>& indexes, const std::map<size_t, base::Identity>& judged,
                                const std::vector<Fd>& own_userns, int userns_fd) {
  auto reply = [&](char stage, int err, const char* why, int fd) {
    SourceReply r{stage, err, {}};
    if (why) strncpy(r.why, why, sizeof r.why - 1);
    if (base::send_with_fd(sock, &r, sizeof r, fd) < 0) _exit(1);
  };
  // Without root the init's user namespace first: setns into a mount
  // namespace needs CAP_SYS_ADMIN in our own user namespace too.
  if (geteuid() != 0 && setns(at.user.get(), CLONE_NEWUSER) < 0) {
    reply('u', errno, nullptr, -1);
    _exit(1);
  }
  if (setns(at.mnt.get(), CLONE_NEWNS) < 0) {
    reply('n', errno, nullptr, -1);
    _exit(1);
  }
  if (at.cwd && fchdir(at.cwd.get()) < 0) {
    reply('c', errno, nullptr, -1);
    _exit(1);
  }
  for (size_t k = 0; k < indexes.size(); ++k) {
    const auto& m = spec.mounts[indexes[k]];
    auto id = judged.find(indexes[k]);
    const base::Identity* judged_source = id != judged.end() ? &id->second : nullptr;
    if (spec::is_idmapped(m)) {
      try {
        spec::Mount with_ns = m;
        if (own_userns[k]) {
          with_ns.uid_mappings.clear();
          with_ns.gid_mappings.clear();
        }
        Fd tree = detail::idmapped_tree(with_ns, own_userns[k] ? own_userns[k].get() : userns_fd,
                                        mount_what(indexes[k], m), judged_source);
        reply('o', 0, nullptr, tree.get());
      } catch (const std::exception& e) {
        reply('i', 0, e.what(), -1);
        _exit(1);
      }
      continue;
    }
    if (judged_source) {
      try {
        Fd fd = base::reopen_judged(*judged_source, O_PATH, "mounts[" + std::to_string(indexes[k]) + "].source");
        reply('o', 0, nullptr, fd.get());
      } catch (const std::exception& e) {
        reply('i', 0, e.what(), -1);
        _exit(1);
      }
      continue;
    }
    int fd = open(m.source.c_str(), O_PATH | O_CLOEXEC);
    reply('o', fd < 0 ? errno : 0, nullptr, fd);
    if (fd < 0) _exit(1);
    close(fd);
  }
  _exit(0);
}

// The helper's replies, one per index in order; the first failure becomes
// the error (the fds received until then are closed).
std::vector<int> collect_sources(int sock, const InitNamespaces& at, const spec::Spec& spec,
                                 const std::vector<size_t>& indexes) {
  std::vector<Fd> fds;
  for (size_t k = 0; k < indexes.size(); ++k) {
    SourceReply r{};
    int got;
    ssize_t n = base::recv_with_fd(sock, &r, sizeof r, &got);
    Fd passed(got);
    const auto& m = spec.mounts[indexes[k]];
    std::string what = mount_what(indexes[k], m);
    r.why[sizeof r.why - 1] = '\0';
    if (n != static_cast<ssize_t>(sizeof r)) throw Error(what + ": the helper opening bind sources died");
    if (r.stage == 'u') throw sys_error("enter the init's user namespace " + at.proc + "ns/user", r.err);
    if (r.stage == 'n') throw sys_error("enter the container's mount namespace " + at.mnt_path, r.err);
    if (r.stage == 'c') throw sys_error("enter the init's working directory " + at.proc + "cwd", r.err);
    if (r.stage == 'i') throw Error(r.why);
    if (r.err != 0 || !passed) throw sys_error(what + ": open bind source " + m.source, r.err ? r.err : EPROTO);
    fds.push_back(std::move(passed));
  }
  std::vector<int> out;
  for (auto& fd : fds) out.push_back(fd.release());
  return out;
}

}  // namespace

std::vector<int> open_bind_sources(const spec::Spec& spec, const std::vector<size_t>& indexes,
                                   const InitNamespaces& at, const std::map<size_t, base::Identity>& judged,
                                   int userns_fd) {
  if (indexes.empty()) return {};
  // A mount's own uidMappings/gidMappings namespace is made here, on the
  // host: the helper's /proc may be a joined namespace's, where it is not.
  std::vector<Fd> own_userns(indexes.size());
  for (size_t k = 0; k < indexes.size(); ++k) {
    const auto& m = spec.mounts[indexes[k]];
    if (spec::is_idmapped(m) && !m.uid_mappings.empty())
      own_userns[k] = detail::userns_with_mappings(m, mount_what(indexes[k], m));
  }
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) throw sys_error("socketpair for bind sources");
  Fd mine(sv[0]), theirs(sv[1]);
  pid_t pid = fork();
  if (pid < 0) throw sys_error("fork to open bind sources");
  if (pid == 0) serve_sources(theirs.get(), at, spec, indexes, judged, own_userns, userns_fd);
  theirs.reset();
  std::vector<int> fds;
  std::string err;
  try {
    fds = collect_sources(mine.get(), at, spec, indexes);
  } catch (const Error& e) {
    err = e.what();
  }
  mine.reset();
  while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  if (!err.empty()) throw Error(err);
  return fds;
}

}  // namespace husk::ns
