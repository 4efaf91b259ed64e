// husk run by an unprivileged user (issue 11): uid/gid 65534, which has no
// /etc/subuid range, so only its own id can be mapped (written directly,
// setgroups "deny"). Ranges through newuidmap need a user with subuids:
// tests/rootless/test-rootless makes one. Checked from the host and from
// what the container prints.
#include <sys/stat.h>
#include <unistd.h>

#include <sstream>

#include <catch2/catch.hpp>

#include "harness.h"
#include "skip.h"

using namespace hit;

namespace {

constexpr uid_t kNobody = 65534;

// A bundle written by `spec --rootless` as nobody, its --root and XDG_RUNTIME_DIR,
// and a directory of nobody's to bind (at /tmp/mnt: the rootfs has no /mnt).
struct Unprivileged {
  TempDir dir{"husk-it-rl-"};
  std::string bundle = dir.path + "/b", root = dir.path + "/state", xdg = dir.path + "/xdg",
              shared = dir.path + "/shared";
  json cfg;

  Unprivileged() {
    for (const auto& d : {bundle, root, xdg, shared}) REQUIRE(::mkdir(d.c_str(), 0700) == 0);
    husk_test::copy_rootfs(template_dir() + "/b/rootfs", bundle + "/rootfs", true);
    for (const auto& d : {dir.path, bundle, root, xdg, shared}) REQUIRE(::chown(d.c_str(), kNobody, kNobody) == 0);
    ::chmod(dir.path.c_str(), 0755);
  }
  ~Unprivileged() { husk({"delete", "--force", "rl"}); }

