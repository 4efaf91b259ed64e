// SCMP_ACT_NOTIFY (issue 8, "seccomp notify"): linux.seccomp.listenerPath is
// a host path; the runtime sends each container process's listener fd with
// the runtime-spec "container process state" to the agent listening there
// (config-linux.md "Seccomp", "The Container Process State"). The agent here
// is a thread of the test on a socket outside the bundle; it answers every
// notified syscall with EXDEV, which nothing else in these containers returns.
#include <catch2/catch.hpp>

#include <poll.h>
#include <seccomp.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>
#include <thread>

#include "harness.h"

using namespace hit;
namespace fs = std::filesystem;

namespace {

constexpr const char* kExdevText = "Invalid cross-device link";  // strerror(EXDEV), glibc busybox

// One connection to the agent: what the runtime sent, and the pids the
// kernel reported for the notifications that came through its fd.
struct Conn {
  std::string payload;
  int fds = 0;
  std::vector<int> notified;
};

class Agent {
 public:
  Agent(std::string path, int err) : path(std::move(path)), err_(err), listener_(listen_unix(this->path)),
                                     stop_(::eventfd(0, EFD_CLOEXEC)) {
    REQUIRE(stop_);
    REQUIRE(seccomp_notify_alloc(&req_, &resp_) == 0);
    thread_ = std::thread([this] { loop(); });
  }
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;
  ~Agent() {
    uint64_t one = 1;
    if (::write(stop_.get(), &one, sizeof one) != sizeof one) std::terminate();
    thread_.join();
    for (auto& [fd, conn] : notify_fds_) ::close(fd);
    seccomp_notify_free(req_, resp_);
    ::unlink(path.c_str());
  }

  // A copy of connection n (0-based) once it was made, or nullopt after 10 s.
  std::optional<Conn> conn(size_t n) {
    std::unique_lock lock(mu_);
    if (!cv_.wait_for(lock, 10s, [&] { return conns_.size() > n; })) return std::nullopt;
    return conns_[n];
  }
  size_t count() {
    std::lock_guard lock(mu_);
    return conns_.size();
  }

  const std::string path;

 private:
  void loop() {
    for (;;) {
      std::vector<pollfd> p{{stop_.get(), POLLIN, 0}, {listener_.get(), POLLIN, 0}};
      for (auto& [fd, conn] : notify_fds_) p.push_back({fd, POLLIN, 0});
      if (::poll(p.data(), p.size(), -1) < 0) continue;
      if (p[0].revents) return;
      if (p[1].revents & POLLIN) accept_one();
      for (size_t i = 2; i < p.size(); ++i) {
        int fd = p[i].fd;
        if (p[i].revents & POLLIN) answer(fd);
        else if (p[i].revents & (POLLHUP | POLLERR)) {
          // Every process of that filter is gone.
          ::close(fd);
          std::erase_if(notify_fds_, [&](const auto& e) { return e.first == fd; });
        }
      }
    }
  }

