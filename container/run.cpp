#include "container/internal.h"

#include "base/error.h"
#include "base/fd.h"
#include "container/operator_policy.h"
#include "container/state.h"
#include "launch/console.h"
#include "launch/foreground.h"

namespace husk::rt {

using base::Fd;

namespace {

int run_bundle(const Context& g, const CreateOptions& o, Bundle b, const CreateExtras& extras) {
  check_console_flags(*b.spec.process, o, o.detach);
  bool terminal = b.spec.process->terminal;

  // Signals are taken through a signalfd from before the clone on, so none is
  // lost; the init unblocks them for itself.
  Fd sigfd(o.detach ? -1 : forwarding_signalfd());

  ConsoleChannel console = open_console_channel(terminal, o.console_socket);
  auto c = create_container(g, o, std::move(b), console.child.get(), extras);
  console.child.reset();
  Fd master(console.parent ? recv_fd(console.parent.get()) : -1);
  if (extras.on_created) extras.on_created(c->rec.oci.pid);
  const std::string late_error = start_container(c->handle, &c->spec);
  c->commit();
  if (!late_error.empty() && extras.on_late_error) extras.on_late_error(late_error);
  if (o.detach) return 0;

  pid_t pid = c->rec.oci.pid;
  std::string id = c->rec.oci.id;
  spec::Spec sp = std::move(c->spec);  // its poststop hooks: not parsed again
  // Free the container lock while we wait so that state/kill/exec work.
  c.reset();
  const int status = extras.wait ? extras.wait(pid, sigfd.get()) : wait_foreground(pid, sigfd.get(), master.get());
  if (!o.keep) {
    Handle h = Handle::open(Store(g.root), id);
    Record rec = h.load();
    destroy_container(h, rec, true, &sp);
  }
  return status;
}

}  // namespace

int run(const Context& g, const CreateOptions& o, const CreateExtras& extras) {
  Bundle b = open_bundle(o.bundle);
  enforce_operator_policy(g, b.spec, b.dir, b.host.probe());
  return run_bundle(g, o, std::move(b), extras);
}

int run_own_config(const Context& g, const CreateOptions& o, nlohmann::ordered_json config,
                   const CreateExtras& extras) {
  try {
    Bundle b = open_bundle(o.bundle, &config);
    config = nullptr;  // in the bundle now: not kept while the command runs
    return run_bundle(g, o, std::move(b), extras);
  } catch (...) {
    // A failure after create (start, the wait) leaves a committed container.
    try {
      Handle h = Handle::open(Store(g.root), o.id);
      Record rec = h.load();
      destroy_container(h, rec, true);
    } catch (const Error&) {
    }
    throw;
  }
}

}  // namespace husk::rt
