// `restore`: a new container from a checkpoint image and a bundle. It is
// made as create makes one (state, cgroup with the bundle's limits, pid
// file), but its init comes from CRIU: a Launcher of the launch pipeline
// that starts `criu swrk` inside the container's cgroup and hands the
// restored pid to the pipeline's steps. Running once CRIU is done.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <memory>

#include "base/error.h"
#include "base/file.h"
#include "base/judged.h"
#include "base/log.h"
#include "checkpoint/criu.h"
#include "checkpoint/image.h"
#include "checkpoint/plan.h"
#include "container/checkpoint.h"
#include "container/internal.h"
#include "container/operator_policy.h"
#include "launch/console.h"
#include "launch/foreground.h"
#include "launch/hooks.h"
#include "launch/init.h"
#include "launch/launch.h"
#include "launch/self_exe.h"
#include "namespaces/namespaces.h"

namespace husk::rt {

namespace {

// The image as restore found it.
struct Image {
  std::string shown;  // the path given
  Fd dir, work;
  ckpt::ImageFiles files;
};

// "N:controllers:/path" lines of /proc/<pid>/cgroup: where criu is, which
// is the container's cgroup and the root CRIU restores the tree's into.
std::vector<std::pair<std::string, std::string>> cgroups_of(pid_t pid) {
  std::vector<std::pair<std::string, std::string>> out;
  std::istringstream lines(base::read_file("/proc/" + std::to_string(pid) + "/cgroup"));
  for (std::string line; std::getline(lines, line);) {
    const size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    std::string ctrl = line.substr(a + 1, b - a - 1);
    if (ctrl.rfind("name=", 0) == 0) continue;  // named hierarchies (systemd's) are not the container's
    out.emplace_back(ctrl, line.substr(b + 1));
  }
  return out;
}

// CRIU binds the mounts over mountpoints it expects in the root, as create
// made them: a new rootfs (podman's restore --import) may lack them, so
// they are made inside the judged root (a file for a file's bind), never
// outside it.
void make_bind_targets(const spec::Spec& sp, const HostObjects& host) {
  for (const auto& [index, src] : host.sources) {
    struct stat st {};
    const bool file = ::fstat(src.fd.get(), &st) == 0 && !S_ISDIR(st.st_mode);
    const std::string& dest = sp.mounts[index].destination;
    ns::make_mount_point(host.root->fd.get(), dest, file, "mounts[" + std::to_string(index) + "].destination " + dest);
  }
}

class RestoreLauncher final : public Launcher {
 public:
  RestoreLauncher(const InitRequest& req, const ckpt::RestoreFlags& flags, const Image& image)
      : req_(req), flags_(flags), image_(image) {}

  pid_t launch(Pipeline& p) override {
    const spec::Spec& sp = *req_.spec;
    // criu gets our stdio (a shim's pipes) for the restored stdio, and the
    // network namespace to join at 5.
    std::vector<std::pair<int, int>> fds = {{0, 0}, {1, 1}, {2, 2}};
    ckpt::RestoreFacts facts;
    facts.rootfs = req_.state->rootfs;
    facts.images_fd = image_.dir.get();
    facts.work_fd = image_.work ? image_.work.get() : image_.dir.get();
    facts.descriptors = image_.files.descriptors;
    if (sp.linux_)
      facts.masked_files = {sp.linux_->masked_paths.begin(), sp.linux_->masked_paths.end()};
    for (const auto& [index, fd] : req_.host->namespace_fds())
      if (sp.linux_->namespaces[index].type == "network") {
        fds.emplace_back(fd, 5);
        facts.netns_fd = 5;
      }
    // Bind sources as they were judged, not as the config spells them.
    // CRIU takes paths and mounts in a mount namespace of its own, where
    // husk's fds cannot be bound from: each path is checked once more to
    // still be the object judged (no symlink on it), just before.
    make_bind_targets(sp, *req_.host);
    spec::Spec judged = sp;
    base::reopen_judged(req_.host->root->id, O_PATH | O_DIRECTORY, "root.path");
    for (const auto& [index, src] : req_.host->sources) {
      base::reopen_judged(src.id, O_PATH, src.field);
      judged.mounts[index].source = src.id.real;
    }
    ckpt::Criu criu(fds);
    if (p.cgroup) p.cgroup->attach(criu.pid(), false);
    facts.cgroups = cgroups_of(criu.pid());
    const nlohmann::json opts = ckpt::restore_opts(judged, flags_, facts);
    log::debug("restore " + req_.state->id + ": criu " + std::to_string(criu.pid()) + " from " + image_.shown);
    pid_t restored = 0;
    const ckpt::Reply r = criu.call(companion_path("husk-criu"), "RESTORE", opts, [&](ckpt::Notification& n) {
      if (n.script == "orphan-pts-master") {
        if (!n.fd) throw Error("restore: CRIU sent no pty master");
        if (req_.console_fd < 0) throw Error("restore: the image has a terminal, but no console was set up");
        send_fd(req_.console_fd, n.fd.get(), "console");
      } else if (n.script == "setup-namespaces") {
        // The restored tree's namespaces exist, nothing runs yet: the
        // hooks that set a container up get it now, as with runc.
        spec::State st = *req_.state;
        st.pid = n.pid;
        const std::string state_json = spec::state_to_json(st, false);
        run_hooks(sp.hooks.prestart, "prestart", state_json);
        run_hooks(sp.hooks.create_runtime, "createRuntime", state_json);
      } else if (n.script == "post-restore") {
        restored = n.pid;
        // Restored inside criu's cgroup, the container's: nothing to move.
        Placement placed;
        placed.by_itself = true;
        p.place(restored, placed);
      }
    });
    if (!r.success) {
      const std::string errors = ckpt::log_errors(facts.work_fd, ckpt::log_name("RESTORE"));
      throw Error("restore: criu failed" +
                  (errors.empty() ? (r.cr_errmsg.empty() ? "" : ": " + r.cr_errmsg) : ": " + errors) + " (log: " +
                  (flags_.work_path.empty() ? image_.shown : flags_.work_path) + "/restore.log)");
    }
    if (r.pid != restored) throw Error("restore: criu restored pid " + std::to_string(r.pid) + " but announced " +
                                       std::to_string(restored));
    return r.pid;
  }

