// husk-it-namespaces: root-only tests of prepare_rootfs / enter_rootfs /
// finalize_rootfs (see support.h). Without root or busybox every case is
// skipped: exit 77 (tests/skip.h), which scripts/test reports as SKIP.
#include <sched.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "catch_run.h"
#include "skip.h"
#include "support.h"

using nstest::fs::exists;

int main(int argc, char** argv) {
  if (geteuid() != 0) {
    std::printf("SKIP: husk-it-namespaces needs root (mounts, mknod, pivot_root)\n");
    return husk_test::kSkipExit;
  }
  if (!exists("/bin/busybox")) {
    std::printf("SKIP: /bin/busybox (busybox-static) is not installed\n");
    return husk_test::kSkipExit;
  }
  // Our own mount namespace, so nothing here can touch the machine's mounts.
  if (unshare(CLONE_NEWNS) < 0 || mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) < 0) {
    std::perror("husk-it-namespaces: private mount namespace");
    return 2;
  }
  char tmpl[] = "/tmp/husk-it-ns-XXXXXX";
  if (!mkdtemp(tmpl)) {
    std::perror("mkdtemp");
    return 2;
  }
  nstest::g_tmp = tmpl;
  // A shared mount, so a leak from a child's namespace would show up in ours.
  if (mount(tmpl, tmpl, nullptr, MS_BIND, nullptr) < 0 || mount(nullptr, tmpl, nullptr, MS_SHARED, nullptr) < 0) {
    std::perror("husk-it-namespaces: shared bind of the temp dir");
    return 2;
  }
  int rc = husk_test::run_catch(argc, argv);
  umount2(tmpl, MNT_DETACH);
  nstest::fs::remove_all(tmpl);
  return husk_test::finish(rc);
}
