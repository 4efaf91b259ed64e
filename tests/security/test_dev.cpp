// CVE-2025-31133 / CVE-2025-52565: /dev/null, /dev and /dev/console of the
// rootfs replaced by symlinks (to host files or directories), so that the
// runtime's maskedPaths bind of /dev/null, its device nodes or its console
// bind land on a host file; crun CVE-2019-18837: a symlink in a /dev mount
// destination redirecting a device node or a bind mount outside the rootfs.
//
// Every case asserts from the host that the planted victims (files and
// directories outside the rootfs) kept their content, mode, owner and
// inode and that no inode appeared in the host directories.
// How they failed, against the mutant (14774f5 with mutant-14774f5.patch:
// no RESOLVE_IN_ROOT, special mounts following symlinks, existing device
// nodes chmod/chown'ed through the path): the /dev/null case chmod'ed the
// host victims (0600 -> 0666), the 18837 cases created target/bindtgt and
// target/shm in the host directory. Not seen failing, even against the
// mutant: the masked-path, /dev-symlink and /dev/console cases (husk masks
// paths and binds the console after pivot_root, where an absolute symlink
// resolves inside the rootfs, and mounts /dev on a real directory only);
// they guard against moving those steps before pivot_root. All pass
// against 14774f5 and later.
#include <catch2/catch.hpp>

#include <filesystem>

#include "sec.h"

using namespace hit;
using namespace sec;
namespace fs = std::filesystem;

namespace {

// Writes and chmods every path it can; the host checks the victims.
const std::string kVandal =
    "for p in /proc/kcore /proc/keys /proc/timer_list /masked-file /dev/null /dev/zero /dev/full /dev/random "
    "/dev/urandom /dev/tty /dev/console; do echo PWNED > $p; chmod 666 $p; chown 1000 $p; done 2>/dev/null; "
    "cat /proc/self/mountinfo; true";

struct HostVictims {
  TempDir dir{"husk-sec-dev-"};
  std::string file(const std::string& name) {
    std::string p = dir.path + "/" + name;
    if (!fs::exists(p)) write_file(p, "HOST-" + name + "\n", 0600);
    return p;
  }
  std::string subdir(const std::string& name) {
    std::string p = dir.path + "/" + name;
    fs::create_directories(p);
    return p;
  }
  std::string snapshot() const { return tree_state(dir.path); }
};

}  // namespace

TEST_CASE("CVE-2025-31133: /dev/null and other device nodes are symlinks to host files, maskedPaths",
          "[cve-2025-31133][security]") {
  HostVictims v;
  Container c("31133");
  drop_mount(c.cfg, "/dev");  // the rootfs' own /dev, where the image planted the symlinks
  for (std::string n : {"null", "zero", "full", "random", "urandom", "tty"}) {
    fs::remove(c.rootfs + "/dev/" + n);
    fs::create_symlink(v.file(n), c.rootfs + "/dev/" + n);
  }
  write_file(c.rootfs + "/masked-file", "inside\n");
  c.cfg["linux"]["maskedPaths"].push_back("/masked-file");
  std::string before = v.snapshot();
  c.args({"sh", "-c", kVandal});
  auto r = c.run();
  INFO(r.out << r.err);
  CHECK(v.snapshot() == before);
  CHECK(leftovers(c).empty());
}

TEST_CASE("CVE-2025-31133: masked paths that are symlinks to host files", "[cve-2025-31133][security]") {
  HostVictims v;
  Container c("31133-masked");
  fs::create_symlink(v.file("masked-victim"), c.rootfs + "/masked-file");
  fs::create_directory_symlink(v.subdir("masked-dir"), c.rootfs + "/masked-dir");
  fs::create_symlink("../../../../../../../../.." + v.file("rel-victim"), c.rootfs + "/masked-rel");
  for (std::string p : {"/masked-file", "/masked-dir", "/masked-rel"}) {
    c.cfg["linux"]["maskedPaths"].push_back(p);
    c.cfg["linux"]["readonlyPaths"].push_back(p);
  }
  std::string before = v.snapshot();
  c.args({"sh", "-c", kVandal});
  auto r = c.run();
  INFO(r.out << r.err);
  CHECK(v.snapshot() == before);
  CHECK(leftovers(c).empty());
}

TEST_CASE("CVE-2025-52565: /dev is a symlink to a host directory", "[cve-2025-52565][security]") {
  for (bool relative : {false, true}) {
    INFO((relative ? "relative" : "absolute") << " /dev symlink");
    HostVictims v;
    std::string hostdev = v.subdir("dev");
    Container c("52565-dev");
    fs::remove(c.rootfs + "/dev");
    fs::create_directory_symlink(relative ? "../../../../../../../../.." + hostdev : hostdev, c.rootfs + "/dev");
    std::string before = v.snapshot();
    c.args({"sh", "-c", kVandal});
    auto r = c.run();
    INFO(r.out << r.err);
    if (r.code == 0) {
      CHECK(mount_at(parse_mountinfo(r.out), "/dev").fstype == "tmpfs");
    }
    CHECK(v.snapshot() == before);
    CHECK(fs::is_empty(hostdev));
    CHECK(leftovers(c).empty());
  }
}

