// `husk check` and the operator's policy on create: the findings a user reads,
// and a bundle refused before anything is made, with the reason in the one
// error line (and --log) that engines show.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

using namespace hit;

namespace {

// Enough for busybox to run `id -u` under a default-deny filter.
const std::vector<std::string> kAllowed = {
    "execve", "execveat", "brk", "mmap", "munmap", "mprotect", "arch_prctl", "set_tid_address",
    "set_robust_list", "rseq", "prlimit64", "exit", "exit_group", "read", "write", "writev", "openat", "close",
    "fstat", "newfstatat", "statx", "getuid", "geteuid", "getgid", "getegid", "getpid", "getppid", "gettid",
    "rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "ioctl", "fcntl", "uname", "getcwd", "readlink",
    "getrandom", "futex", "capget", "capset", "prctl", "setuid", "setgid", "setgroups", "close_range",
    "getdents64", "lseek", "madvise", "chdir", "fchdir", "umask", "getgroups", "setresuid", "setresgid"};

// A bundle restricted accepts: uid 1000, NNP, only NET_BIND_SERVICE, a
// default-deny seccomp filter, limits, read-only root.
void harden(Container& c) {
  c.cfg["root"]["readonly"] = true;
  c.cfg["process"]["user"] = {{"uid", 1000}, {"gid", 1000}};
  c.cfg["process"]["noNewPrivileges"] = true;
  c.cfg["process"]["capabilities"] = {{"bounding", {"CAP_NET_BIND_SERVICE"}}};
  c.cfg["linux"]["seccomp"] = {{"defaultAction", "SCMP_ACT_ERRNO"},
                               {"syscalls", {{{"names", kAllowed}, {"action", "SCMP_ACT_ALLOW"}}}}};
  c.cfg["linux"]["resources"]["memory"] = {{"limit", 64 << 20}};
  c.cfg["linux"]["resources"]["pids"] = {{"limit", 50}};
}

Result husk_with(const std::string& config, const std::vector<std::string>& args, const std::string& argv0 = "") {
  std::vector<std::string> argv{"env", "HUSK_CONFIG=" + config, argv0.empty() ? runtime() : argv0};
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv);
}

bool cgroup_exists(const std::string& path) {
  struct stat st;
  for (const char* h : {"/sys/fs/cgroup/memory", "/sys/fs/cgroup/pids", "/sys/fs/cgroup"})
    if (::stat((h + path).c_str(), &st) == 0) return true;
  return false;
}

}  // namespace

TEST_CASE("check: a table of bundles gives exactly their findings and exit status", "[policy][husk-only]") {
  struct Row {
    const char* what;
    std::function<void(Container&)> edit;
    int code;
    std::vector<std::string> lines;  // severity, rule and field of each finding, in order
  };
  const std::vector<Row> rows = {
      {"ok", harden, 0, {}},
      {"privileged", [](Container& c) {
         harden(c);
         c.cfg["process"]["capabilities"]["bounding"].push_back("CAP_SYS_ADMIN");
         c.cfg["linux"]["resources"]["devices"] = {{{"allow", true}, {"access", "rwm"}}};
       }, 1, {"error     privileged-capabilities  process.capabilities", "error     host-devices             linux.resources.devices[0]"}},
      {"host network", [](Container& c) {
         harden(c);
         auto& ns = c.cfg["linux"]["namespaces"];
         for (size_t i = 0; i < ns.size(); ++i)
           if (ns[i]["type"] == "network") ns.erase(i);
       }, 1, {"error     host-namespaces       linux.namespaces (network)", "warn      network-not-isolated  linux.namespaces (network)"}},
      {"docker.sock", [](Container& c) {
         harden(c);
         json sock = {{"destination", "/var/run/docker.sock"}, {"type", "bind"},
                      {"source", "/var/run/docker.sock"}, {"options", {"rbind"}}};
         c.cfg["mounts"].insert(c.cfg["mounts"].begin(), sock);
       }, 1, {"error     sensitive-mounts  mounts[0].source"}},
      {"no seccomp", [](Container& c) {
         harden(c);
         c.cfg["linux"].erase("seccomp");
       }, 1, {"error     no-seccomp  linux.seccomp"}},
      {"kmsg and vcs rules", [](Container& c) {
         harden(c);
         c.cfg["linux"]["resources"]["devices"] = {
             {{"allow", true}, {"type", "c"}, {"major", 1}, {"minor", 11}, {"access", "rw"}},
             {{"allow", true}, {"type", "c"}, {"major", 7}, {"minor", 0}, {"access", "rw"}},
             {{"allow", true}, {"type", "c"}, {"major", 136}, {"access", "rw"}}};
       }, 1, {"error     host-devices  linux.resources.devices[0]", "error     host-devices  linux.resources.devices[1]"}},
      {"keyring and namespaces allowed", [](Container& c) {
         harden(c);
         c.cfg["linux"]["seccomp"]["syscalls"].push_back({{"names", {"keyctl", "clone", "io_uring_setup"}}, {"action", "SCMP_ACT_ALLOW"}});
       }, 1, {"error     seccomp-syscalls  linux.seccomp.syscalls[1]", "error     seccomp-syscalls  linux.seccomp.syscalls[1]",
              "error     seccomp-syscalls  linux.seccomp.syscalls[1]"}},
      {"clone without namespaces", [](Container& c) {
         harden(c);
         c.cfg["linux"]["seccomp"]["syscalls"].push_back(
             {{"names", {"clone"}}, {"action", "SCMP_ACT_ALLOW"},
              {"args", {{{"index", 0}, {"value", 2114060288}, {"valueTwo", 0}, {"op", "SCMP_CMP_MASKED_EQ"}}}}});
       }, 0, {}},
  };
  for (const auto& row : rows) {
    DYNAMIC_SECTION(row.what) {
      Container c("check");
      row.edit(c);
      c.write_config();
      auto r = run({runtime(), "check", "--policy", "restricted", c.bundle});
      INFO(r.out << r.err);
      CHECK(r.code == row.code);
      auto got = lines(r.out);
      if (row.lines.empty()) {
        CHECK(got == std::vector<std::string>{c.bundle + ": no findings under policy restricted"});
        continue;
      }
      REQUIRE(got.size() == row.lines.size() + 1);
      CHECK(got[0].rfind("SEVERITY", 0) == 0);
      for (size_t i = 0; i < row.lines.size(); ++i) CHECK(got[i + 1].rfind(row.lines[i], 0) == 0);
    }
  }
}

