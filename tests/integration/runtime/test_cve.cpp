// Regressions for published runc vulnerabilities.
#include <catch2/catch.hpp>

#include <filesystem>

#include "harness.h"

using namespace hit;
namespace fs = std::filesystem;

TEST_CASE("CVE-2024-21626: cwd through a leaked fd", "[cve][security]") {
  // A runtime fd open on a host directory (runc leaked one on
  // /sys/fs/cgroup) plus cwd=/proc/self/fd/N gave a cwd outside the rootfs.
  TempDir marker("husk-it-cve-");
  auto& marker_dir = marker.path;
  write_file(marker_dir + "/marker", "host\n");
  write_file(marker_dir + "/evil.sh", "#!/bin/sh\necho ESCAPED-EXEC\n", 0755);
  std::string up = "../../../../../../../../..";
  for (int n = 3; n <= 10; ++n) {
    std::string fd = "/proc/self/fd/" + std::to_string(n);
    INFO("fd " << n);
    {
      Container c("cve-cwd");
      c.cfg["process"]["cwd"] = fd;
      c.args({"sh", "-c", "cat " + up + marker_dir + "/marker && echo ESCAPED-CWD; true"});
      auto r = c.run();
      INFO(r.out << r.err);
      CHECK_FALSE(contains(r.out, "ESCAPED"));
      CHECK(leftovers(c).empty());
    }
    {
      Container c("cve-exe");
      c.args({fd + "/" + up + marker_dir + "/evil.sh"});
      auto r = c.run();
      INFO(r.out << r.err);
      CHECK_FALSE(contains(r.out, "ESCAPED"));
      CHECK(leftovers(c).empty());
    }
  }
}

TEST_CASE("CVE-2019-16884: /proc in the rootfs is a symlink", "[cve][security]") {
  for (bool absolute : {false, true}) {
    Container c(absolute ? "cve-proc-abs" : "cve-proc-rel");
    INFO((absolute ? "absolute" : "relative") << " /proc symlink");
    TempDir outdir("husk-it-fakeproc-");
    auto& outside = outdir.path;
    fs::create_directory(c.rootfs + "/fakeproc");
    fs::remove(c.rootfs + "/proc");
    fs::create_directory_symlink(absolute ? outside : "fakeproc", c.rootfs + "/proc");
    c.args({"cat", "/proc/self/mountinfo"});
    auto r = c.run();
    INFO(r.out << r.err);
    if (r.code == 0) {
      // Contained: procfs is at /proc and nowhere else.
      auto m = parse_mountinfo(r.out);
      auto* p = find_mount(m, "/proc");
      REQUIRE(p);
      CHECK(p->fstype == "proc");
      for (auto& e : m)
        if (e.fstype == "proc") CHECK(e.mount_point.rfind("/proc", 0) == 0);
    } else {
      CHECK_FALSE(r.err.empty());
    }
    CHECK(fs::is_empty(outside));
    CHECK(fs::is_empty(c.rootfs + "/fakeproc"));
    CHECK(leftovers(c).empty());
  }
}

TEST_CASE("CVE-2019-5736: the runtime binary cannot be run inside the container", "[cve][security]") {
  // The init and exec'd processes are clones of the runtime until they exec:
  // their /proc/self/exe is the host binary. Running it (directly or as a
  // script interpreter) would give the container a dumpable process whose
  // /proc/<pid>/exe opens the host binary for writing.
  auto version_leaked = [](const Result& r) { return contains(r.out, "version") || contains(r.out, "spec:"); };
  // The host's libraries, so that a dynamically linked runtime could really
  // start in the busybox rootfs if it were not refused.
  auto with_host_libs = [](Container& c) {
    for (std::string dir : {"/lib", "/lib64", "/usr/lib"}) {
      if (!fs::exists(dir)) continue;
      fs::create_directories(c.rootfs + dir);
      c.cfg["mounts"].push_back({{"destination", dir}, {"type", "bind"}, {"source", dir}, {"options", {"rbind", "ro"}}});
    }
  };
  SECTION("as the container's process") {
    Container c("cve-exe-run");
    with_host_libs(c);
    c.args({"/proc/self/exe", "--version"});
    auto r = c.run();
    INFO(r.out << r.err);
    CHECK(r.code != 0);
    CHECK_FALSE(version_leaked(r));
    CHECK(leftovers(c).empty());
  }
  SECTION("through exec, directly and as a #! interpreter") {
    Container c("cve-exe-exec");
    with_host_libs(c);
    write_file(c.rootfs + "/via-shebang", "#!/proc/self/exe --version\n", 0755);
    int pid = c.start_process({"sleep", "30"});
    REQUIRE(pid > 0);
    for (std::string prog : {"/proc/self/exe", "/via-shebang"}) {
      INFO(prog);
      auto r = c.rt({"exec", c.id, prog, "--version"});
      INFO(r.out << r.err);
      CHECK(r.code != 0);
      CHECK_FALSE(version_leaked(r));
    }
    // the container is unharmed
    CHECK(c.rt({"exec", c.id, "true"}).ok());
  }
}