  static std::vector<std::string> as_nobody(const std::vector<std::string>& argv) {
    std::vector<std::string> out{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"};
    out.insert(out.end(), argv.begin(), argv.end());
    return out;
  }
  // False when this host lets no unprivileged user make a user namespace.
  static bool userns_allowed() { return hit::run(as_nobody({"unshare", "--user", "true"})).ok(); }

  Result husk(const std::vector<std::string>& args) const {
    std::vector<std::string> argv{"env", "XDG_RUNTIME_DIR=" + xdg, runtime(), "--root", root};
    argv.insert(argv.end(), args.begin(), args.end());
    return hit::run(as_nobody(argv));
  }
  // `spec --rootless` as nobody, then `args`; cfg for edits before run().
  void spec(const std::vector<std::string>& args) {
    REQUIRE(husk({"spec", "--rootless", "--bundle", bundle}).ok());
    cfg = json::parse(read_file(bundle + "/config.json"));
    cfg["process"]["terminal"] = false;
    cfg["process"]["args"] = args;
  }
  Result run() {
    write_file(bundle + "/config.json", cfg.dump(2));
    return husk({"run", "--bundle", bundle, "rl"});
  }
};

#define REQUIRE_UNPRIVILEGED_USERNS()                                                  \
  if (!Unprivileged::userns_allowed()) HUSK_SKIP("unprivileged user namespaces are disabled on this host")

}  // namespace

// Fails against bc7328f: "write /proc/<pid>/gid_map: Operation not permitted"
// (no setgroups "deny"); with the maps written, sysfs rbound from the host kept
// its writable cgroup v1 mounts below /sys/fs/cgroup.
// [husk-only]: runc's spec --rootless rbinds the host's /sys, cgroup mounts and all.
TEST_CASE("an unprivileged user runs a spec --rootless bundle: its own id is root inside", "[rootless][husk-only]") {
  REQUIRE_UNPRIVILEGED_USERNS();
  Unprivileged u;
  u.spec({"sh", "-c",
          "id -u; id -g; cat /proc/self/uid_map /proc/self/gid_map /proc/self/setgroups; "
          "grep -c ' /sys/fs/cgroup' /proc/self/mountinfo; "
          "touch /sys/fs/cgroup/x 2>/dev/null && echo cgroup-writable; touch /tmp/mnt/made"});
  u.cfg["mounts"].push_back({{"destination", "/tmp/mnt"}, {"type", "bind"}, {"source", u.shared}, {"options", {"bind"}}});
  Result r = u.run();
  INFO(r.err);
  REQUIRE(r.ok());
  auto out = lines(r.out);
  REQUIRE(out.size() == 6);
  CHECK(out[0] == "0");
  CHECK(out[1] == "0");
  auto fields = [](const std::string& l) {
    std::istringstream in(l);
    std::vector<std::string> f;
    for (std::string w; in >> w;) f.push_back(w);
    return f;
  };
  CHECK(fields(out[2]) == std::vector<std::string>{"0", "65534", "1"});
  CHECK(fields(out[3]) == std::vector<std::string>{"0", "65534", "1"});
  CHECK(out[4] == "deny");
  CHECK(out[5] == "0");  // no cgroup mount at or below /sys/fs/cgroup, and nothing written there
  struct stat st{};
  REQUIRE(::stat((u.shared + "/made").c_str(), &st) == 0);
  CHECK(st.st_uid == kNobody);
  CHECK(st.st_gid == kNobody);
}

// Fails against bc7328f: the gid_map write; with it fixed, the fallback's
// rbind of the host's /sys kept 11 writable cgroup v1 mounts below /sys/fs/cgroup.
// [husk-only]: runc 1.1.5's fallback leaves them writable (12 here).
TEST_CASE("without a network namespace /sys is the host's, read-only all the way down", "[rootless][husk-only]") {
  REQUIRE_UNPRIVILEGED_USERNS();
  Unprivileged u;
  // Mount options are mountinfo's 6th field (the superblock's come after " - ").
  u.spec({"sh", "-c",
          "awk '$5 ~ /^\\/sys/ && $6 !~ /^ro/' /proc/self/mountinfo | wc -l; grep -c ' /sys/fs/cgroup/' /proc/self/mountinfo"});
  auto& nss = u.cfg["linux"]["namespaces"];
  for (auto it = nss.begin(); it != nss.end();) it = (*it)["type"] == "network" ? nss.erase(it) : it + 1;
  Result r = u.run();
  INFO(r.err);
  REQUIRE(r.ok());
  auto out = lines(r.out);
  REQUIRE(out.size() == 2);
  CHECK(out[0] == "0");
  CHECK(out[1] != "0");  // the host's /sys with its cgroup mounts: the fallback happened
}

// Fails against bc7328f: "mknod /dev/null: Operation not permitted" (only a
// new user namespace of the container bound the devices); then create and
// exec said "setgroups: Operation not permitted" (unshare -r's setgroups is "deny").
TEST_CASE("root of a user namespace runs a container without one of its own: devices bound, exec", "[rootless]") {
  REQUIRE_UNPRIVILEGED_USERNS();
  Unprivileged u;
  u.spec({"sleep", "1000"});
  auto& nss = u.cfg["linux"]["namespaces"];
  for (auto it = nss.begin(); it != nss.end();) it = (*it)["type"] == "user" ? nss.erase(it) : it + 1;
  u.cfg["linux"].erase("uidMappings");
  u.cfg["linux"].erase("gidMappings");
  write_file(u.bundle + "/config.json", u.cfg.dump(2));
  // Every command in one user namespace, as rootless podman's are (in its pause process's).
  std::string h = "XDG_RUNTIME_DIR=" + u.xdg + " " + runtime() + " --root " + u.root;
  std::string script = h + " create --bundle " + u.bundle + " rl >/dev/null && " + h + " start rl && " + h +
                       " exec rl sh -c 'echo x > /dev/null && head -c 4 /dev/zero | wc -c; id -u'; " + h +
                       " kill rl KILL; " + h + " delete --force rl";
  Result r = hit::run(Unprivileged::as_nobody({"unshare", "--user", "--map-root-user", "sh", "-c", script}));
  INFO(r.err);
  REQUIRE(r.ok());
  CHECK(lines(r.out) == std::vector<std::string>{"4", "0"});
}

// Fails against bc7328f: "write /proc/<pid>/uid_map: Operation not permitted".
TEST_CASE("an unprivileged user's range outside /etc/subuid is refused naming it", "[rootless][husk-only]") {
  REQUIRE_UNPRIVILEGED_USERNS();
  Unprivileged u;
  u.spec({"true"});
  u.cfg["linux"]["uidMappings"].push_back({{"containerID", 1}, {"hostID", 300000}, {"size", 1000}});
  Result r = u.run();
  CHECK_FALSE(r.ok());
  CHECK(contains(r.err, "linux.uidMappings[1]: host ids 300000-300999 are not delegated to user nobody (/etc/subuid)"));
}

// Fails against bc7328f: the gid_map write failed first; with it fixed, the
// init's setgroups failed with a bare "setgroups: Operation not permitted".
TEST_CASE("additionalGids where setgroups is deny fail at create, by name", "[rootless][husk-only]") {
  REQUIRE_UNPRIVILEGED_USERNS();
  Unprivileged u;
  u.spec({"true"});
  // Mapped (the single gid mapping's 0): only setgroups "deny" is in the way.
  u.cfg["process"]["user"]["additionalGids"] = {0};
  Result r = u.run();
  CHECK_FALSE(r.ok());
  CHECK(contains(r.err, "process.user.additionalGids: cannot be set"));
}

// Fails against bc7328f: create failed (gid_map); exec -g then said only
// "setgroups: Operation not permitted".
TEST_CASE("an unprivileged user's container: exec joins its user namespace, kill and delete", "[rootless]") {
  REQUIRE_UNPRIVILEGED_USERNS();
  Unprivileged u;
  u.spec({"sleep", "1000"});
  write_file(u.bundle + "/config.json", u.cfg.dump(2));
  Result c = u.husk({"create", "--bundle", u.bundle, "rl"});
  INFO(c.err);
  REQUIRE(c.ok());
  REQUIRE(u.husk({"start", "rl"}).ok());
  // list names the user owning the state, as runc does (not "root").
  Result l = u.husk({"list", "--format", "json"});
  INFO(l.err);
  REQUIRE(l.ok());
  CHECK(json::parse(l.out).at(0).at("owner") == "nobody");
  Result e = u.husk({"exec", "rl", "sh", "-c", "id -u; cat /proc/self/uid_map"});
  INFO(e.err);
  REQUIRE(e.ok());
  auto out = lines(e.out);
  REQUIRE(out.size() == 2);
  CHECK(out[0] == "0");
  CHECK(contains(out[1], "65534"));
  Result g = u.husk({"exec", "--additional-gids", "0", "rl", "true"});
  CHECK_FALSE(g.ok());
  if (!runtime_is_runc())
    CHECK(contains(g.err, "process.user.additionalGids: setgroups is denied in the container's user namespace"));
  int pid = json::parse(u.husk({"state", "rl"}).out).at("pid").get<int>();
  REQUIRE(u.husk({"kill", "rl", "KILL"}).ok());
  CHECK(gone_soon(pid, 5s));
  REQUIRE(u.husk({"delete", "rl"}).ok());
  CHECK_FALSE(u.husk({"state", "rl"}).ok());
}