  // The runtime sends one state per connection and closes it: read to EOF,
  // taking the fds of every message (the spec allows them on the first only).
  void accept_one() {
    Fd c(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!c) return;
    timeval tv{5, 0};
    ::setsockopt(c.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    husk_test::Received got = husk_test::receive_until_eof(c.get());
    Conn conn;
    conn.payload = std::move(got.payload);
    const std::vector<int>& fds = got.fds;
    conn.fds = static_cast<int>(fds.size());
    std::lock_guard lock(mu_);
    if (fds.size() == 1) notify_fds_.emplace_back(fds[0], conns_.size());
    else for (int fd : fds) ::close(fd);
    conns_.push_back(std::move(conn));
    cv_.notify_all();
  }

  void answer(int fd) {
    std::memset(req_, 0, sizeof *req_);
    if (seccomp_notify_receive(fd, req_) != 0) return;  // the caller died meanwhile
    {
      std::lock_guard lock(mu_);
      for (auto& [nfd, idx] : notify_fds_)
        if (nfd == fd) conns_[idx].notified.push_back(static_cast<int>(req_->pid));
    }
    std::memset(resp_, 0, sizeof *resp_);
    resp_->id = req_->id;
    resp_->error = -err_;
    seccomp_notify_respond(fd, resp_);
  }

  int err_;
  Fd listener_, stop_;
  seccomp_notif* req_ = nullptr;
  seccomp_notif_resp* resp_ = nullptr;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Conn> conns_;
  std::vector<std::pair<int, size_t>> notify_fds_;  // (listener fd, index into conns_)
};

void notify_config(Container& c, const std::string& listener, const std::string& metadata) {
  c.cfg["linux"]["seccomp"] = {
      {"defaultAction", "SCMP_ACT_ALLOW"},
      {"listenerPath", listener},
      {"listenerMetadata", metadata},
      {"syscalls", json::array({{{"names", {"mkdir", "mkdirat"}}, {"action", "SCMP_ACT_NOTIFY"}}})}};
}

// An agent answering EXDEV in a temp dir, and a container whose filter
// notifies it of mkdir (noNewPrivileges: the filter is loaded at another point).
struct NotifyCase {
  NotifyCase(const std::string& tag, const std::string& metadata, bool nnp)
      : dir("husk-it-agent"), agent(dir.path + "/agent.sock", EXDEV), c(tag) {
    notify_config(c, agent.path, metadata);
    c.cfg["process"]["noNewPrivileges"] = nnp;
  }
  TempDir dir;
  Agent agent;
  Container c;
};

// The container process state as config-linux.md lays it out.
json checked_state(const Conn& conn, const Container& c, const std::string& metadata) {
  INFO(conn.payload);
  CHECK(conn.fds == 1);
  json j = json::parse(conn.payload, nullptr, false);
  REQUIRE_FALSE(j.is_discarded());
  CHECK(j.value("ociVersion", json()).is_string());
  CHECK(j.value("fds", json()) == json::array({"seccompFd"}));
  CHECK(j.value("pid", 0) > 0);
  CHECK(j.value("metadata", json()) == metadata);
  REQUIRE(j.contains("state"));
  const json& s = j["state"];
  CHECK(s.value("id", "") == c.id);
  CHECK(s.value("bundle", "") == fs::canonical(c.bundle).string());
  CHECK(s.value("ociVersion", json()).is_string());
  return j;
}

// Tries mkdir (the agent answers) and an un-notified syscall, in that process.
const std::vector<std::string> kProbe{"sh", "-c", "touch /tmp/bar && echo touched; exec mkdir /tmp/foo"};

}  // namespace

TEST_CASE("seccomp notify: run hands the init's listener to the agent at listenerPath on the host", "[notify][dropin]") {
  const bool nnp = GENERATE(false, true);
  INFO("noNewPrivileges " << nnp);
  NotifyCase n("notify-run", "meta-run", nnp);
  Agent& agent = n.agent;
  Container& c = n.c;
  c.args(kProbe);
  auto r = c.run();
  INFO(r.err);
  CHECK(r.code == 1);
  CHECK(contains(r.err, "mkdir: can't create directory '/tmp/foo': " + std::string(kExdevText)));
  CHECK(contains(r.out, "touched"));
  CHECK(fs::exists(c.rootfs + "/tmp/bar"));
  CHECK_FALSE(fs::exists(c.rootfs + "/tmp/foo"));

  auto conn = agent.conn(0);
  REQUIRE(conn);
  json j = checked_state(*conn, c, "meta-run");
  // The init made the mkdir after its exec: the kernel names the pid the
  // runtime sent, as the host sees it.
  CHECK(conn->notified == std::vector<int>{j.value("pid", 0)});
  CHECK(j["state"].value("pid", 0) == j.value("pid", 0));
  CHECK(j["state"].value("status", "") == "creating");
  CHECK(agent.count() == 1);
}

TEST_CASE("seccomp notify: exec hands the exec'd process's own listener to the agent", "[notify][dropin]") {
  const bool nnp = GENERATE(false, true);
  INFO("noNewPrivileges " << nnp);
  NotifyCase n("notify-exec", "meta-exec", nnp);
  Agent& agent = n.agent;
  Container& c = n.c;
  int init = c.start_process({"sleep", "60"});

  auto first = agent.conn(0);
  REQUIRE(first);
  json j0 = checked_state(*first, c, "meta-exec");
  CHECK(j0.value("pid", 0) == init);
  CHECK(j0["state"].value("pid", 0) == init);
  CHECK(j0["state"].value("status", "") == "creating");

  auto r = c.rt({"exec", c.id, kProbe[0], kProbe[1], kProbe[2]});
  INFO(r.err);
  CHECK(r.code == 1);
  CHECK(contains(r.err, "mkdir: can't create directory '/tmp/foo': " + std::string(kExdevText)));
  CHECK(contains(r.out, "touched"));
  CHECK_FALSE(fs::exists(c.rootfs + "/tmp/foo"));

  auto second = agent.conn(1);
  REQUIRE(second);
  json j1 = checked_state(*second, c, "meta-exec");
  const int pid = j1.value("pid", 0);
  CHECK(pid != init);
  CHECK(second->notified == std::vector<int>{pid});
  CHECK(first->notified.empty());
  // The state is the container's: its init, and running.
  CHECK(j1["state"].value("pid", 0) == init);
  CHECK(j1["state"].value("status", "") == "running");
}

TEST_CASE("seccomp notify: an unreachable listenerPath fails create and exec, naming it, leaving nothing", "[notify][dropin]") {
  TempDir dir("husk-it-agent");
  const std::string missing = dir.path + "/no-agent.sock";

  SECTION("create") {
    Container c("notify-noagent");
    notify_config(c, missing, "");
    c.args({"sleep", "60"});
    auto r = c.create();
    INFO(r.err);
    CHECK(r.code != 0);
    CHECK(contains(r.err, missing));
    if (!runtime_is_runc()) CHECK(contains(r.err, "linux.seccomp.listenerPath: connect to " + missing));
    CHECK(leftovers(c).empty());
  }

  SECTION("exec") {
    std::optional<Agent> agent;
    agent.emplace(dir.path + "/agent.sock", EXDEV);
    Container c("notify-agent-gone");
    notify_config(c, agent->path, "");
    int init = c.start_process({"sleep", "60"});
    REQUIRE(agent->conn(0));
    agent.reset();  // its socket is gone with it
    auto r = c.rt({"exec", c.id, "touch", "/tmp/ran"});
    INFO(r.err);
    CHECK(r.code != 0);
    CHECK(contains(r.err, dir.path + "/agent.sock"));
    if (!runtime_is_runc())
      CHECK(contains(r.err, "linux.seccomp.listenerPath: connect to " + dir.path + "/agent.sock"));
    // The process never ran, and nothing of it is left in the container.
    CHECK_FALSE(fs::exists(c.rootfs + "/tmp/ran"));
    CHECK(cgroup_pids(c.id) == std::vector<int>{init});
    CHECK(c.status() == "running");
  }
}

TEST_CASE("seccomp notify: a filter notifying fcntl still hands the listener over (nothing runs before the hand-off)",
          "[notify][dropin]") {
  // Between loading the filter and sending the listener a notified syscall
  // would wait for an agent that cannot have the fd yet: create would hang.
  const bool nnp = GENERATE(false, true);
  INFO("noNewPrivileges " << nnp);
  NotifyCase n("notify-fcntl", "meta-fcntl", nnp);
  Agent& agent = n.agent;
  Container& c = n.c;
  c.cfg["linux"]["seccomp"]["syscalls"][0]["names"] = {"fcntl"};
  c.args({"true"});
  SpawnOpts quick;
  quick.timeout = 10s;
  auto r = c.create({}, quick);
  INFO(r.err);
  CHECK_FALSE(r.timed_out);
  CHECK(r.ok());
  CHECK(agent.conn(0));
  if (r.ok()) {
    CHECK(c.status() == "created");
    auto x = c.rt({"exec", c.id, "true"}, quick);
    INFO(x.err);
    CHECK_FALSE(x.timed_out);
    CHECK(agent.conn(1));
  }
}
