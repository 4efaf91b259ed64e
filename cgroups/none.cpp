// Driver::none: a container without a cgroup (e.g. rootless without a
// delegated cgroup). Nothing is made or removed; what needs a cgroup
// (limits, pause) fails naming the reason.
#include "cgroups/cgroups.h"
#include "cgroups/internal.h"

namespace husk::cgroups {

namespace {

class NoneManager : public Manager {
 public:
  explicit NoneManager(const Config& c) : id_(c.container_id), reason_(c.none_reason), log_(c.log) {}

  const std::string& path() const override { return path_; }

  // Said here, once per container: the create that chose no cgroup.
  std::string prepare() override {
    if (log_) log_("container " + id_ + " has no cgroup: " + reason_);
    return "";
  }

  // Without a cgroup no device policy can be enforced: the rules are
  // dropped, and only limits fail (a user namespace refuses mknod anyway).
  void apply(const spec::Resources& r) override {
    if (r.memory || r.cpu || r.pids_limit || r.block_io || !r.hugepage_limits.empty() || r.network ||
        !r.rdma.empty() || !r.unified.empty())
      throw Error("linux.resources: cannot be applied, container " + id_ + " has no cgroup: " + reason_);
  }

  int clone_into_fd() override { return -1; }
  void attach(pid_t, bool) override {}
  void attach_self(bool) override {}
  void freeze() override { throw Error("pause: container " + id_ + " has no cgroup: " + reason_); }
  void thaw() override { throw Error("resume: container " + id_ + " has no cgroup: " + reason_); }
  bool frozen() override { return false; }
  // Nothing to list: the caller reaches the init through its pidfd.
  std::vector<pid_t> pids() override { return {}; }
  void kill_all(int) override {}
  void destroy() override {}
  Stats stats() override { return {}; }
  uint64_t oom_kills() override { return 0; }
  std::vector<std::string> created() const override { return {}; }
  bool owned() const override { return false; }

 private:
  std::string path_, id_, reason_;
  std::function<void(const std::string&)> log_;
};

}  // namespace

std::unique_ptr<Manager> make_none(const Config& c) { return std::make_unique<NoneManager>(c); }

}  // namespace husk::cgroups
