// spec::parse_mount_options and the overlay layers read from its data:
// the option strings as the mount code and the policy checks see them.
#include <sys/mount.h>

#include <algorithm>

#include <catch2/catch.hpp>

#include "spec/mount_options.h"

using namespace husk::spec;

namespace {

Mount mnt(std::string dest, std::string type, std::string source, std::vector<std::string> opts) {
  return Mount{std::move(dest), std::move(source), std::move(type), std::move(opts), {}, {}};
}

}  // namespace

TEST_CASE("parse_mount_options: flags are set and cleared in order") {
  auto mo = parse_mount_options({"nosuid", "noexec", "nodev", "ro"});
  CHECK(mo.flags == (MS_NOSUID | MS_NOEXEC | MS_NODEV | MS_RDONLY));
  CHECK(mo.data.empty());
  CHECK_FALSE(mo.bind);

  CHECK(parse_mount_options({"ro", "rw"}).flags == 0);
  CHECK(parse_mount_options({"rw", "ro"}).flags == MS_RDONLY);
  CHECK(parse_mount_options({"nosuid", "suid", "nodev", "dev", "noexec", "exec"}).flags == 0);
  CHECK(parse_mount_options({"defaults"}).flags == 0);
  CHECK(parse_mount_options({"sync"}).flags == MS_SYNCHRONOUS);
  CHECK(parse_mount_options({"sync", "async"}).flags == 0);
  CHECK(parse_mount_options({"dirsync", "remount", "mand"}).flags == (MS_DIRSYNC | MS_REMOUNT | MS_MANDLOCK));
  CHECK(parse_mount_options({"mand", "nomand"}).flags == 0);
  CHECK(parse_mount_options({"noatime", "nodiratime"}).flags == (MS_NOATIME | MS_NODIRATIME));
  CHECK(parse_mount_options({"noatime", "atime", "nodiratime", "diratime"}).flags == 0);
  CHECK(parse_mount_options({"relatime", "strictatime"}).flags == (MS_RELATIME | MS_STRICTATIME));
  CHECK(parse_mount_options({"relatime", "norelatime", "strictatime", "nostrictatime"}).flags == 0);
  CHECK(parse_mount_options({"lazytime"}).flags == MS_LAZYTIME);
  CHECK(parse_mount_options({"lazytime", "nolazytime"}).flags == 0);
  CHECK(parse_mount_options({"nosymfollow"}).flags == MS_NOSYMFOLLOW);
}

TEST_CASE("parse_mount_options: bind and rbind") {
  auto b = parse_mount_options({"bind", "ro"});
  CHECK(b.bind);
  CHECK_FALSE(b.recursive_bind);
  CHECK(b.flags == MS_RDONLY);
  auto r = parse_mount_options({"rbind"});
  CHECK(r.bind);
  CHECK(r.recursive_bind);
  // MS_BIND is not left in flags: bind mounts are done with open_tree, not mount(2) flags.
  CHECK((r.flags & MS_BIND) == 0);
}

TEST_CASE("parse_mount_options: propagation, last one wins") {
  CHECK(parse_mount_options({"shared"}).propagation == MS_SHARED);
  CHECK(parse_mount_options({"rshared"}).propagation == (MS_SHARED | MS_REC));
  CHECK(parse_mount_options({"slave"}).propagation == MS_SLAVE);
  CHECK(parse_mount_options({"rslave"}).propagation == (MS_SLAVE | MS_REC));
  CHECK(parse_mount_options({"private"}).propagation == MS_PRIVATE);
  CHECK(parse_mount_options({"rprivate"}).propagation == (MS_PRIVATE | MS_REC));
  CHECK(parse_mount_options({"unbindable"}).propagation == MS_UNBINDABLE);
  CHECK(parse_mount_options({"runbindable"}).propagation == (MS_UNBINDABLE | MS_REC));
  CHECK(parse_mount_options({"rshared", "private"}).propagation == MS_PRIVATE);
  CHECK(parse_mount_options({"rbind", "rprivate"}).flags == 0);
}

TEST_CASE("parse_mount_options: recursive attributes") {
  auto m = parse_mount_options({"rro", "rnosuid", "rnodev", "rnoexec", "rnosymfollow", "rnodiratime"});
  CHECK(m.attr_set == (MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC |
                       MOUNT_ATTR_NOSYMFOLLOW | MOUNT_ATTR_NODIRATIME));
  CHECK(m.attr_clr == 0);
  CHECK(m.flags == 0);

  auto c = parse_mount_options({"rrw", "rsuid", "rdev", "rexec", "rsymfollow", "rdiratime"});
  CHECK(c.attr_set == 0);
  CHECK(c.attr_clr == (MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC |
                       MOUNT_ATTR_NOSYMFOLLOW | MOUNT_ATTR_NODIRATIME));

  // Later options override earlier ones for the same attribute.
  auto o = parse_mount_options({"rro", "rrw"});
  CHECK(o.attr_set == 0);
  CHECK(o.attr_clr == MOUNT_ATTR_RDONLY);
  auto o2 = parse_mount_options({"rrw", "rro"});
  CHECK(o2.attr_set == MOUNT_ATTR_RDONLY);
  CHECK(o2.attr_clr == 0);
}

