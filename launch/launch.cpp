#include "launch/launch.h"

#include <signal.h>
#include <sys/wait.h>

#include "base/error.h"
#include "base/fd.h"
#include "launch/process.h"
#include "namespaces/namespaces.h"

namespace husk::rt {

ProcIdMapWriter::ProcIdMapWriter(const spec::Spec& spec) {
  const spec::Linux* lx = spec.linux_ ? &*spec.linux_ : nullptr;
  const spec::Namespace* user = lx ? lx->find_namespace("user") : nullptr;
  if (!user || !user->path.empty()) return;  // write() is never called then
  caller_ = ns::current_caller();
  ns::MapPlan plan = ns::plan_id_maps(caller_, lx->uid_mappings, lx->gid_mappings, "linux");
  // The kernel refuses setgroups(2) for good in such a namespace; runc drops the groups silently.
  if (plan.deny_setgroups && spec.process && !spec.process->user.additional_gids.empty())
    throw Error("process.user.additionalGids: cannot be set in a user namespace whose single gid mapping husk "
                "writes itself (setgroups is \"deny\" there); map gids from /etc/subgid to use them");
}

void ProcIdMapWriter::write(pid_t pid, const spec::Linux& lx) const {
  ns::write_id_maps(pid, lx.uid_mappings, lx.gid_mappings, "linux", caller_);
}

base::Fd Pipeline::cgroup_fd() const { return base::Fd(cgroup ? cgroup->clone_into_fd() : -1); }

pid_t Pipeline::clone_first(uint64_t flags, bool self_attach, Placement& placed) const {
  base::Fd fd = cgroup_fd();
  pid_t pid = clone3_raw(flags, fd.get());
  if (pid < 0 && (errno == EINVAL || errno == ENOSYS) && fd) {
    fd.reset();  // a kernel without CLONE_INTO_CGROUP, or clone3 refused
    pid = clone3_raw(flags, -1);
  }
  placed = {.cloned_into = fd.get() >= 0, .by_itself = self_attach && cgroup && cgroup->self_attachable()};
  return pid;
}

void Pipeline::attach_self(const Placement& placed) const {
  if (placed.by_itself) cgroup->attach_self(placed.cloned_into);
}

void Pipeline::map_ids(pid_t pid) const {
  const spec::Linux& lx = *spec->linux_;
  const spec::Namespace* user = lx.find_namespace("user");
  if (id_maps && user && user->path.empty()) id_maps->write(pid, lx);
}

void Pipeline::place(pid_t pid, const Placement& placed) {
  if (cgroup && !placed.by_itself) cgroup->attach(pid, placed.cloned_into);
  write_oom_score_adj(pid, *proc);
  state = on_pid(pid);
}

ChildSession::ChildSession(base::Fd sock, pid_t first, bool stage1) : sock_(std::move(sock)) {
  (stage1 ? stage1_ : pid_) = first;
}

ChildSession::~ChildSession() {
  for (pid_t p : {pid_, stage1_}) {
    if (p <= 0) continue;
    ::kill(p, SIGKILL);
    while (::waitpid(p, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
}

bool ChildSession::next(Message& m) {
  if (!recv_msg(sock_.get(), m)) return false;
  if (m.type == Msg::kError) throw Error(m.payload);
  if (m.type == Msg::kPid) {
    if (stage1_ <= 0) throw Error("sync: a pid message without a stage-1 helper");
    pid_ = parse_pid_payload(m.payload);
    while (::waitpid(stage1_, nullptr, 0) < 0 && errno == EINTR) {
    }
    stage1_ = -1;
  }
  return true;
}

Error ChildSession::exit_error() {
  pid_t& who = pid_ > 0 ? pid_ : stage1_;
  int status;
  pid_t got = -1;
  while (who > 0 && (got = ::waitpid(who, &status, 0)) < 0 && errno == EINTR) {
  }
  who = -1;
  if (got <= 0) return Error("container init exited unexpectedly");
  if (WIFSIGNALED(status)) return Error("container init was killed by signal " + std::to_string(WTERMSIG(status)));
  return Error("container init exited unexpectedly with status " + std::to_string(WEXITSTATUS(status)));
}

void ChildSession::throw_child_error() {
  Message m;
  while (next(m)) {  // throws the child's own error when it sent one
  }
  throw exit_error();
}

void ChildSession::release(Pipeline& p, const Placement& placed) {
  p.place(pid_, placed);
  sending([&] { send_msg(sock_.get(), Msg::kGo); });
}

void ChildSession::forward_listener(const Pipeline& p, Message& m) {
  hand_listener_to_agent(m.fd.get(), *p.spec, pid_, p.state);
  sending([&] { send_msg(sock_.get(), Msg::kSeccompDone); });
}

pid_t ChildSession::done() {
  pid_t p = pid_;
  pid_ = stage1_ = -1;
  return p;
}

}  // namespace husk::rt
