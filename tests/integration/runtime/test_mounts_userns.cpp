// Bind and idmapped mounts with and without a user namespace (issue 8):
// who opens the sources, and which mounts are idmapped. Checked from outside
// (the host's files and ids) and through what the container prints.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "harness.h"

using namespace hit;

namespace {

// A container in a user namespace mapping its root to host uid/gid 100000,
// owning its rootfs (its root must be able to create mount points).
void map_root_to_100000(Container& c) {
  c.cfg["linux"]["namespaces"].push_back({{"type", "user"}});
  c.cfg["linux"]["uidMappings"] = json::array({{{"containerID", 0}, {"hostID", 100000}, {"size", 65536}}});
  c.cfg["linux"]["gidMappings"] = json::array({{{"containerID", 0}, {"hostID", 100000}, {"size", 65536}}});
  // A cgroup filesystem cannot be mounted from a user namespace on cgroup v1.
  auto& mounts = c.cfg["mounts"];
  for (auto it = mounts.begin(); it != mounts.end();) it = (*it)["type"] == "cgroup" ? mounts.erase(it) : it + 1;
  REQUIRE(run({"chown", "-R", "-h", "100000:100000", c.rootfs}).ok());
  ::chmod(c.bundle.c_str(), 0755);
}

json bind(const std::string& dest, const std::string& source, std::vector<std::string> options) {
  return {{"destination", dest}, {"type", "bind"}, {"source", source}, {"options", options}};
}

json one_id(int container_id, int host_id) {
  return json::array({{{"containerID", container_id}, {"hostID", host_id}, {"size", 1}}});
}

}  // namespace

TEST_CASE("bind sources below a root-only host directory, in a user namespace", "[mounts][userns][dropin]") {
  Container c("mnt-userns-src", true);
  map_root_to_100000(c);
  // Host uid 100000 cannot even look into the 0700 directory: only the
  // runtime, with its own privileges, can reach the sources.
  TempDir secret("husk-it-rootonly-");
  REQUIRE(::chmod(secret.path.c_str(), 0700) == 0);
  REQUIRE(::mkdir((secret.path + "/dir").c_str(), 0755) == 0);
  write_file(secret.path + "/dir/in", "dir-ok\n");
  write_file(secret.path + "/file", "file-ok\n");
  // Symlinks in a source are followed, as the source is the caller's host path.
  REQUIRE(::symlink((secret.path + "/dir").c_str(), (secret.path + "/link").c_str()) == 0);
  c.cfg["mounts"].push_back(bind("/data", secret.path + "/dir", {"rbind", "ro"}));
  c.cfg["mounts"].push_back(bind("/one", secret.path + "/file", {"bind"}));
  c.cfg["mounts"].push_back(bind("/via-link", secret.path + "/link", {"rbind"}));
  auto r = c.run_ok({"sh", "-c", "cat /data/in /one /via-link/in; stat -c %u /data/in"});
  // Not idmapped: host root is unmapped in the container.
  CHECK(r.out == "dir-ok\nfile-ok\ndir-ok\n65534\n");
  CHECK(leftovers(c).empty());
}

TEST_CASE("an idmapped bind mount with a pid namespace and no user namespace", "[mounts][dropin][husk-only]") {
  // runc 1.1 has no idmapped mounts: it ignores the option and the mappings.
  Container c("mnt-idmap-pidns");
  bool pidns = false;
  for (const auto& n : c.cfg["linux"]["namespaces"]) pidns |= n["type"] == "pid";
  REQUIRE(pidns);
  TempDir src("husk-it-idmap-");
  // Its owner (root) is unmapped on the mount: no DAC override for a 0700 directory.
  REQUIRE(::chmod(src.path.c_str(), 0755) == 0);
  write_file(src.path + "/file", "x\n");
  REQUIRE(::chown((src.path + "/file").c_str(), 1000, 1000) == 0);
  json m = bind("/idm", src.path, {"rbind", "idmap"});
  m["uidMappings"] = one_id(1000, 2000);
  m["gidMappings"] = one_id(1000, 3000);
  c.cfg["mounts"].push_back(m);
  auto r = c.run_ok({"stat", "-c", "%u:%g", "/idm/file"});
  CHECK(trim(r.out) == "2000:3000");
  // The host's file keeps its owner.
  struct stat st{};
  REQUIRE(::stat((src.path + "/file").c_str(), &st) == 0);
  CHECK(st.st_uid == 1000);
  CHECK(leftovers(c).empty());
}

