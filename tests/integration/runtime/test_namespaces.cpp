// Namespaces of the container, checked from outside and inside.
#include <catch2/catch.hpp>

#include <filesystem>
#include <sstream>

#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

using namespace hit;
namespace fs = std::filesystem;

static std::string ns_link(const std::string& pid, const std::string& ns) {
  return fs::read_symlink("/proc/" + pid + "/ns/" + ns).string();
}

TEST_CASE("created container has its own namespaces", "[ns]") {
  Container c("ns");
  c.cfg["linux"]["namespaces"] = json::array(
      {{{"type", "pid"}}, {{"type", "mount"}}, {{"type", "uts"}}, {{"type", "ipc"}},
       {{"type", "network"}}, {{"type", "cgroup"}}});
  c.args({"sleep", "60"});
  auto r = c.create();
  INFO(r.err);
  REQUIRE(r.ok());
  auto pid = std::to_string(c.pid());
  for (auto ns : {"pid", "mnt", "uts", "ipc", "net", "cgroup"}) {
    INFO(ns);
    CHECK(ns_link(pid, ns) != ns_link("self", ns));
  }
  // No user namespace was asked for.
  CHECK(ns_link(pid, "user") == ns_link("self", "user"));
}

TEST_CASE("hostname and pid 1 inside", "[ns]") {
  Container c("ns-uts");
  c.cfg["hostname"] = "inner-host";
  c.args({"sh", "-c", "hostname; echo $$"});
  auto r = c.run();
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(r.out == "inner-host\n1\n");
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  CHECK(std::string(host) != "inner-host");
}

TEST_CASE("joining an existing namespace by path", "[ns]") {
  Container a("ns-a");
  a.args({"sleep", "60"});
  REQUIRE(a.create().ok());
  auto apid = std::to_string(a.pid());
  Container b("ns-b");
  b.cfg["linux"]["namespaces"] = json::array(
      {{{"type", "pid"}}, {{"type", "mount"}}, {{"type", "ipc"}},
       {{"type", "uts"}, {"path", "/proc/" + apid + "/ns/uts"}},
       {{"type", "network"}, {"path", "/proc/" + apid + "/ns/net"}}});
  b.args({"sleep", "60"});
  auto r = b.create();
  INFO(r.err);
  REQUIRE(r.ok());
  auto bpid = std::to_string(b.pid());
  CHECK(ns_link(bpid, "uts") == ns_link(apid, "uts"));
  CHECK(ns_link(bpid, "net") == ns_link(apid, "net"));
  CHECK(ns_link(bpid, "ipc") != ns_link(apid, "ipc"));
}

TEST_CASE("user namespace with uid/gid mappings", "[ns][userns]") {
  Container c("userns", true);
  c.cfg["linux"]["namespaces"].push_back({{"type", "user"}});
  c.cfg["linux"]["uidMappings"] = json::array({{{"containerID", 0}, {"hostID", 100000}, {"size", 65536}}});
  c.cfg["linux"]["gidMappings"] = json::array({{{"containerID", 0}, {"hostID", 100000}, {"size", 65536}}});
  // A cgroup filesystem cannot be mounted from a user namespace on cgroup v1.
  auto& mounts = c.cfg["mounts"];
  for (auto it = mounts.begin(); it != mounts.end();)
    it = (*it)["type"] == "cgroup" ? mounts.erase(it) : it + 1;
  // Mapped root must own (or at least read) its rootfs.
  REQUIRE(run({"chown", "-R", "-h", "100000:100000", c.rootfs}).ok());
  ::chmod(c.bundle.c_str(), 0755);

  c.args({"sh", "-c", "cat /proc/self/uid_map /proc/self/gid_map; id -u; stat -c %u /bin/busybox; sleep 60"});
  auto r = c.create();
  INFO(r.err);
  REQUIRE(r.ok());
  auto pid = std::to_string(c.pid());
  auto words = [](const std::string& s) {
    std::vector<std::string> w;
    std::stringstream ss(s);
    std::string x;
    while (ss >> x) w.push_back(x);
    return w;
  };
  CHECK(words(read_file("/proc/" + pid + "/uid_map")) == std::vector<std::string>{"0", "100000", "65536"});
  CHECK(words(read_file("/proc/" + pid + "/gid_map")) == std::vector<std::string>{"0", "100000", "65536"});
  CHECK(ns_link(pid, "user") != ns_link("self", "user"));
  REQUIRE(c.start().ok());
  std::string out;
  for (int i = 0; i < 200 && lines(out = c.container_out()).size() < 4; ++i) usleep(10000);
  CHECK(words(out) == std::vector<std::string>{"0", "100000", "65536", "0", "100000", "65536", "0", "0"});
  // From outside, the process runs as host uid 100000.
  CHECK(words(status_field(std::stoi(pid), "Uid"))[0] == "100000");
}

