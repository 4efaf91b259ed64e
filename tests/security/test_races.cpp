// CVE-2021-30465 / CVE-2024-45310: a directory on the path of a mount
// destination is swapped with a symlink to a host directory (renameat2
// RENAME_EXCHANGE, in a loop on a host thread) while containers are created
// with bind mounts there. The runtime must resolve and create mount targets
// inside the rootfs, whatever it meets: no mount outside the rootfs, no
// inode created in the host directory.
//
// How they failed: against the mutant (14774f5 with mutant-14774f5.patch:
// openat2 without RESOLVE_IN_ROOT) mount targets were created through the
// symlink in the host directory. Passes against 14774f5 and later (200
// containers in ~20 s here).
#include <catch2/catch.hpp>

#include <atomic>
#include <filesystem>
#include <thread>

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sec.h"

using namespace hit;
using namespace sec;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

constexpr int kContainers = 200;

struct Swapper {
  std::atomic<bool> stop{false};
  std::atomic<long> swaps{0};
  std::thread t;
  Swapper(const std::string& dir, const std::string& a, const std::string& b) {
    t = std::thread([this, dir, a, b] {
      int d = ::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
      while (!stop) {
        if (::syscall(SYS_renameat2, d, a.c_str(), d, b.c_str(), RENAME_EXCHANGE) == 0) ++swaps;
      }
      ::close(d);
    });
  }
  ~Swapper() {
    stop = true;
    t.join();
  }
};

std::string host_mounts_under(const std::string& dir) {
  std::string s;
  for (auto& m : parse_mountinfo(read_file("/proc/self/mountinfo")))
    if (m.mount_point.rfind(dir, 0) == 0) s += m.mount_point + "\n";
  return s;
}

}  // namespace

TEST_CASE("CVE-2021-30465/CVE-2024-45310: symlink-exchange race on mount destinations, 200 containers",
          "[cve-2021-30465][cve-2024-45310][security]") {
  TempDir host("husk-sec-race-");
  std::string target = host.path + "/target";
  fs::create_directories(target);
  std::string src = host.path + "/src";
  fs::create_directories(src);
  write_file(src + "/in-src", "src\n");
  write_file(host.path + "/src-file", "src-file\n");
  std::string before = tree_state(host.path);

  Container c("race");
  fs::create_directories(c.rootfs + "/race/a");
  // Absolute (a naive runtime follows it on the host) and relative with
  // enough .. to reach the host's / from the rootfs.
  fs::create_directory_symlink(target, c.rootfs + "/race/b");
  fs::create_directory_symlink("../../../../../../../../.." + target, c.rootfs + "/race/c");
  for (auto [dest, source] : {std::pair{"/race/a/sub/dir", src}, {"/race/a/file", host.path + "/src-file"},
                              {"/race/a/new/deeper/dir", src}})
    c.cfg["mounts"].push_back({{"destination", dest}, {"type", "bind"}, {"source", source}, {"options", {"rbind"}}});
  c.args({"sh", "-c", "cat /proc/self/mountinfo"});
  std::string first_id = c.id;

  int ok = 0, failed = 0, missing = 0;
  auto start = std::chrono::steady_clock::now();
  {
    Swapper s1(c.rootfs + "/race", "a", "b");
    Swapper s2(c.rootfs + "/race", "a", "c");
    for (int i = 0; i < kContainers && std::chrono::steady_clock::now() - start < 50s; ++i) {
      c.id = unique_id("race");
      c.cfg["linux"]["cgroupsPath"] = "/husk-test/" + c.id;
      auto r = c.run({}, SpawnOpts{.timeout = 20s});
      if (r.code == 0) {
        ++ok;
        // The bind of src is somewhere in the container (inside its root).
        bool found = false;
        for (auto& m : parse_mountinfo(r.out))
          if (m.mount_point.size() >= 8 && m.mount_point.rfind("/sub/dir") == m.mount_point.size() - 8) found = true;
        if (!found) ++missing;
      } else {
        ++failed;
      }
      auto left = leftovers(c);
      INFO("run " << i << ": " << r.err);
      for (auto& l : left) INFO(l);
      CHECK(left.empty());
      c.del(true);
    }
    INFO(s1.swaps << " + " << s2.swaps << " swaps");
    CHECK(s1.swaps + s2.swaps > 0);
  }
  auto secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  WARN(ok << " containers ran, " << failed << " refused, " << missing << " without their mount, in " << secs << " s");
  CHECK(ok + failed >= 50);
  CHECK(missing == 0);
  CHECK(tree_state(host.path) == before);
  CHECK(fs::is_empty(target));
  CHECK(host_mounts_under(host.path).empty());
  c.id = first_id;
}

// A mount destination whose directory is swapped with a symlink into /proc
// while containers are made (the mount-destination cousin of
// CVE-2019-16884): the target opened through the symlink is the container's
// procfs, and the check that only lxcfs's files may be mounted inside /proc
// must see it there, however the name looked a moment later. husk compares
// a second, symlink-free lookup with the target by inode and mount and
// otherwise reads the target's path back from the kernel: a match by inode
// alone could be passed by a decoy of the same inode number on another file
// system. Every container is either refused or gets the bind on the decoy;
// none has a mount inside /proc.
TEST_CASE("a mount destination swapped with a symlink into /proc never mounts inside /proc, 100 containers",
          "[cve-2019-16884][security]") {
  TempDir host("husk-sec-race-proc-");
  write_file(host.path + "/src-file", "from-the-host\n");
  Container c("race-proc");
  fs::create_directories(c.rootfs + "/race/real/sys/kernel");
  write_file(c.rootfs + "/race/real/sys/kernel/core_pattern", "decoy\n");
  fs::create_directory_symlink("/proc", c.rootfs + "/race/link");
  c.cfg["mounts"].push_back({{"destination", "/race/real/sys/kernel/core_pattern"},
                             {"type", "bind"},
                             {"source", host.path + "/src-file"},
                             {"options", {"bind", "ro"}}});
  c.args({"sh", "-c", "cat /proc/sys/kernel/core_pattern; cat /proc/self/mountinfo"});
  std::string first_id = c.id;

  int ok = 0, refused = 0, inside = 0;
  auto start = std::chrono::steady_clock::now();
  {
    Swapper s(c.rootfs + "/race", "real", "link");
    for (int i = 0; i < 100 && std::chrono::steady_clock::now() - start < 40s; ++i) {
      c.id = unique_id("race-proc");
      c.cfg["linux"]["cgroupsPath"] = "/husk-test/" + c.id;
      auto r = c.run({}, SpawnOpts{.timeout = 20s});
      INFO("run " << i << ": " << r.err);
      if (r.code == 0) {
        ++ok;
        if (r.out.rfind("from-the-host", 0) == 0) ++inside;
        for (auto& m : parse_mountinfo(r.out.substr(r.out.find('\n') + 1)))
          if (m.mount_point.rfind("/proc/", 0) == 0 && m.mount_point.find("core_pattern") != std::string::npos) ++inside;
      } else {
        ++refused;
        CHECK(r.err.find("inside /proc") != std::string::npos);
      }
      CHECK(leftovers(c).empty());
      c.del(true);
    }
    INFO(s.swaps << " swaps");
    CHECK(s.swaps > 0);
  }
  WARN(ok << " containers ran (the bind on the decoy), " << refused << " refused");
  CHECK(ok + refused >= 30);
  CHECK(inside == 0);
  c.id = first_id;
}
