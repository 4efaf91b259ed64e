// Build the libseccomp filter from a Plan and load it into this process.
#include <fcntl.h>
#include <linux/seccomp.h>
#include <seccomp.h>

#include <cstring>
#include <memory>

#include "seccomp/seccomp.h"

namespace husk::seccomp {
namespace {

struct CtxDeleter {
  void operator()(void* ctx) const { seccomp_release(ctx); }
};
using Ctx = std::unique_ptr<void, CtxDeleter>;

// libseccomp returns -errno.
void check(int rc, const std::string& what) {
  if (rc < 0) throw sys_error("seccomp: " + what, -rc);
}

void set_attr(scmp_filter_ctx ctx, scmp_filter_attr attr, uint32_t value, const char* name) {
  check(seccomp_attr_set(ctx, attr, value), std::string("set ") + name);
}

// Above this many rules libseccomp's binary-tree layout beats its linear
// syscall list (libseccomp <= 2.5.4 mis-builds the tree with no rules).
constexpr size_t kTreeThreshold = 32;

constexpr unsigned kHandledFlags =
    SECCOMP_FILTER_FLAG_TSYNC | SECCOMP_FILTER_FLAG_LOG | SECCOMP_FILTER_FLAG_SPEC_ALLOW;

}  // namespace

int load(const Plan& p) {
  // SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV needs libseccomp >= 2.6.
  if (p.flags & ~kHandledFlags)
    throw Error("seccomp: filter flags " + std::to_string(p.flags & ~kHandledFlags) +
                " not supported by libseccomp " + std::to_string(SCMP_VER_MAJOR) + "." +
                std::to_string(SCMP_VER_MINOR) + "." + std::to_string(SCMP_VER_MICRO));

  Ctx ctx(seccomp_init(p.default_action));
  if (!ctx) throw Error("seccomp: init filter: invalid default action");
  // no_new_privs is the runtime's decision (process.noNewPrivileges); without
  // it loading still works for a process with CAP_SYS_ADMIN.
  set_attr(ctx.get(), SCMP_FLTATR_CTL_NNP, 0, "no_new_privs attribute");
  // Report the kernel's errno from seccomp_load instead of ECANCELED.
  set_attr(ctx.get(), SCMP_FLTATR_API_SYSRAWRC, 1, "raw return code attribute");
  if (p.flags & SECCOMP_FILTER_FLAG_TSYNC)
    set_attr(ctx.get(), SCMP_FLTATR_CTL_TSYNC, 1, "SECCOMP_FILTER_FLAG_TSYNC");
  if (p.flags & SECCOMP_FILTER_FLAG_LOG)
    set_attr(ctx.get(), SCMP_FLTATR_CTL_LOG, 1, "SECCOMP_FILTER_FLAG_LOG");
  if (p.flags & SECCOMP_FILTER_FLAG_SPEC_ALLOW)
    set_attr(ctx.get(), SCMP_FLTATR_CTL_SSB, 1, "SECCOMP_FILTER_FLAG_SPEC_ALLOW");
  if (p.rules.size() > kTreeThreshold)
    set_attr(ctx.get(), SCMP_FLTATR_CTL_OPTIMIZE, 2, "binary tree optimization");

  for (uint32_t arch : p.arches) {
    int rc = seccomp_arch_add(ctx.get(), arch);
    if (rc != -EEXIST) check(rc, "add architecture");
  }

  std::vector<scmp_arg_cmp> conds;
  for (const Rule& r : p.rules) {
    conds.clear();
    for (const ArgCmp& a : r.args)
      conds.push_back({a.index, static_cast<scmp_compare>(a.op), a.value, a.value_two});
    int rc = seccomp_rule_add_array(ctx.get(), r.action, r.syscall_nr,
                                    static_cast<unsigned>(conds.size()), conds.data());
    check(rc, "add rule for " + r.name + " (linux.seccomp.syscalls[" +
                  std::to_string(r.origin) + "])");
  }

  check(seccomp_load(ctx.get()), "load filter");
  if (!p.notify) return -1;

  int fd = seccomp_notify_fd(ctx.get());
  check(fd, "get notify fd");
  // The kernel hands the listener out close-on-exec already; make sure, as
  // the container's exec must never inherit it.
  if (fcntl(fd, F_SETFD, FD_CLOEXEC) < 0) throw sys_error("seccomp: set notify fd close-on-exec");
  return fd;
}

}  // namespace husk::seccomp