TEST_CASE("create under the operator's policy: refused with the findings, nothing left behind",
          "[policy][husk-only]") {
  TempDir etc("husk-it-policy-");
  Container c("policy");
  c.args({"id", "-u"});
  c.cfg["annotations"] = {{"org.husk.policy", "off"}};  // a bundle cannot relax the policy
  c.write_config();
  const std::string config = etc.path + "/config.yaml", log = etc.path + "/log.json";
  write_file(config, "policy: baseline\nroots:\n  " + c.root + ": restricted\n");

  auto r = husk_with(config, {"--root", c.root, "--log", log, "--log-format", "json", "run", "--bundle", c.bundle, c.id});
  INFO(r.err);
  CHECK(r.code != 0);
  CHECK(lines(r.err).size() == 1);
  CHECK(contains(r.err, "config.json breaks the operator's policy restricted (" + config + "): "));
  CHECK(contains(r.err, "process.user.uid = 0 (root-user: "));
  CHECK(contains(r.err, "linux.seccomp = absent (no-seccomp: "));
  auto last = json::parse(lines(read_file(log)).back());
  CHECK(last.at("level") == "error");
  CHECK(contains(last.at("msg").get<std::string>(), "process.user.uid = 0 (root-user"));
  CHECK(::access((c.root + "/" + c.id).c_str(), F_OK) != 0);
  CHECK_FALSE(cgroup_exists("/husk-test/" + c.id));
  // check with no --policy reads the same operator policy.
  CHECK(husk_with(config, {"--root", c.root, "check", c.bundle}).code == 1);

  // The same bundle hardened runs: the policy refuses only what breaks it.
  harden(c);
  c.write_config();
  auto ok = husk_with(config, {"--root", c.root, "run", "--bundle", c.bundle, c.id});
  INFO(ok.err);
  CHECK(ok.code == 0);
  CHECK(ok.out == "1000\n");

  // Another root falls back to the default policy (baseline): root is allowed there.
  Container other("policy-default");
  other.write_config();
  CHECK(husk_with(config, {"--root", other.root, "run", "--bundle", other.bundle, other.id}).code == 0);

  // A config that cannot be parsed fails create: the operator's policy is never skipped.
  write_file(config, "policy: [restricted\n");
  auto bad = husk_with(config, {"--root", other.root, "run", "--bundle", other.bundle, other.id});
  CHECK(bad.code != 0);
  CHECK(contains(bad.err, config + ": line "));
  // Nor one a caller made a FIFO (it would block create) or a dangling symlink.
  const std::string fifo = etc.path + "/fifo.yaml", dangling = etc.path + "/gone.yaml";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  REQUIRE(::symlink((etc.path + "/nowhere").c_str(), dangling.c_str()) == 0);
  for (const auto& path : {fifo, dangling}) {
    auto r = husk_with(path, {"--root", other.root, "run", "--bundle", other.bundle, other.id});
    INFO(path << ": " << r.err);
    CHECK(r.code != 0);
    CHECK_FALSE(r.timed_out);
    CHECK(contains(r.err, path));
  }
}

TEST_CASE("the operator's policy follows the name husk is called as", "[policy][husk-only]") {
  TempDir etc("husk-it-policy-bin-");
  const std::string link = etc.path + "/husk-strict", config = etc.path + "/config.yaml";
  REQUIRE(::symlink(runtime().c_str(), link.c_str()) == 0);
  write_file(config, "binaries:\n  husk-strict: restricted\n");
  Container c("policy-bin");
  c.write_config();
  auto strict = husk_with(config, {"--root", c.root, "run", "--bundle", c.bundle, c.id}, link);
  CHECK(strict.code != 0);
  CHECK(contains(strict.err, "breaks the operator's policy restricted"));
  auto plain = husk_with(config, {"--root", c.root, "run", "--bundle", c.bundle, c.id});
  INFO(plain.err);
  CHECK(plain.code == 0);
}

