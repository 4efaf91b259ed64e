// The protected re-exec (launch/self_exe.h) takes its cheap path where it
// can: a read-only overlayfs view of the binary, not a memfd copy of it
// (43 MB as built, copied at every create, run and exec). The overlay's
// setup differs between kernels (6.8's "lowerdir+" against the older
// "lowerdir"), so scripts/test runs this in the cgroup v2 VM (Linux 6.1)
// too. The guarantee itself, that the image cannot be written, is
// tests/security/test_5736.cpp's.
#include <catch2/catch.hpp>

#include <sys/statvfs.h>
#include <unistd.h>

#include <filesystem>

#include "harness.h"
#include "skip.h"

using namespace hit;

TEST_CASE("the waiting init runs husk from an overlay view of its binary, not from a memfd copy",
          "[protect][husk-only]") {
  if (runtime_is_runc()) HUSK_SKIP("husk's own re-exec");
  if (::geteuid() != 0) HUSK_SKIP("overlayfs needs root");
  struct statvfs sv;
  if (::statvfs(runtime().c_str(), &sv) == 0 && (sv.f_flag & ST_RDONLY))
    HUSK_SKIP("the runtime is on a read-only mount: it needs no protected copy");
  Container c("protect-overlay");
  c.args({"true"});
  REQUIRE(c.create().ok());
  std::string exe = std::filesystem::read_symlink("/proc/" + std::to_string(c.pid()) + "/exe");
  INFO(exe);
  // Seen failing in the VM before e85f279: "/memfd:husk (deleted)".
  CHECK(exe.find("memfd:") == std::string::npos);
  // The overlay is attached nowhere: its path is the binary's name at its root.
  CHECK(exe == "/" + std::filesystem::path(runtime()).filename().string());
  REQUIRE(c.del(true).ok());
  CHECK(leftovers(c).empty());
}

// The overlay's lower directory lives in husk's default state root; one
// planted there as a symlink (to a FUSE mount that never answers, say) is
// not followed: husk falls back to the sealed copy. Seen failing with the
// directory opened without O_NOFOLLOW: the exe was the overlay's "/husk".
TEST_CASE("a symlink planted as the overlay's lower directory is not followed", "[protect][husk-only]") {
  if (runtime_is_runc()) HUSK_SKIP("husk's own re-exec");
  if (::geteuid() != 0) HUSK_SKIP("overlayfs needs root");
  const std::string lower = "/run/husk/.exe-lower";
  TempDir target("husk-planted-lower.");
  std::error_code ec;
  std::filesystem::remove(lower, ec);  // husk's own empty directory, made again by the next create
  std::filesystem::create_directory_symlink(target.path, lower);
  Container c("protect-planted");
  c.args({"true"});
  auto created = c.create();
  std::string exe = created.ok() ? std::filesystem::read_symlink("/proc/" + std::to_string(c.pid()) + "/exe").string() : "";
  std::filesystem::remove(lower);
  INFO(created.err);
  REQUIRE(created.ok());
  INFO(exe);
  CHECK(exe.rfind("/memfd:husk", 0) == 0);
  REQUIRE(c.del(true).ok());
  CHECK(leftovers(c).empty());
}