 private:
  const InitRequest& req_;
  const ckpt::RestoreFlags& flags_;
  const Image& image_;
};

Image open_image(const ckpt::RestoreFlags& f, const spec::Spec& bundle) {
  Image im;
  im.shown = f.image_path.empty() ? "checkpoint" : f.image_path;
  im.dir = ckpt::open_image_dir(im.shown, "--image-path", false);
  if (!f.work_path.empty()) im.work = ckpt::open_image_dir(f.work_path, "--work-path", true);
  im.files = ckpt::read_image_files(im.dir.get(), im.shown);
  spec::Spec made_from;
  try {
    made_from = spec::parse(im.files.config_text);
  } catch (const Error& e) {
    rethrow_with(im.shown + "/" + ckpt::kImageConfig, e);
  }
  const std::string differs = ckpt::config_mismatch(made_from, bundle);
  if (!differs.empty())
    throw Error("restore: the image in " + im.shown + " was made from another container's config: " + differs +
                " differs from the bundle's");
  return im;
}

}  // namespace

int cmd_restore(const Context& g, const std::string& id, const ckpt::RestoreFlags& f) {
  ckpt::check_flags(f.criu);
  ckpt::require_criu(companion_path("husk-criu"));
  Store::check_id(id);
  Bundle b = open_bundle(f.bundle);
  enforce_operator_policy(g, b.spec, b.dir, b.host.probe());
  check_checkpointable(b.spec, g, "restore");
  const Image image = open_image(f, b.spec);
  CreateOptions o;
  o.id = id;
  o.bundle = f.bundle;
  o.pid_file = f.pid_file;
  o.console_socket = f.console_socket;
  o.no_pivot = f.no_pivot;
  o.detach = f.detach;
  check_console_flags(*b.spec.process, o, f.detach);
  Fd sigfd(f.detach ? -1 : forwarding_signalfd());
  ConsoleChannel console = open_console_channel(b.spec.process->terminal, f.console_socket);

  Context rg = g;
  rg.init_launcher = [&](const InitRequest& req) { return std::make_unique<RestoreLauncher>(req, f, image); };
  auto c = create_container(rg, o, std::move(b), console.child.get());
  console.child.reset();
  Fd master(console.parent ? recv_fd(console.parent.get()) : -1);
  c->rec.oci.status = status_name(Status::running);
  c->handle.save(c->rec);
  c->commit();
  if (f.detach) return 0;

  const pid_t pid = c->rec.oci.pid;
  spec::Spec sp = std::move(c->spec);
  c.reset();  // the lock: state, kill and exec work while we wait
  const int status = wait_foreground(pid, sigfd.get(), master.get());
  Handle h = Handle::open(Store(g.root), id);
  Record rec = h.load();
  destroy_container(h, rec, true, &sp);
  return status;
}

}  // namespace husk::rt
