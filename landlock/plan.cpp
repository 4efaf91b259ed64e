// Landlock's masks for the ABI at hand: pure.
#include <algorithm>

#include "base/path.h"
#include "landlock/landlock.h"

namespace husk::landlock {
namespace {

constexpr uint64_t kAbi1Fs = kExecute | kWriteFile | kReadFile | kReadDir | kRemoveDir | kRemoveFile | kMakeChar |
                             kMakeDir | kMakeReg | kMakeSock | kMakeFifo | kMakeBlock | kMakeSym;

uint64_t fs_rights(int abi) {
  if (abi < 1) return 0;
  uint64_t fs = kAbi1Fs;
  if (abi >= 2) fs |= kRefer;
  if (abi >= 3) fs |= kTruncate;
  if (abi >= 5) fs |= kIoctlDev;
  return fs;
}

void lacking(Rights& r, const Plan& plan) {
  auto say = [&](int needs, bool asked, const char* what) {
    if (asked && r.abi < needs) r.lacking.push_back(std::string(what) + " (ABI " + std::to_string(needs) + ")");
  };
  say(1, plan.file_system, "no file system rules at all: Landlock is not enabled in this kernel (Linux 5.13+)");
  say(1, !plan.file_system, "no Landlock at all: it is not enabled in this kernel (Linux 5.13+)");
  if (r.abi < 1) return;
  say(3, plan.file_system, "truncate(2) is not limited");
  say(4, plan.limit_tcp, "TCP connect and bind are not limited");
  say(5, plan.file_system, "ioctl(2) on devices is not limited");
  say(6, plan.scope_abstract_unix, "abstract Unix sockets outside are not out of reach");
  say(6, plan.scope_signal, "signals to processes outside are not refused");
}

}  // namespace

Rights rights(const Plan& plan, int abi) {
  Rights r;
  r.abi = abi;
  r.mount_view = plan.mount_view;
  r.handled_fs = plan.file_system ? fs_rights(abi) : 0;
  lacking(r, plan);
  if (abi < 1) return r;
  if (abi >= 4 && plan.limit_tcp) r.handled_net = kBindTcp | kConnectTcp;
  if (abi >= 6) r.scoped = (plan.scope_abstract_unix ? kScopeAbstractUnix : 0) | (plan.scope_signal ? kScopeSignal : 0);
  if (!plan.file_system) return r;
  r.read = kExecute | kReadFile | kReadDir;
  r.write = r.handled_fs;
  r.route = kReadDir;
  for (const auto& h : plan.hidden) {
    bool writable = std::any_of(plan.trees.begin(), plan.trees.end(),
                                [&](const Tree& t) { return t.write && base::is_within(h, t.path); });
    (writable && plan.mount_view ? r.not_hidden : r.hidden).push_back(h);
  }
  return r;
}

}  // namespace husk::landlock
