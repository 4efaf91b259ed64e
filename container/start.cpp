#include "container/internal.h"

#include "base/error.h"
#include "base/fd.h"
#include "base/log.h"
#include "container/state.h"
#include "launch/hooks.h"
#include "launch/init.h"

namespace husk::rt {

using base::Fd;

// `spec` is the config when the caller has it already (run); start reads it.
std::string start_container(Handle& h, const spec::Spec* spec) {
  Record rec = h.load();
  require(Verb::start, live_status(rec), rec.oci.id);
  spec::Spec loaded;
  if (!spec) loaded = h.config();
  const spec::Spec& sp = spec ? *spec : loaded;
  const LateFailure failed = release_init(h.dir_fd(), rec.oci.pid, rec.start_time, [&] {
    rec.oci.status = status_name(Status::running);
    h.save(rec);
    // startContainer hooks and the exec may take long: kill/delete must not wait.
    h.unlock();
  });
  if (!failed.error.empty() && !failed.in_exec) throw Error(failed.error);
  if (failed.in_exec) {
    // As with runc, start has done its part once the init is released: the
    // error is shown and the container stops with status 1 (engines map a
    // failed start to 126/127, where runc's callers see the exit status).
    // Nothing ran, so no poststart hook runs.
    log::error(failed.error);
    return failed.error;
  }
  try {
    run_hooks(sp.hooks.poststart, "poststart", spec::state_to_json(rec.oci, false));
  } catch (const Error&) {
    // runtime.md (1.3) lifecycle step 9: a failing poststart hook is an
    // error, and the container is stopped.
    std::vector<Fd> init;
    if (Fd fd = open_init(rec)) init.push_back(std::move(fd));
    kill_and_wait(init);
    throw;
  }
  return "";
}

std::string start(const Context& g, const std::string& id) {
  Handle h = Handle::open(Store(g.root), id);
  return start_container(h);
}

}  // namespace husk::rt