TEST_CASE("a symlink in the bundle cannot carry a credential past the operator's policy", "[policy][husk-only]") {
  TempDir etc("husk-it-policy-link-");
  const std::string config = etc.path + "/config.yaml";
  write_file(config, "policy: baseline\n");
  Container c("policy-link");
  REQUIRE(::symlink("/etc/shadow", (c.bundle + "/passwords").c_str()) == 0);
  c.args({"cat", "/passwords"});
  c.cfg["mounts"].push_back({{"destination", "/passwords"}, {"type", "bind"}, {"source", "passwords"},
                             {"options", {"bind", "ro"}}});
  c.write_config();
  auto r = husk_with(config, {"--root", c.root, "run", "--bundle", c.bundle, c.id});
  CHECK(r.code != 0);
  CHECK(r.out.empty());
  CHECK(contains(r.err, "passwords (sensitive-mounts: holds or is /etc/shadow"));
  auto checked = run({runtime(), "check", c.bundle});
  CHECK(checked.code == 1);
  CHECK(contains(checked.out, "sensitive-mounts"));
}

TEST_CASE("exec under the operator's policy: --cap and a root user are refused, a plain exec runs",
          "[policy][husk-only]") {
  TempDir etc("husk-it-policy-exec-");
  const std::string config = etc.path + "/config.yaml";
  Container c("policy-exec");
  harden(c);
  c.cfg["linux"]["seccomp"]["syscalls"][0]["names"].push_back("nanosleep");
  c.cfg["linux"]["seccomp"]["syscalls"][0]["names"].push_back("clock_nanosleep");
  write_file(config, "roots:\n  " + c.root + ": restricted\n");
  c.args({"sleep", "30"});
  c.write_config();
  REQUIRE(husk_with(config, {"--root", c.root, "run", "-d", "--bundle", c.bundle, c.id}).ok());
  auto ok = husk_with(config, {"--root", c.root, "exec", c.id, "id", "-u"});
  INFO(ok.err);
  CHECK(ok.code == 0);
  CHECK(ok.out == "1000\n");
  auto cap = husk_with(config, {"--root", c.root, "exec", "--cap", "CAP_SYS_ADMIN", c.id, "true"});
  CHECK(cap.code != 0);
  CHECK(contains(cap.err, "exec: the process breaks the operator's policy restricted"));
  CHECK(contains(cap.err, "CAP_SYS_ADMIN"));
  auto root = husk_with(config, {"--root", c.root, "exec", "-u", "0", c.id, "true"});
  CHECK(root.code != 0);
  CHECK(contains(root.err, "process.user.uid = 0 (root-user"));
  c.del(true);
}

TEST_CASE("a relative bind source is the bundle's, whatever husk's working directory", "[policy][mounts]") {
  Container c("relative-bind");
  REQUIRE(::mkdir((c.bundle + "/etc").c_str(), 0755) == 0);
  write_file(c.bundle + "/etc/hostname", "from-the-bundle\n");
  c.cfg["mounts"].push_back({{"destination", "/h"}, {"type", "bind"}, {"source", "etc"}, {"options", {"rbind", "ro"}}});
  c.args({"cat", "/h/hostname"});
  c.write_config();
  SpawnOpts from_root;
  from_root.cwd = "/";  // where "etc" would be the host's /etc
  auto r = c.run({}, from_root);
  INFO(r.err);
  CHECK(r.code == 0);
  CHECK(r.out == "from-the-bundle\n");
}

TEST_CASE("a device rule the operator's policy file allows (FUSE) runs; without it create refuses",
          "[policy][husk-only]") {
  TempDir etc("husk-it-policy-dev-");
  const std::string config = etc.path + "/config.yaml", fuse = etc.path + "/fuse.yaml";
  write_file(fuse, "level: baseline\nallow: {devices: ['c 10:229']}\n");
  Container c("policy-dev");
  c.args({"true"});
  c.cfg["linux"]["resources"]["devices"] = {{{"allow", true}, {"type", "c"}, {"major", 10}, {"minor", 229}, {"access", "rw"}}};
  c.write_config();
  write_file(config, "policy: baseline\n");
  auto refused = husk_with(config, {"--root", c.root, "run", "--bundle", c.bundle, c.id});
  CHECK(refused.code != 0);
  CHECK(contains(refused.err, "linux.resources.devices[0] = allow c 10:229 rw (host-devices: "));
  write_file(config, "policy: " + fuse + "\n");
  auto ok = husk_with(config, {"--root", c.root, "run", "--bundle", c.bundle, c.id});
  INFO(ok.err);
  CHECK(ok.code == 0);
}
