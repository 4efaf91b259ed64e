// Linux security module labels: process.apparmorProfile, process.selinuxLabel
// and linux.mountLabel. husk checks on the host that the kernel enforces the
// LSM a label is for (a label the host cannot apply is an error, never a
// container that silently runs unconfined); the process about to execve
// writes its exec labels to its own procfs attr files.
#pragma once

#include <string>

#include "base/fd.h"
#include "spec/spec.h"

namespace husk::rt::lsm {

using base::Fd;

// ---------- pure ----------

// Which LSMs the running kernel enforces.
struct HostLsm {
  bool apparmor = false;
  bool selinux = false;
};

// Throws an Error naming the field (process.apparmorProfile,
// process.selinuxLabel, linux.mountLabel) when it is set and `host` lacks
// its LSM, or when the value cannot be passed to the kernel intact.
void check_supported(const HostLsm& host, const spec::Process& p, const spec::Linux* l);

// The text that makes AppArmor switch to `profile` at the next execve.
std::string apparmor_exec_text(const std::string& profile);

// AppArmor's exec attr below /proc/<tid>/: its own directory since Linux
// 5.8 (shared with other LSMs before), the shared file otherwise.
const char* apparmor_exec_attr(bool has_apparmor_dir);

// Mounts that take linux.mountLabel as a context= option, as with runc:
// everything mounted with data (tmpfs, devpts, ...), but not bind mounts
// (the kernel ignores the data), proc and sysfs (no SELinux labels), mqueue
// or cgroup.
bool takes_mount_label(const spec::Mount& m);

// `spec` with context="<linux.mountLabel>" added to the options of every
// mount that takes it (unknown options are the filesystem's data).
spec::Spec with_mount_label(const spec::Spec& spec);

// ---------- host ----------

// AppArmor: /sys/kernel/security/apparmor exists and the module says "Y";
// SELinux: selinuxfs at /sys/fs/selinux and a policy loaded (a process's
// label is "kernel" until then). The checks runc makes.
HostLsm probe_host();

// With SELinux on the host: process.selinuxLabel and linux.mountLabel are
// contexts the loaded policy knows (selinuxfs judges what is written to its
// context file), else an Error naming the field, before anything is made.
// A check the host denies leaves the verdict to the kernel at the write or
// mount.
void check_selinux_contexts(const HostLsm& host, const spec::Process& p, const spec::Linux* l);

// Both checks above against this host, probed only when a label is set: a
// create or exec without labels pays nothing.
void check_labels(const spec::Process& p, const spec::Linux* l);

// ---------- the process that execs ----------

// The calling thread's exec attr files for the labels of `p`, opened
// through the procfs that is at /proc when open() is called, without
// crossing a mount below it and only if they are procfs files, so neither a
// fake /proc nor a mount over part of it can take the writes. The kernel
// takes writes to them only from this thread.
class ExecLabels {
 public:
  static ExecLabels open(const spec::Process& p);
  // Write the labels (they apply at the next execve) and close the files.
  void apply();

 private:
  std::string apparmor_profile_, apparmor_path_, selinux_label_;
  Fd apparmor_, selinux_;
};

}  // namespace husk::rt::lsm