TEST_CASE("CVE-2025-52565: /dev/console is a symlink to a host file, with a terminal", "[cve-2025-52565][security]") {
  for (bool dev_tmpfs : {false, true}) {
    INFO((dev_tmpfs ? "/dev tmpfs, /dev/console planted through a bind mount" : "the rootfs' own /dev"));
    HostVictims v;
    Container c("52565-console");
    c.cfg["process"]["terminal"] = true;
    std::string victim = v.file("console");
    if (dev_tmpfs) {
      // The image cannot plant files in the fresh tmpfs; a bind mount of a
      // directory holding the symlinks is mounted over /dev/pts' sibling.
      std::string planted = v.subdir("planted");
      fs::create_symlink(victim, planted + "/console");
      c.cfg["mounts"].push_back(
          {{"destination", "/dev/planted"}, {"type", "bind"}, {"source", planted}, {"options", {"rbind", "rw"}}});
    } else {
      drop_mount(c.cfg, "/dev");
      fs::remove(c.rootfs + "/dev/console");
      fs::create_symlink(victim, c.rootfs + "/dev/console");
      fs::create_symlink(v.file("ptmx"), c.rootfs + "/dev/ptmx");
    }
    c.args({"sh", "-c", kVandal});
    c.write_config();
    std::string before = v.snapshot();
    std::string sock = c.bundle + "/console.sock";
    Fd listener = listen_unix(sock);
    Child create({runtime(), "--root", c.root, "create", "--bundle", c.bundle, "--console-socket", sock, c.id});
    Fd master = receive_fd(listener.get(), 5000);
    auto r = create.wait();
    INFO(r.err);
    if (r.ok()) {
      CHECK(c.start().ok());
      CHECK(c.wait_status("stopped", 10s));
    }
    CHECK(v.snapshot() == before);
  }
}

TEST_CASE("crun CVE-2019-18837: a symlink in a /dev mount destination", "[cve-2019-18837][security]") {
  SECTION("the rootfs' own /dev holds a symlink to a host directory") {
    HostVictims v;
    std::string target = v.subdir("target");
    TempDir src("husk-sec-18837-src-");
    write_file(src.path + "/file", "src\n");
    Container c("18837");
    drop_mount(c.cfg, "/dev");
    fs::create_directory_symlink(target, c.rootfs + "/dev/evil");
    c.cfg["linux"]["devices"] = json::array(
        {{{"path", "/dev/evil/null"}, {"type", "c"}, {"major", 1}, {"minor", 3}, {"fileMode", 438}},
         {{"path", "/dev/evil/sub/zero"}, {"type", "c"}, {"major", 1}, {"minor", 5}, {"fileMode", 438}}});
    c.cfg["mounts"].push_back(
        {{"destination", "/dev/evil/bindtgt"}, {"type", "bind"}, {"source", src.path}, {"options", {"rbind"}}});
    c.cfg["mounts"].push_back({{"destination", "/dev/evil/filetgt"},
                               {"type", "bind"},
                               {"source", src.path + "/file"},
                               {"options", {"bind"}}});
    std::string before = v.snapshot();
    c.args({"sh", "-c", kVandal});
    auto r = c.run();
    INFO(r.out << r.err);
    CHECK(v.snapshot() == before);
    CHECK(fs::is_empty(target));
    CHECK(leftovers(c).empty());
  }
  SECTION("a bind-mounted directory under the /dev tmpfs holds the symlink") {
    HostVictims v;
    std::string target = v.subdir("target");
    std::string planted = v.subdir("planted");
    fs::create_directory_symlink(target, planted + "/evil");
    std::string before = v.snapshot();
    Container c("18837-bind");
    c.cfg["mounts"].push_back(
        {{"destination", "/dev/sub"}, {"type", "bind"}, {"source", planted}, {"options", {"rbind", "rw"}}});
    c.cfg["mounts"].push_back(
        {{"destination", "/dev/sub/evil/shm"}, {"type", "tmpfs"}, {"source", "tmpfs"}, {"options", {"nosuid"}}});
    c.cfg["linux"]["devices"] = json::array(
        {{{"path", "/dev/sub/evil/null"}, {"type", "c"}, {"major", 1}, {"minor", 3}, {"fileMode", 438}}});
    c.args({"sh", "-c", kVandal});
    auto r = c.run();
    INFO(r.out << r.err);
    CHECK(v.snapshot() == before);
    CHECK(fs::is_empty(target));
    CHECK(leftovers(c).empty());
  }
}