TEST_CASE("uidMappings/gidMappings without the idmap option idmap the mount, in a user namespace",
          "[mounts][userns][dropin][husk-only]") {
  // config.md: the options "SHOULD contain either idmap or ridmap" beside
  // the mappings; without them the mount is still idmapped (runc 1.2 does
  // the same; runc 1.1 ignores the mappings).
  Container c("mnt-idmap-noopt", true);
  map_root_to_100000(c);
  TempDir src("husk-it-idmap-");
  write_file(src.path + "/file", "x\n");
  REQUIRE(::chown((src.path + "/file").c_str(), 1000, 1000) == 0);
  json m = bind("/idm", src.path, {"rbind"});
  // On-disk 1000 shows as host 101000, which is the container's 1000; without
  // the idmapping it would be unmapped there (65534).
  m["uidMappings"] = json::array({{{"containerID", 0}, {"hostID", 100000}, {"size", 65536}}});
  m["gidMappings"] = json::array({{{"containerID", 0}, {"hostID", 100000}, {"size", 65536}}});
  c.cfg["mounts"].push_back(m);
  auto r = c.run_ok({"stat", "-c", "%u:%g", "/idm/file"});
  CHECK(trim(r.out) == "1000:1000");
  CHECK(leftovers(c).empty());
}

TEST_CASE("a host read-only mount stays read-only through an idmapped bind in a user namespace",
          "[mounts][userns][security]") {
  // The host's own read-only bind of a directory: its flag is the host's to
  // keep, even from a container root holding CAP_SYS_ADMIN in its namespace.
  TempDir src("husk-it-hostro-");
  REQUIRE(::chmod(src.path.c_str(), 0755) == 0);
  write_file(src.path + "/f", "host\n");
  REQUIRE(run({"mount", "--bind", src.path, src.path}).ok());
  struct Unmount {
    std::string p;
    ~Unmount() { run({"umount", "-l", p}); }
  } unmount{src.path};

  for (const std::string opt : {"idmap", "mappings", "bind"}) {
    INFO(opt);
    REQUIRE(run({"mount", "-o", "remount,bind,rw", src.path}).ok());
    write_file(src.path + "/f", "host\n");
    REQUIRE(run({"mount", "-o", "remount,bind,ro", src.path}).ok());
    Container c("mnt-hostro-" + opt, true);
    map_root_to_100000(c);
    for (auto set : {"bounding", "effective", "permitted"}) c.cfg["process"]["capabilities"][set].push_back("CAP_SYS_ADMIN");
    std::vector<std::string> o{"bind"};
    if (opt == "idmap") o.push_back("idmap");
    c.cfg["mounts"].push_back({{"destination", "/mnt"}, {"type", "bind"}, {"source", src.path}, {"options", o}});
    if (opt == "mappings") {
      c.cfg["mounts"].back()["uidMappings"] = c.cfg["linux"]["uidMappings"];
      c.cfg["mounts"].back()["gidMappings"] = c.cfg["linux"]["gidMappings"];
    }
    c.args({"sh", "-c", "mount -o remount,bind,rw /mnt; echo pwned > /mnt/f; cat /mnt/f"});
    auto r = c.run();
    INFO(r.out << r.err);
    // The container ran and saw the host's file through its mount.
    CHECK(r.out == "host\n");
    CHECK(read_file(src.path + "/f") == "host\n");
    CHECK(leftovers(c).empty());
  }
}
