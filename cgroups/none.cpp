// Driver::none: a container without a cgroup (e.g. rootless without a
// delegated cgroup). Nothing is made or removed; what needs a cgroup
// (limits, pause, ps, kill --all, stats, events) fails naming the reason.
#include "cgroups/cgroups.h"
#include "cgroups/internal.h"

namespace husk::cgroups {

namespace {

class NoneManager : public Manager {
 public:
  explicit NoneManager(const Config& c)
      : what_("container " + c.container_id + " has no cgroup: " + c.none_reason),
        log_(c.log),
        debug_(c.debug) {}

  const std::string& path() const override { return path_; }

  // Said here, once per container: the create that chose no cgroup.
  std::string prepare() override {
    if (log_) log_(what_);
    return "";
  }

  // No device policy can be enforced without a cgroup (a user namespace
  // refuses mknod anyway): the rules are dropped, limits are refused.
  void apply(const spec::Resources& r) override {
    auto fields = limit_fields(r);
    if (!fields.empty()) throw Error(fields[0] + ": cannot be applied: " + what_);
    if (!r.devices.empty() && debug_) debug_("no device rules are enforced: " + what_);
  }

  int clone_into_fd() override { return -1; }
  void attach(pid_t, bool) override {}
  void attach_self(bool) override {}
  // The messages name the command each operation serves.
  void freeze() override { throw Error("pause: " + what_); }
  void thaw() override { throw Error("resume: " + what_); }
  bool frozen() override { return false; }
  // The runtime's ps lists a cgroup-less container by its pid namespace instead.
  std::vector<pid_t> pids() override { throw Error("ps: " + what_); }
  void kill_all(int) override { throw Error("kill --all: " + what_ + " (kill without --all signals its init)"); }
  void destroy() override {}
  Stats stats() override { throw Error("events --stats: " + what_); }
  uint64_t oom_kills() override { throw Error("events: " + what_); }
  std::vector<std::string> created() const override { return {}; }
  bool owned() const override { return false; }

 private:
  std::string path_, what_;
  std::function<void(const std::string&)> log_, debug_;
};

}  // namespace

std::unique_ptr<Manager> make_none(const Config& c) { return std::make_unique<NoneManager>(c); }

}  // namespace husk::cgroups
