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
  int fd = open(join.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw sys_error("open " + join.type + " namespace " + join.path);
  // Passing the type makes the kernel check the file really is that kind of namespace.
  int rc = setns(fd, join.flag);
  int err = errno;
  close(fd);
  if (rc < 0) throw sys_error("join " + join.type + " namespace " + join.path, err);
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

void check_sysctl_joined(const spec::Spec& spec) {
  if (!spec.linux_ || spec.linux_->sysctl.empty()) return;
  check_sysctl(spec);
  for (const char* type : {"network", "ipc", "uts"}) {
    const spec::Namespace* n = spec.linux_->find_namespace(type);
    if (!n || n->path.empty()) continue;
    bool used = false;
    for (const auto& kv : spec.linux_->sysctl) used |= sysctl_namespace(kv.first) == type;
    if (!used) continue;
    std::string self = std::string("/proc/self/ns/") + (n->type == "network" ? "net" : n->type);
    struct stat a{}, b{};
    if (stat(n->path.c_str(), &a) < 0) throw sys_error("stat " + n->type + " namespace " + n->path);
    if (stat(self.c_str(), &b) < 0) throw sys_error("stat " + self);
    if (a.st_dev == b.st_dev && a.st_ino == b.st_ino)
      throw Error("linux.sysctl: the " + n->type + " namespace " + n->path +
                  " is the host's; refusing to change its sysctls");
  }
}

}  // namespace husk::ns
