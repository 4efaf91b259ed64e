#include "launch/lsm.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>

#include "base/error.h"
#include "base/fd.h"
#include "base/file.h"
#include "namespaces/namespaces.h"

namespace husk::rt::lsm {

using base::Fd;

namespace {

// The file's text, "" when it cannot be read (the LSM is not there).
std::string text_or_empty(const std::string& path) {
  try {
    return base::read_file(path);
  } catch (const Error&) {
    return "";
  }
}

void check_value(const std::string& value, const char* field) {
  // The kernel reads a NUL as the end: "p\0q" would apply profile "p".
  if (value.find('\0') != std::string::npos) throw Error(std::string(field) + ": must not contain a NUL byte");
}

bool on_procfs(int fd) {
  struct statfs sf{};
  return ::fstatfs(fd, &sf) == 0 && sf.f_type == PROC_SUPER_MAGIC;
}

// Below the procfs root only: "thread-self" is an ordinary symlink into the
// same procfs; a magic link or a mount on the way fails the open.
constexpr uint64_t kProcResolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV;

int open_below(int dir, const std::string& path, uint64_t flags) {
  struct open_how how{};
  how.flags = flags | O_CLOEXEC;
  how.resolve = kProcResolve;
  return static_cast<int>(::syscall(SYS_openat2, dir, path.c_str(), &how, sizeof how));
}

Fd open_attr(int proc, const std::string& rel, const char* field) {
  const std::string shown = "/proc/" + rel;
  Fd fd(open_below(proc, rel, O_WRONLY));
  if (!fd) throw sys_error(std::string(field) + ": open " + shown);
  if (!on_procfs(fd.get())) throw Error(std::string(field) + ": " + shown + " is not on procfs");
  return fd;
}

void write_attr(int fd, const std::string& text, const std::string& path, const char* field,
                const std::string& value) {
  ssize_t n = ::write(fd, text.data(), text.size());
  if (n < 0) {
    int err = errno;
    // AppArmor answers ENOENT for a profile it does not know.
    std::string hint = err == ENOENT ? " (is the profile loaded?)" : "";
    throw Error(std::string(field) + ": apply \"" + value + "\": write " + path + ": " + strerror(err) + hint, err);
  }
  if (static_cast<size_t>(n) != text.size()) throw Error(std::string(field) + ": short write to " + path);
}

}  // namespace

void check_supported(const HostLsm& host, const spec::Process& p, const spec::Linux* l) {
  check_value(p.apparmor_profile, "process.apparmorProfile");
  check_value(p.selinux_label, "process.selinuxLabel");
  if (!p.apparmor_profile.empty() && !host.apparmor)
    throw Error("process.apparmorProfile: AppArmor is not enabled on this host");
  if (!p.selinux_label.empty() && !host.selinux)
    throw Error("process.selinuxLabel: SELinux is not enabled on this host");
  if (!l || l->mount_label.empty()) return;
  check_value(l->mount_label, "linux.mountLabel");
  // It goes into mount data as context="<label>".
  if (l->mount_label.find('"') != std::string::npos) throw Error("linux.mountLabel: must not contain '\"'");
  if (!host.selinux) throw Error("linux.mountLabel: SELinux is not enabled on this host");
}

std::string apparmor_exec_text(const std::string& profile) { return "exec " + profile; }

const char* apparmor_exec_attr(bool has_apparmor_dir) {
  return has_apparmor_dir ? "attr/apparmor/exec" : "attr/exec";
}

bool takes_mount_label(const spec::Mount& m) {
  if (m.type == "bind" || m.type == "proc" || m.type == "sysfs" || m.type == "mqueue" || m.type == "cgroup")
    return false;
  spec::MountOptions mo = spec::parse_mount_options(m.options);
  return !mo.bind && !spec::is_idmapped(m);
}

spec::Spec with_mount_label(const spec::Spec& spec) {
  spec::Spec out = spec;
  if (!out.linux_ || out.linux_->mount_label.empty()) return out;
  for (auto& m : out.mounts)
    if (takes_mount_label(m)) m.options.push_back("context=\"" + out.linux_->mount_label + "\"");
  return out;
}

HostLsm probe_host() {
  HostLsm h;
  struct stat st;
  h.apparmor = ::stat("/sys/kernel/security/apparmor", &st) == 0 &&
               text_or_empty("/sys/module/apparmor/parameters/enabled").rfind('Y', 0) == 0;
  struct statfs sf{};
  if (::statfs("/sys/fs/selinux", &sf) == 0 && sf.f_type == SELINUX_MAGIC) {
    std::string label = text_or_empty("/proc/self/attr/current");
    while (!label.empty() && (label.back() == '\0' || label.back() == '\n')) label.pop_back();
    h.selinux = !label.empty() && label != "kernel";
  }
  return h;
}

void check_selinux_contexts(const HostLsm& host, const spec::Process& p, const spec::Linux* l) {
  if (!host.selinux) return;
  auto check = [](const std::string& label, const char* field) {
    if (label.empty()) return;
    Fd fd(::open("/sys/fs/selinux/context", O_RDWR | O_CLOEXEC));
    if (fd && ::write(fd.get(), label.data(), label.size()) < 0 && errno == EINVAL)
      throw Error(std::string(field) + ": \"" + label + "\" is not a context of the loaded SELinux policy", EINVAL);
  };
  check(p.selinux_label, "process.selinuxLabel");
  if (l) check(l->mount_label, "linux.mountLabel");
}

void check_labels(const spec::Process& p, const spec::Linux* l) {
  if (p.apparmor_profile.empty() && p.selinux_label.empty() && (!l || l->mount_label.empty())) return;
  const HostLsm host = probe_host();
  check_supported(host, p, l);
  check_selinux_contexts(host, p, l);
}

ExecLabels ExecLabels::open(const spec::Process& p) {
  ExecLabels l;
  if (p.apparmor_profile.empty() && p.selinux_label.empty()) return l;
  const char* field = !p.apparmor_profile.empty() ? "process.apparmorProfile" : "process.selinuxLabel";
  Fd proc(::open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!proc) throw sys_error(std::string(field) + ": open /proc");
  if (!on_procfs(proc.get())) throw Error(std::string(field) + ": /proc is not procfs");
  if (!p.apparmor_profile.empty()) {
    Fd dir(open_below(proc.get(), "thread-self/attr/apparmor", O_PATH | O_DIRECTORY));
    if (!dir && errno != ENOENT) throw sys_error("process.apparmorProfile: open /proc/thread-self/attr/apparmor");
    l.apparmor_path_ = std::string("thread-self/") + apparmor_exec_attr(static_cast<bool>(dir));
    l.apparmor_ = open_attr(proc.get(), l.apparmor_path_, "process.apparmorProfile");
    l.apparmor_profile_ = p.apparmor_profile;
  }
  if (!p.selinux_label.empty()) {
    l.selinux_ = open_attr(proc.get(), "thread-self/attr/exec", "process.selinuxLabel");
    l.selinux_label_ = p.selinux_label;
  }
  return l;
}

void ExecLabels::apply() {
  if (apparmor_) {
    write_attr(apparmor_.get(), apparmor_exec_text(apparmor_profile_), "/proc/" + apparmor_path_,
               "process.apparmorProfile", apparmor_profile_);
    apparmor_.reset();
  }
  if (selinux_) {
    write_attr(selinux_.get(), selinux_label_, "/proc/thread-self/attr/exec", "process.selinuxLabel", selinux_label_);
    selinux_.reset();
  }
}

}  // namespace husk::rt::lsm
