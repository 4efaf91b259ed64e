// base: host objects opened once and found again only as the same object.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>

#include "base/error.h"
#include "base/judged.h"
#include "unit/temp_dir.h"

namespace base = husk::base;
namespace fs = std::filesystem;

TEST_CASE("judge follows a symlink and records the real path, device and inode") {
  husk_test::TempDir t;
  fs::create_directory(t.path + "/real");
  fs::create_directory_symlink("real", t.path + "/link");
  base::Judged j = base::judge(t.path + "/link", O_PATH | O_DIRECTORY, "root.path");
  CHECK(j.field == "root.path");
  CHECK(j.opened == t.path + "/link");
  CHECK(j.id.real == fs::canonical(t.path + "/real").string());
  struct stat st;
  REQUIRE(stat((t.path + "/real").c_str(), &st) == 0);
  CHECK(base::same_object(st, j.id));
  CHECK((fcntl(j.fd.get(), F_GETFD) & FD_CLOEXEC));
  CHECK_THROWS_WITH(base::judge(t.path + "/missing", O_PATH, "mounts[1].source"),
                    Catch::Contains("mounts[1].source: open " + t.path + "/missing"));
}

TEST_CASE("judge records the kernel's name for a path with ./, .. or // in it, and a plain one as given") {
  husk_test::TempDir t;
  fs::create_directories(t.path + "/a/b");
  const std::string real = fs::canonical(t.path + "/a/b").string();
  for (const std::string& p : {t.path + "/a/./b", t.path + "/a/b/../b", t.path + "//a/b", t.path + "/a/b/"}) {
    INFO(p);
    CHECK(base::judge(p, O_PATH | O_DIRECTORY, "mounts[0].source").id.real == real);
  }
  CHECK(base::judge(real, O_PATH | O_DIRECTORY, "mounts[0].source").id.real == real);
  // The last component a symlink, not followed (O_NOFOLLOW): the link itself, by its own name.
  fs::create_symlink("b", t.path + "/a/l");
  base::Judged link = base::judge(real + "/../l", O_PATH | O_NOFOLLOW, "mounts[0].source");
  struct stat st;
  REQUIRE(lstat((t.path + "/a/l").c_str(), &st) == 0);
  CHECK(base::same_object(st, link.id));
  CHECK(link.id.real == fs::canonical(t.path + "/a").string() + "/l");
  CHECK(base::judge(fs::canonical(t.path + "/a").string() + "/l", O_PATH | O_NOFOLLOW, "f").id.real ==
        fs::canonical(t.path + "/a").string() + "/l");
}

TEST_CASE("reopen_judged finds the same object, and refuses a swapped one naming the field") {
  husk_test::TempDir t;
  fs::create_directory(t.path + "/data");
  fs::create_directory(t.path + "/other");
  base::Judged j = base::judge(t.path + "/data", O_PATH, "mounts[2].source");
  base::Fd again = base::reopen_judged(j.id, O_PATH, j.field);
  struct stat st;
  REQUIRE(fstat(again.get(), &st) == 0);
  CHECK(base::same_object(st, j.id));

  // Another directory under the judged name.
  REQUIRE(rename((t.path + "/data").c_str(), (t.path + "/moved").c_str()) == 0);
  REQUIRE(rename((t.path + "/other").c_str(), (t.path + "/data").c_str()) == 0);
  CHECK_THROWS_WITH(base::reopen_judged(j.id, O_PATH, j.field),
                    Catch::Contains("mounts[2].source: changed since it was checked"));
  // A symlink under the judged name, even to the judged object itself.
  REQUIRE(rename((t.path + "/data").c_str(), (t.path + "/other").c_str()) == 0);
  fs::create_directory_symlink("moved", t.path + "/data");
  CHECK_THROWS_WITH(base::reopen_judged(j.id, O_PATH, j.field),
                    Catch::Contains("mounts[2].source: changed since it was checked"));
  // Gone.
  fs::remove(t.path + "/data");
  CHECK_THROWS_WITH(base::reopen_judged(j.id, O_PATH, j.field),
                    Catch::Contains("mounts[2].source: changed since it was checked"));
}
