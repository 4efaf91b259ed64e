// Joining existing namespaces and the small per-namespace settings
// (time offsets, hostname) the container init applies.
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "namespaces/namespaces.h"

namespace husk::ns {

void join_namespace(const NamespacePlan::Join& join) {
  // The path may name another namespace by now: only the judged fd counts.
  if (join.fd < 0) throw Error("join " + join.type + " namespace " + join.path + ": not opened by the runtime");
  // Passing the type makes the kernel check the file really is that kind of namespace.
  if (setns(join.fd, join.flag) < 0) throw sys_error("join " + join.type + " namespace " + join.path);
}

void write_time_offsets(const std::map<std::string, spec::TimeOffset>& offsets) {
  if (offsets.empty()) return;
  std::string text;
  for (const auto& [clock, off] : offsets) {
    if (clock != "monotonic" && clock != "boottime")
      throw Error("linux.timeOffsets: unknown clock \"" + clock + "\"");
    text += clock + " " + std::to_string(off.secs) + " " + std::to_string(off.nanosecs) + "\n";
  }
  int fd = open("/proc/self/timens_offsets", O_WRONLY | O_CLOEXEC);
  if (fd < 0) throw sys_error("open /proc/self/timens_offsets");
  // One write: the kernel applies all lines together or none.
  ssize_t n = write(fd, text.data(), text.size());
  int err = errno;
  close(fd);
  if (n < 0) throw sys_error("write linux.timeOffsets to /proc/self/timens_offsets", err);
  if (static_cast<size_t>(n) != text.size())
    throw Error("write linux.timeOffsets to /proc/self/timens_offsets: short write");
}

void set_hostname(const spec::Spec& spec) {
  if (!spec.hostname.empty() && sethostname(spec.hostname.data(), spec.hostname.size()) < 0)
    throw sys_error("sethostname \"" + spec.hostname + "\"");
  if (!spec.domainname.empty() && setdomainname(spec.domainname.data(), spec.domainname.size()) < 0)
    throw sys_error("setdomainname \"" + spec.domainname + "\"");
}

void loopback_up() {
  int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0) throw sys_error("loopback: socket");
  ifreq ifr{};
  strncpy(ifr.ifr_name, "lo", sizeof ifr.ifr_name - 1);
  int rc = ioctl(s, SIOCGIFFLAGS, &ifr);
  if (rc == 0 && !(ifr.ifr_flags & IFF_UP)) {
    ifr.ifr_flags = static_cast<short>(ifr.ifr_flags | IFF_UP);
    rc = ioctl(s, SIOCSIFFLAGS, &ifr);
  }
  int err = errno;
  close(s);
  if (rc != 0) throw sys_error("bring up the loopback interface lo", err);
}

void check_sysctl_joined(const spec::Spec& spec, const std::map<size_t, int>& judged) {
  if (!spec.linux_ || spec.linux_->sysctl.empty()) return;
  check_sysctl(spec);
  const auto& nss = spec.linux_->namespaces;
  for (size_t i = 0; i < nss.size(); ++i) {
    const spec::Namespace& n = nss[i];
    const std::string& type = n.type;
    if (n.path.empty() || (type != "network" && type != "ipc" && type != "uts")) continue;
    bool used = false;
    for (const auto& kv : spec.linux_->sysctl) used |= sysctl_namespace(kv.first) == type;
    if (!used) continue;
    auto fd = judged.find(i);
    if (fd == judged.end()) throw Error("linux.namespaces[" + std::to_string(i) + "].path: not opened by the runtime");
    std::string self = "/proc/self/ns/" + proc_ns_file(n.type);
    struct stat a{}, b{};
    if (fstat(fd->second, &a) < 0) throw sys_error("stat " + n.type + " namespace " + n.path);
    if (stat(self.c_str(), &b) < 0) throw sys_error("stat " + self);
    if (a.st_dev == b.st_dev && a.st_ino == b.st_ino)
      throw Error("linux.sysctl: the " + n.type + " namespace " + n.path +
                  " is the host's; refusing to change its sysctls");
  }
}

}  // namespace husk::ns
