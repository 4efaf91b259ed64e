#include "harness.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <linux/magic.h>
#include <sys/mount.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "base/error.h"
#include "skip.h"

namespace fs = std::filesystem;

namespace hit {

namespace {

std::string g_template;

}  // namespace

const std::string& runtime() {
  static const std::string rt = [] {
    const char* e = std::getenv("HUSK_RUNTIME");
    return std::string(e && *e ? e : HUSK_IT_DEFAULT_RUNTIME);
  }();
  return rt;
}

bool runtime_is_runc() { return fs::path(runtime()).filename() == "runc"; }

TempDir::~TempDir() {
  try {
    remove_tree(path);
  } catch (...) {
  }
}

int suite_main(const std::string& name, const std::function<int()>& session) {
  if (::geteuid() != 0) {
    std::printf("SKIP: %s needs root\n", name.c_str());
    return husk_test::kSkipExit;
  }
  // Writes to a console whose container already exited must not kill us.
  std::signal(SIGPIPE, SIG_IGN);
  std::fprintf(stderr, "runtime under test: %s\n", runtime().c_str());
  try {
    build_template();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", name.c_str(), e.what());
    destroy_template();
    return 2;
  }
  int rc = session();
  destroy_template();
  return husk_test::finish(rc);
}

std::string unique_id(const std::string& tag) {
  static std::atomic<int> n{0};
  return "hit-" + std::to_string(::getpid()) + "-" + std::to_string(n++) + "-" + tag;
}

void build_template() {
  g_template = make_tempdir("husk-it-tpl-");
  husk_test::make_bundle(g_template + "/b", runtime());
}

void destroy_template() {
  if (!g_template.empty()) remove_tree(g_template);
  // The per-container cgroups are gone by now; drop the common parent if empty.
  std::error_code ec;
  for (auto& ctrl : fs::directory_iterator("/sys/fs/cgroup", ec))
    ::rmdir((ctrl.path() / "husk-test").c_str());
  ::rmdir("/sys/fs/cgroup/husk-test");  // unified mode
}

const std::string& template_dir() { return g_template; }

// ---- mountinfo ----

std::vector<MountEntry> parse_mountinfo(const std::string& text) {
  std::vector<MountEntry> v;
  for (auto& m : husk::base::parse_mountinfo(text)) v.push_back(MountEntry{std::move(m)});
  return v;
}

bool MountEntry::has_opt(const std::string& opt) const {
  for (auto* opts : {&options, &super_options}) {
    std::stringstream ss(*opts);
    std::string o;
    while (std::getline(ss, o, ','))
      if (o == opt) return true;
  }
  return false;
}

const MountEntry* find_mount(const std::vector<MountEntry>& mounts, const std::string& point) {
  // The last one wins: it is the one visible at that path.
  const MountEntry* found = nullptr;
  for (auto& m : mounts)
    if (m.mount_point == point) found = &m;
  return found;
}

const MountEntry& mount_at(const std::vector<MountEntry>& mounts, const std::string& point) {
  const MountEntry* m = find_mount(mounts, point);
  INFO("mount point " << point);
  REQUIRE(m);
  return *m;
}

bool gone_soon(int pid, std::chrono::milliseconds timeout) {
  return eventually([&] { return !alive(pid); }, timeout);
}

// ---- capabilities ----

unsigned long long cap_mask(const std::vector<std::string>& names) {
  static const char* table[] = {
      "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER", "CAP_FSETID",
      "CAP_KILL", "CAP_SETGID", "CAP_SETUID", "CAP_SETPCAP", "CAP_LINUX_IMMUTABLE",
      "CAP_NET_BIND_SERVICE", "CAP_NET_BROADCAST", "CAP_NET_ADMIN", "CAP_NET_RAW",
      "CAP_IPC_LOCK", "CAP_IPC_OWNER", "CAP_SYS_MODULE", "CAP_SYS_RAWIO", "CAP_SYS_CHROOT",
      "CAP_SYS_PTRACE", "CAP_SYS_PACCT", "CAP_SYS_ADMIN", "CAP_SYS_BOOT", "CAP_SYS_NICE",
      "CAP_SYS_RESOURCE", "CAP_SYS_TIME", "CAP_SYS_TTY_CONFIG", "CAP_MKNOD", "CAP_LEASE",
      "CAP_AUDIT_WRITE", "CAP_AUDIT_CONTROL", "CAP_SETFCAP", "CAP_MAC_OVERRIDE",
      "CAP_MAC_ADMIN", "CAP_SYSLOG", "CAP_WAKE_ALARM", "CAP_BLOCK_SUSPEND", "CAP_AUDIT_READ",
      "CAP_PERFMON", "CAP_BPF", "CAP_CHECKPOINT_RESTORE"};
  unsigned long long m = 0;
  for (auto& n : names) {
    bool found = false;
    for (size_t i = 0; i < std::size(table); ++i)
      if (n == table[i]) {
        m |= 1ULL << i;
        found = true;
      }
    if (!found) throw std::logic_error("unknown capability " + n);
  }
  return m;
}

std::string status_field(int pid, const std::string& field) {
  for (auto& l : lines(read_file("/proc/" + std::to_string(pid) + "/status")))
    if (l.rfind(field + ":", 0) == 0) return trim(l.substr(field.size() + 1));
  return "";
}

// ---- Container ----

Container::Container(const std::string& tag, bool private_rootfs) : id(unique_id(tag)) {
  if (g_template.empty()) throw std::logic_error("template bundle not built");
  bundle = make_tempdir("husk-it-b-");
  root = make_tempdir("husk-it-r-");
  rootfs = bundle + "/rootfs";
  husk_test::copy_rootfs(g_template + "/b/rootfs", rootfs, !private_rootfs);
  cfg = json::parse(read_file(g_template + "/b/config.json"));
  cfg["root"] = {{"path", "rootfs"}, {"readonly", false}};
  cfg["process"]["terminal"] = false;
  cfg["process"]["args"] = {"true"};
  cfg["hostname"] = "husk-it";
  // Absolute, so nothing lands below the cgroup this test runs in.
  cfg["linux"]["cgroupsPath"] = "/husk-test/" + id;
}

void Container::share_root(const std::string& dir) {
  if (owns_root_) remove_tree(root);
  root = dir;
  owns_root_ = false;
}

void Container::write_config() const { write_file(bundle + "/config.json", cfg.dump(2)); }

Result Container::rt(const std::vector<std::string>& args, const SpawnOpts& opts) const {
  std::vector<std::string> argv{runtime(), "--root", root};
  argv.insert(argv.end(), args.begin(), args.end());
  return hit::run(argv, opts);
}

Result Container::create(const std::vector<std::string>& extra, const SpawnOpts& opts) {
  write_config();
  SpawnOpts o = opts;
  create_out_ = o.out ? o.out : std::make_shared<Capture>();
  o.out = create_out_;
  std::vector<std::string> a{"create", "--bundle", bundle};
  a.insert(a.end(), extra.begin(), extra.end());
  a.push_back(id);
  return rt(a, o);
}

Result Container::run(const std::vector<std::string>& extra, const SpawnOpts& opts) {
  write_config();
  std::vector<std::string> a{"run", "--bundle", bundle};
  a.insert(a.end(), extra.begin(), extra.end());
  a.push_back(id);
  return rt(a, opts);
}

Result Container::run_ok(const std::vector<std::string>& argv) {
  args(argv);
  auto r = run();
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  REQUIRE(r.code == 0);
  return r;
}

Result Container::del(bool force) const {
  if (force) return rt({"delete", "--force", id});
  return rt({"delete", id});
}

json Container::state() const {
  auto r = rt({"state", id});
  INFO("state " << id << ": " << r.err);
  REQUIRE(r.ok());
  return json::parse(r.out);
}

std::string Container::status() const { return state().at("status").get<std::string>(); }

bool Container::wait_status(const std::string& want, std::chrono::milliseconds timeout) const {
  return eventually(
      [&] {
        auto r = rt({"state", id});
        return r.ok() && json::parse(r.out).value("status", "") == want;
      },
      timeout, 20ms);
}

int Container::start_process(const std::vector<std::string>& argv) {
  args(argv);
  auto c = create();
  INFO("create: " << c.err);
  REQUIRE(c.ok());
  auto s = start();
  INFO("start: " << s.err);
  REQUIRE(s.ok());
  int p = pid();
  // `start` may return before the init has exec'd the user process.
  std::string want = fs::path(argv.at(0)).filename();
  if (eventually([&] { return husk_test::comm(p) == want; }, 5s, 5ms)) return p;
  FAIL("container process " << p << " never became " << want);
  return -1;
}

bool cgroup2_unified() {
  struct statfs sf {};
  return ::statfs("/sys/fs/cgroup", &sf) == 0 && sf.f_type == CGROUP2_SUPER_MAGIC;
}

std::string cgroup_file(const std::string& id, const std::string& controller, const std::string& file) {
  if (cgroup2_unified()) return "/sys/fs/cgroup/husk-test/" + id + "/" + file;
  return "/sys/fs/cgroup/" + controller + "/husk-test/" + id + "/" + file;
}

static std::vector<std::string> cgroup_dirs(const std::string& id) {
  std::vector<std::string> v;
  std::error_code ec;
  // Unified mode: the container's cgroup sits directly below the root.
  if (fs::exists(fs::path("/sys/fs/cgroup/husk-test") / id, ec)) v.push_back("/sys/fs/cgroup/husk-test/" + id);
  for (auto& ctrl : fs::directory_iterator("/sys/fs/cgroup", ec)) {
    auto p = ctrl.path() / "husk-test" / id;
    if (fs::exists(p, ec)) v.push_back(p);
  }
  return v;
}

Container::~Container() {
  hit::run({runtime(), "--root", root, "delete", "--force", id}, SpawnOpts{.timeout = 10s});
  // Mounts the runtime wrongly left in our namespace below the bundle: detach
  // them, deepest first, so removing the bundle cannot reach into them.
  try {
    auto mounts = husk::base::read_mountinfo();
    for (auto it = mounts.rbegin(); it != mounts.rend(); ++it)
      if (it->mount_point.rfind(bundle + "/", 0) == 0) ::umount2(it->mount_point.c_str(), MNT_DETACH);
  } catch (...) {
  }
  try {
    remove_tree(bundle);
    if (owns_root_) remove_tree(root);
  } catch (...) {
  }
  for (auto& d : cgroup_dirs(id)) ::rmdir(d.c_str());
}

// Live (non-zombie) processes of the host.
static std::vector<int> live_pids() {
  std::vector<int> v;
  std::error_code ec;
  for (auto& e : fs::directory_iterator("/proc", ec)) {
    auto name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") == std::string::npos && alive(std::stoi(name)))
      v.push_back(std::stoi(name));
  }
  return v;
}

std::vector<int> cgroup_pids(const std::string& id) {
  std::vector<int> v;
  for (int p : live_pids()) {
    try {
      if (contains(read_file("/proc/" + std::to_string(p) + "/cgroup"), "/husk-test/" + id + "\n")) v.push_back(p);
    } catch (const husk::Error&) {
      // gone meanwhile
    }
  }
  return v;
}

std::vector<std::string> leftovers(const Container& c) {
  std::vector<std::string> v;
  std::error_code ec;
  // runc keeps its state in ROOT/<id>; other layouts still must not leave
  // anything in a root of its own.
  if (fs::exists(fs::path(c.root) / c.id, ec)) v.push_back("state left: " + c.root + "/" + c.id);
  if (c.owns_root() && fs::exists(c.root, ec))
    for (auto& e : fs::directory_iterator(c.root, ec))
      if (e.path().filename() != c.id) v.push_back("state left in --root: " + e.path().string());
  for (auto& l : lines(read_file("/proc/self/mountinfo")))
    if (contains(l, c.bundle)) v.push_back("mount left: " + l);
  for (int p : live_pids()) {
    std::error_code ec2;
    auto r = fs::read_symlink("/proc/" + std::to_string(p) + "/root", ec2).string();
    if (!ec2 && r.rfind(c.bundle, 0) == 0) v.push_back("process " + std::to_string(p) + " with root " + r);
  }
  for (int p : cgroup_pids(c.id)) v.push_back("process " + std::to_string(p) + " in cgroup /husk-test/" + c.id);
  for (auto& d : cgroup_dirs(c.id)) v.push_back("cgroup left: " + d);
  return v;
}

}  // namespace hit
