// CVE-2016-9962: a created (not yet started) init must not hold an fd that
// reaches the host's filesystem; another container sharing its pid
// namespace with CAP_SYS_PTRACE could walk /proc/<init>/fd/N/.. to the host.
//
// How they failed: against the husk before 06ed4be (and against the
// mutant, 14774f5 with mutant-14774f5.patch) the created init held an
// O_PATH fd of its state directory (ROOT/<id>) while blocked opening
// exec.fifo: the host-side listing found "fd 4 -> /tmp/husk-it-r-.../<id>:
// a directory", and the container in the same pid namespace read the host
// marker through /proc/1/fd/4/../../../tmp/.../marker. Pass since 06ed4be
// (issue 7 item 5).
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <set>

#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>

#include "sec.h"

using namespace hit;
using namespace sec;
namespace fs = std::filesystem;

namespace {

// (dev, ino) of every regular file of the rootfs.
std::set<std::pair<dev_t, ino_t>> rootfs_files(const std::string& rootfs) {
  std::set<std::pair<dev_t, ino_t>> s;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(rootfs, ec); it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    struct stat st;
    if (::lstat(it->path().c_str(), &st) == 0 && S_ISREG(st.st_mode)) s.insert({st.st_dev, st.st_ino});
  }
  return s;
}

// The one directory a created init may hold: its own fd directory on a
// procfs of its own pid namespace (it reopens exec.fifo there; the container
// may mount no /proc). Seen from the host: not the host's procfs, read-only,
// listing the init's fds, and above it only the container's processes (here
// the init alone).
std::string bad_fd_dir(int pid, const FdInfo& f) {
  const std::string at = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(f.fd);
  struct statfs sf{};
  struct stat host_proc;
  if (::statfs(at.c_str(), &sf) != 0 || sf.f_type != PROC_SUPER_MAGIC) return "a directory";
  if (::stat("/proc", &host_proc) != 0 || host_proc.st_dev == f.dev) return "a directory of the host's procfs";
  // Read-only: a container whose /proc is "ro" must not write one through it.
  struct statvfs vfs{};
  if (::statvfs(at.c_str(), &vfs) != 0 || !(vfs.f_flag & ST_RDONLY)) return "a procfs of its own that is writable";
  std::set<std::string> listed, fds;
  std::error_code ec;
  for (auto& e : fs::directory_iterator(at, ec)) listed.insert(e.path().filename().string());
  for (auto& e : fs::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec)) fds.insert(e.path().filename().string());
  if (listed != fds) return "a procfs directory other than the init's fds";
  std::vector<std::string> above;
  for (auto& e : fs::directory_iterator(at + "/../..", ec)) above.push_back(e.path().filename().string());
  std::sort(above.begin(), above.end());
  if (above != std::vector<std::string>{"1", "self", "thread-self"}) return "a procfs that shows more than the container's init";
  return "";
}

// Why the fd of a created init is not acceptable, or "" if it is.
std::string bad_fd(int pid, const FdInfo& f, const std::set<std::pair<dev_t, ino_t>>& rootfs) {
  const std::string& t = f.target;
  if (t.rfind("socket:", 0) == 0 || t.rfind("pipe:", 0) == 0 || t.rfind("anon_inode:", 0) == 0) return "";
  if (t.rfind("/memfd:", 0) == 0) return "";
  if (!f.stat_ok) return "cannot stat it";
  if (S_ISDIR(f.mode)) return bad_fd_dir(pid, f);
  if (S_ISFIFO(f.mode)) return contains(t, "exec.fifo") ? "" : "a fifo other than exec.fifo";
  if (S_ISSOCK(f.mode)) return "";
  if (S_ISCHR(f.mode)) {
    unsigned ma = major(f.rdev), mi = minor(f.rdev);
    if (ma == 1 && (mi == 3 || mi == 5 || mi == 7 || mi == 8 || mi == 9)) return "";  // null zero full random urandom
    if (ma == 136 || (ma == 5 && mi <= 2)) return "";                                 // pts, tty, console, ptmx
    return "a character device " + std::to_string(ma) + ":" + std::to_string(mi);
  }
  if (S_ISREG(f.mode)) return rootfs.count({f.dev, f.ino}) ? "" : "a regular file outside the rootfs";
  return "an unexpected file type";
}

void check_created_init_fds(Container& c) {
  int pid = c.pid();
  auto files = rootfs_files(c.rootfs);
  auto fds = process_fds(pid);
  CHECK(fds.size() >= 3);
  for (auto& f : fds) {
    auto why = bad_fd(pid, f, files);
    INFO("created init " << pid << " fd " << f.fd << " -> " << f.target << ": " << why);
    CHECK(why.empty());
  }
}

}  // namespace

TEST_CASE("CVE-2016-9962: fds of a created init, seen from the host", "[cve-2016-9962][security]") {
  SECTION("plain create") {
    Container c("9962-fds");
    c.args({"true"});
    auto r = c.create();
    INFO(r.err);
    REQUIRE(r.ok());
    check_created_init_fds(c);
  }
  SECTION("terminal and --preserve-fds") {
    Container c("9962-fds-tty");
    c.cfg["process"]["terminal"] = true;
    c.args({"true"});
    c.write_config();
    std::string sock = c.bundle + "/console.sock";
    Fd listener = listen_unix(sock);
    // A preserved fd the caller chose: a pipe (it reaches nothing on disk).
    int p[2];
    REQUIRE(::pipe(p) == 0);
    Fd pr(p[0]), pw(p[1]);
    Child create({runtime(), "--root", c.root, "create", "--bundle", c.bundle, "--console-socket", sock,
                  "--preserve-fds", "1", c.id},
                 SpawnOpts{.extra_fds = {{pr.get(), 3}}});
    Fd master = receive_fd(listener.get());
    auto r = create.wait();
    INFO(r.err);
    REQUIRE(r.ok());
    check_created_init_fds(c);
  }
}

TEST_CASE("CVE-2016-9962: a container in the created init's pid namespace cannot reach the host",
          "[cve-2016-9962][security]") {
  if (hostile_binary().empty()) return skip(hostile_error());
  TempDir host("husk-sec-9962-");
  std::string marker = host.path + "/marker";
  std::string token = "HOST-MARKER-" + unique_id("9962");
  write_file(marker, token + "\n");
  std::string before = tree_state(host.path);

  Container a("9962-a"), b("9962-b");
  a.args({"true"});
  auto r = a.create();
  INFO(r.err);
  REQUIRE(r.ok());
  install_hostile(b);
  add_caps(b.cfg, {"CAP_SYS_PTRACE", "CAP_DAC_READ_SEARCH"});
  join_namespace(b.cfg, "pid", "/proc/" + std::to_string(a.pid()) + "/ns/pid");
  // The marker's host path, and also a shell attempt at the classic form.
  b.args({"sh", "-c",
          "/hostile fdescape " + marker + " 2; for f in /proc/1/fd/*; do ls \"$f/..\" \"$f/../..\" 2>/dev/null; "
          "cat \"$f/../../../../../../../..\"" + marker + " 2>/dev/null; done; echo probe-finished"});
  auto rb = b.run();
  INFO(rb.out << rb.err);
  CHECK(rb.code == 0);
  CHECK(contains(rb.out, "probe-finished"));
  CHECK_FALSE(contains(rb.out, token));
  CHECK_FALSE(contains(rb.out, "READ "));
  CHECK_FALSE(contains(rb.out, a.id));  // `ls /proc/1/fd/N/..` listed the host's state root
  CHECK(a.status() == "created");
  CHECK(tree_state(host.path) == before);
}