TEST_CASE("parse_mount_options: atime attributes always clear the whole atime field") {
  // The kernel rejects a partial MOUNT_ATTR__ATIME in attr_clr.
  for (const char* o : {"rnoatime", "rstrictatime", "rrelatime", "ratime", "rnostrictatime"}) {
    auto m = parse_mount_options({o});
    INFO(o);
    CHECK(m.attr_clr == MOUNT_ATTR__ATIME);
  }
  CHECK(parse_mount_options({"rnoatime"}).attr_set == MOUNT_ATTR_NOATIME);
  CHECK(parse_mount_options({"rstrictatime"}).attr_set == MOUNT_ATTR_STRICTATIME);
  CHECK(parse_mount_options({"rnoatime", "rrelatime"}).attr_set == MOUNT_ATTR_RELATIME);
  CHECK(parse_mount_options({"rnoatime", "ratime"}).attr_set == MOUNT_ATTR_RELATIME);
}

TEST_CASE("parse_mount_options: unknown options are filesystem data, in order") {
  auto m = parse_mount_options({"nosuid", "mode=755", "strictatime", "size=65536k"});
  CHECK(m.data == "mode=755,size=65536k");
  CHECK(m.flags == (MS_NOSUID | MS_STRICTATIME));
  CHECK(parse_mount_options({"newinstance", "ptmxmode=0666", "mode=0620", "gid=5"}).data ==
        "newinstance,ptmxmode=0666,mode=0620,gid=5");
}

TEST_CASE("parse_mount_options: idmap and tmpcopyup") {
  // Consumed as options, never passed to mount(2) as data.
  CHECK(parse_mount_options({"idmap"}).data.empty());
  CHECK(parse_mount_options({"ridmap"}).data.empty());
  CHECK_FALSE(parse_mount_options({"rbind", "idmap"}).recursive_idmap);
  CHECK(parse_mount_options({"rbind", "ridmap"}).recursive_idmap);
  CHECK(parse_mount_options({"tmpcopyup", "mode=755"}).tmpcopyup);
  CHECK(parse_mount_options({"tmpcopyup", "mode=755"}).data == "mode=755");
  CHECK_FALSE(parse_mount_options({"mode=755"}).tmpcopyup);
}

TEST_CASE("known_mount_options lists only options parse_mount_options understands") {
  auto all = known_mount_options();
  CHECK(all.size() > 60);
  for (const auto& o : all) {
    INFO(o);
    CHECK(parse_mount_options({o}).data.empty());
  }
  CHECK(std::find(all.begin(), all.end(), "rro") != all.end());
  CHECK(std::find(all.begin(), all.end(), "tmpcopyup") != all.end());
}

TEST_CASE("overlay_layers: the host directories in the data string's order; replaced in that order") {
  auto m = mnt("/mnt", "overlay", "overlay", {"ro", "lowerdir=/a:/b", "upperdir=/u,workdir=/w", "index=off", "lowerdir+=/c"});
  auto layers = overlay_layers(m);
  REQUIRE(layers.size() == 5);
  CHECK(layers[0].dir == "/a");
  CHECK(layers[0].option == 1);
  CHECK(layers[1].dir == "/b");
  CHECK(layers[2].dir == "/u");
  CHECK(layers[2].option == 2);
  CHECK(layers[3].dir == "/w");
  CHECK(layers[4].dir == "/c");
  CHECK(layers[4].option == 4);
  CHECK(overlay_layers(mnt("/x", "tmpfs", "tmpfs", {"lowerdir=/a"})).empty());

  const std::string data = parse_mount_options(m.options).data;
  CHECK(replace_overlay_layers(data, {"1", "2", "3", "4", "5"}) == "lowerdir=1:2,upperdir=3,workdir=4,index=off,lowerdir+=5");
  CHECK_THROWS_WITH(replace_overlay_layers(data, {"1"}), Catch::Contains("no replacement"));
  CHECK_THROWS_WITH(replace_overlay_layers(data, {"1", "2", "3", "4", "5", "6"}), Catch::Contains("6 layers given, 5"));
}
