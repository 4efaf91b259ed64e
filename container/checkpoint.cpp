// `checkpoint`: the container's processes dumped by CRIU into an image
// directory, with husk's config and stdio descriptors beside them; then,
// unless --leave-running or --pre-dump, the container is gone as after
// delete (runc's checkpoint).
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstdio>
#include <sstream>

#include "base/error.h"
#include "base/file.h"
#include "base/log.h"
#include "cgroups/cgroups.h"
#include "checkpoint/criu.h"
#include "checkpoint/image.h"
#include "checkpoint/plan.h"
#include "container/checkpoint.h"
#include "container/internal.h"
#include "launch/self_exe.h"
#include "namespaces/namespaces.h"

namespace husk::rt {

namespace {

// `path` in the container's root (its /proc/<pid>/root), nothing followed
// out of it; an invalid Fd when there is none.
Fd in_container(int rootfd, const std::string& path) {
  try {
    return Fd(ns::open_in_root(rootfd, path, O_PATH | O_NOFOLLOW));
  } catch (const Error&) {
    return Fd();
  }
}

// maskedPaths the init bound /dev/null on (files), not directories (a tmpfs).
std::set<std::string> masked_files(int rootfd, const spec::Spec& spec) {
  std::set<std::string> files;
  if (!spec.linux_) return files;
  for (const auto& path : spec.linux_->masked_paths) {
    Fd fd = in_container(rootfd, path);
    struct stat st {};
    if (fd && ::fstat(fd.get(), &st) == 0 && S_ISCHR(st.st_mode)) files.insert(path);
  }
  return files;
}

// The mount ids of the container's mount namespace (the kernel's view, from the host's /proc).
std::set<std::string> mount_ids(pid_t pid) {
  std::set<std::string> ids;
  std::istringstream lines(base::read_file("/proc/" + std::to_string(pid) + "/mountinfo"));
  for (std::string line; std::getline(lines, line);) ids.insert(line.substr(0, line.find(' ')));
  return ids;
}

// Terminals: the Unix98 ptys (136-143), the virtual consoles and /dev/tty, /dev/console (4, 5).
bool is_tty(const struct stat& st) {
  if (!S_ISCHR(st.st_mode)) return false;
  const unsigned m = major(st.st_rdev);
  return m == 4 || m == 5 || (m >= 136 && m <= 143);
}

// A pty of the container's own devpts (process.terminal: CRIU restores it).
bool inside_pty(int rootfd, const struct stat& tty) {
  Fd ptmx = in_container(rootfd, "/dev/pts/ptmx");
  struct stat st {};
  return ptmx && ::fstat(ptmx.get(), &st) == 0 && st.st_dev == tty.st_dev;
}

// What the init's stdin, stdout and stderr are: a pipe as runc records it
// ("pipe:[N]"), a file from outside the container's mounts (the host's
// /dev/null, a log file) as CRIU's external key "file[MNT:INODE]" (hex),
// so restore hands the caller's stdio in for both; anything else by path.
std::vector<std::string> stdio_descriptors(pid_t pid, int rootfd) {
  const std::set<std::string> inside = mount_ids(pid);
  std::vector<std::string> out;
  for (int i = 0; i < 3; ++i) {
    const std::string fd = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(i);
    char buf[4096];
    const ssize_t n = ::readlink(fd.c_str(), buf, sizeof buf - 1);
    if (n <= 0) throw sys_error("readlink " + fd);
    std::string link(buf, static_cast<size_t>(n));
    struct stat st {};
    if (link[0] == '/' && ::stat(fd.c_str(), &st) == 0 && is_tty(st)) {
      // A terminal of the caller's (not the container's own pty): CRIU's
      // external tty, given back from the restoring caller's stdio.
      char key[64];
      std::snprintf(key, sizeof key, "tty[%lx:%lx]", static_cast<unsigned long>(st.st_rdev),
                    static_cast<unsigned long>(st.st_dev));
      if (!inside_pty(rootfd, st)) link = key;
    } else if (link[0] == '/' && ::stat(fd.c_str(), &st) == 0) {
      std::istringstream info(base::read_file("/proc/" + std::to_string(pid) + "/fdinfo/" + std::to_string(i)));
      std::string mnt;
      for (std::string key; info >> key;)
        if (key == "mnt_id:" && info >> mnt) break;
      if (!mnt.empty() && !inside.count(mnt)) {
        char key[64];
        std::snprintf(key, sizeof key, "file[%lx:%lx]", std::stoul(mnt), static_cast<unsigned long>(st.st_ino));
        link = key;
      }
    }
    out.push_back(link);
  }
  return out;
}

uint64_t netns_inode(pid_t pid) {
  struct stat st {};
  const std::string ns = "/proc/" + std::to_string(pid) + "/ns/net";
  if (::stat(ns.c_str(), &st) != 0) throw sys_error("stat " + ns);
  return st.st_ino;
}

// The directory of cgroup `path` whose freezer paused it: CRIU seizes the
// frozen tasks through it and leaves it frozen, as the caller paused it.
std::string freezer_dir(const std::string& path) {
  const cgroups::Hierarchies& h = cgroups::host_hierarchies();
  const auto v1 = h.v1.find("freezer");
  if (h.mode != cgroups::Mode::unified && v1 != h.v1.end()) return v1->second + path;
  return h.unified + path;
}

}  // namespace

void check_checkpointable(const spec::Spec& spec, const Context& g, const std::string& verb) {
  if (g.rootless) throw Error(verb + ": needs root (CRIU cannot " + verb + " a rootless container)");
  // On a v1 host the cgroup mount is a bind of each hierarchy from outside,
  // which CRIU cannot take along (a v2 cgroup namespace mount it can).
  if (cgroups::detect_mode() != cgroups::Mode::unified)
    for (size_t i = 0; i < spec.mounts.size(); ++i)
      if (spec.mounts[i].type == "cgroup")
        throw Error(verb + ": mounts[" + std::to_string(i) + "] mounts the cgroup v1 hierarchies of this " +
                    "hybrid or v1 host (" + spec.mounts[i].destination +
                    "), which husk cannot hand to CRIU; leave it out, or use a cgroup v2 host");
  if (!spec.linux_) return;
  for (const auto& ns : spec.linux_->namespaces) {
    if (ns.type == "user")
      throw Error(verb + ": a container with a user namespace is not supported by husk (linux.namespaces)");
    if (!ns.path.empty() && ns.type != "network")
      throw Error(verb + ": the container joins the " + ns.type +
                  " namespace of another (linux.namespaces); only a joined network namespace is supported");
  }
}

int cmd_checkpoint(const Context& g, const std::string& id, const ckpt::CheckpointFlags& f) {
  ckpt::check_flags(f.criu);
  ckpt::require_criu(companion_path("husk-criu"));
  if (f.criu.lazy_pages && f.page_server.empty() && f.status_fd < 0)
    throw Error("--lazy-pages: needs --page-server or --status-fd (to know when the pages can be served)");
  Store store(g.root);
  Handle h = Handle::open(store, id);
  Record rec = h.load();
  const Status st = live_status(rec);
  // Paused too, as runc: containerd pauses a task around its checkpoint.
  if (st != Status::running && st != Status::paused)
    throw Error("container " + quote(id) + " is " + status_name(st) +
                ": only a running or paused container can be checkpointed");
  const std::string config_text = spec::read_json_file_at(h.dir_fd(), "config.json", h.dir() + "/config.json");
  const spec::Spec sp = spec::parse(config_text);
  check_checkpointable(sp, g, "checkpoint");

  const std::string image_path = f.image_path.empty() ? "checkpoint" : f.image_path;
  Fd images = ckpt::open_image_dir(image_path, "--image-path", true);
  Fd work = f.work_path.empty() ? Fd() : ckpt::open_image_dir(f.work_path, "--work-path", true);
  const int work_fd = work ? work.get() : images.get();
  const pid_t pid = rec.oci.pid;
  // The container's root, opened once for what is looked up inside it.
  const std::string root = "/proc/" + std::to_string(pid) + "/root";
  Fd rootfd(::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!rootfd) throw sys_error("open " + root);
  const std::vector<std::string> stdio = stdio_descriptors(pid, rootfd.get());
  ckpt::write_image_files(images.get(), {config_text, stdio}, image_path);

  ckpt::DumpFacts facts;
  facts.pid = pid;
  facts.rootfs = rec.oci.rootfs;
  facts.images_fd = images.get();
  facts.work_fd = work_fd;
  facts.masked_files = masked_files(rootfd.get(), sp);
  for (const auto& d : stdio)
    if (d.rfind("file[", 0) == 0 || d.rfind("tty[", 0) == 0) facts.external_files.push_back(d);
  if (st == Status::paused) facts.freeze_cgroup = freezer_dir(rec.cgroup_path);
  const spec::Namespace* net = sp.linux_ ? sp.linux_->find_namespace("network") : nullptr;
  if (net && !net->path.empty()) facts.netns_inode = netns_inode(pid);
  // CRIU opens it through husk's /proc, as it does the image directory.
  facts.status_fd = f.status_fd;
  const nlohmann::json opts = ckpt::dump_opts(sp, f, facts);
  const std::string type = ckpt::dump_request(f);
  log::debug("checkpoint " + id + ": " + type + " of pid " + std::to_string(pid) + " into " + image_path);
  ckpt::Criu criu({});
  const ckpt::Reply r = criu.call(companion_path("husk-criu"), type, opts, [](ckpt::Notification&) {});
  if (!r.success) {
    const std::string log = ckpt::log_name(type);
    const std::string errors = ckpt::log_errors(work_fd, log);
    throw Error("checkpoint: criu failed" + (errors.empty() ? r.cr_errmsg.empty() ? "" : ": " + r.cr_errmsg : ": " + errors) +
                " (log: " + (f.work_path.empty() ? image_path : f.work_path) + "/" + log + ")");
  }
  // CRIU ended the processes: the container goes as after delete.
  if (!f.leave_running && !f.pre_dump) destroy_container(h, rec, true, &sp);
  return 0;
}

}  // namespace husk::rt