TEST_CASE("joining another container's user namespace by path", "[ns][userns]") {
  auto userns_container = [](const std::string& name) {
    auto c = std::make_unique<Container>(name, true);
    c->cfg["linux"]["uidMappings"] = json::array({{{"containerID", 0}, {"hostID", 100000}, {"size", 65536}}});
    c->cfg["linux"]["gidMappings"] = json::array({{{"containerID", 0}, {"hostID", 100000}, {"size", 65536}}});
    auto& mounts = c->cfg["mounts"];
    for (auto it = mounts.begin(); it != mounts.end();)
      it = (*it)["type"] == "cgroup" ? mounts.erase(it) : it + 1;
    REQUIRE(run({"chown", "-R", "-h", "100000:100000", c->rootfs}).ok());
    ::chmod(c->bundle.c_str(), 0755);
    c->args({"sleep", "60"});
    return c;
  };
  auto a = userns_container("userns-a");
  a->cfg["linux"]["namespaces"].push_back({{"type", "user"}});
  auto ra = a->create();
  INFO(ra.err);
  REQUIRE(ra.ok());
  auto apid = std::to_string(a->pid());
  // As runc: the init becomes root of the joined namespace too, so that the
  // files it makes in the rootfs (/dev/pts, ...) have a mapped owner.
  auto b = userns_container("userns-b");
  b->cfg["linux"]["namespaces"].push_back({{"type", "user"}, {"path", "/proc/" + apid + "/ns/user"}});
  auto rb = b->create();
  INFO(rb.err);
  REQUIRE(rb.ok());
  auto bpid = std::to_string(b->pid());
  CHECK(ns_link(bpid, "user") == ns_link(apid, "user"));
  std::stringstream uid(status_field(b->pid(), "Uid"));
  std::string real;
  uid >> real;
  CHECK(real == "100000");
}

// The init of a container with a new user namespace that joins another's pid
// namespace appears there at once: were it dumpable before entering its root,
// a process of the other container could take the host's root (and the
// parent's socket, our memory) through /proc/<init> (CVE-2016-9962). B is
// created again and again while A looks for a root-only host file through every
// /proc/<pid>/root it sees; A must never find it.
TEST_CASE("an init in a joined pid namespace is never reachable from it", "[ns][userns]") {
  TempDir host("hit-secret");
  const std::string secret = host.path + "/secret";
  REQUIRE(run({"sh", "-c", "echo host-secret >" + secret + " && chmod 600 " + secret}).ok());
  Container a("ns-watch");
  a.args({"sh", "-c",
          "while :; do for p in /proc/[0-9]*; do cat $p/root" + secret + " 2>/dev/null && echo \"via $p\"; done; done"});
  REQUIRE(a.create().ok());
  REQUIRE(a.start().ok());
  const std::string apid = std::to_string(a.pid());

  Container b("ns-join-pid", true);
  REQUIRE(run({"chown", "-R", "-h", "100000:100000", b.rootfs}).ok());
  ::chmod(b.bundle.c_str(), 0755);
  b.cfg["linux"]["namespaces"] = json::array({{{"type", "pid"}, {"path", "/proc/" + apid + "/ns/pid"}},
                                              {{"type", "mount"}}, {{"type", "user"}}});
  b.cfg["linux"]["uidMappings"] = json::array({{{"containerID", 0}, {"hostID", 100000}, {"size", 65536}}});
  b.cfg["linux"]["gidMappings"] = json::array({{{"containerID", 0}, {"hostID", 100000}, {"size", 65536}}});
  // A new procfs or cgroup mount would need the joined pid namespace's owner:
  // the host's /proc, bound, is where the init finds exec.fifo again.
  b.cfg["mounts"] = json::array({{{"destination", "/proc"}, {"type", "bind"}, {"source", "/proc"}, {"options", {"rbind"}}}});
  b.cfg.erase("hostname");
  b.args({"true"});
  // create alone: the init has passed the window once it waits for start.
  for (int i = 0; i < 20; ++i) {
    auto r = b.create();
    INFO("create " << i << ": " << r.err);
    REQUIRE(r.ok());
    REQUIRE(b.del(true).ok());
  }
  REQUIRE(a.rt({"kill", a.id, "KILL"}).ok());
  REQUIRE(a.wait_status("stopped"));
  CHECK(a.container_out().find("host-secret") == std::string::npos);
}
