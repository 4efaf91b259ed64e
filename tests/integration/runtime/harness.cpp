#include "harness.h"

#include "base/fdpass.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <fcntl.h>
#include <linux/magic.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace hit {

namespace {

[[noreturn]] void fail(const std::string& what) {
  throw std::runtime_error(what + ": " + std::strerror(errno));
}

std::string g_template;

}  // namespace

Capture::Capture() : fd_(memfd_create("hit-capture", MFD_CLOEXEC)) {
  if (!fd_) fail("memfd_create");
}

std::string Capture::read() const {
  // pread: the file offset is shared with the writers.
  std::string s;
  char buf[65536];
  off_t off = 0;
  for (;;) {
    ssize_t n = ::pread(fd_.get(), buf, sizeof buf, off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    s.append(buf, static_cast<size_t>(n));
    off += n;
  }
  return s;
}

Child::Child(const std::vector<std::string>& argv, const SpawnOpts& opts)
    : timeout_(opts.timeout),
      out_(opts.out ? opts.out : std::make_shared<Capture>()),
      err_(std::make_shared<Capture>()) {
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);

  Fd in;
  if (opts.stdin_data.empty()) {
    in = Fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  } else {
    in = Fd(memfd_create("hit-stdin", MFD_CLOEXEC));
    if (in && ::write(in.get(), opts.stdin_data.data(), opts.stdin_data.size()) !=
                  static_cast<ssize_t>(opts.stdin_data.size()))
      fail("write stdin memfd");
    ::lseek(in.get(), 0, SEEK_SET);
  }
  if (!in) fail("stdin");

  // Sources and targets of every fd the child gets, fixed before fork so
  // the child only makes async-signal-safe calls.
  std::vector<std::pair<int, int>> fds = {{in.get(), 0}, {out_->fd(), 1}, {err_->fd(), 2}};
  for (auto& p : opts.extra_fds) fds.push_back(p);

  pid_ = ::fork();
  if (pid_ < 0) fail("fork");
  if (pid_ == 0) {
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    signal(SIGPIPE, SIG_DFL);
    int tmp[64];
    size_t n = fds.size() < 64 ? fds.size() : 64;
    for (size_t i = 0; i < n; ++i) {
      tmp[i] = fcntl(fds[i].first, F_DUPFD_CLOEXEC, 1000);
      if (tmp[i] < 0) _exit(126);
    }
    // Every other fd, including non-CLOEXEC ones of this process, stays behind.
    if (syscall(SYS_close_range, 3U, ~0U, 4U /* CLOSE_RANGE_CLOEXEC */) != 0) _exit(126);
    for (size_t i = 0; i < n; ++i)
      if (dup2(tmp[i], fds[i].second) < 0) _exit(126);
    execvp(cargv[0], cargv.data());
    _exit(127);
  }
  pidfd_ = Fd(static_cast<int>(syscall(SYS_pidfd_open, pid_, 0)));
  if (!pidfd_) fail("pidfd_open");
}

Child::~Child() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

Result Child::wait() {
  Result r;
  pollfd p{pidfd_.get(), POLLIN, 0};
  int n;
  do {
    n = ::poll(&p, 1, static_cast<int>(timeout_.count()));
  } while (n < 0 && errno == EINTR);
  if (n == 0) {
    r.timed_out = true;
    ::kill(pid_, SIGKILL);
  }
  int st = 0;
  while (::waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  if (WIFEXITED(st)) {
    r.code = WEXITSTATUS(st);
  } else if (WIFSIGNALED(st)) {
    r.signaled = true;
    r.code = 128 + WTERMSIG(st);
  }
  r.out_cap = out_;
  r.err_cap = err_;
  r.out = out_->read();
  r.err = err_->read();
  return r;
}

Result run(const std::vector<std::string>& argv, const SpawnOpts& opts) {
  return Child(argv, opts).wait();
}

const std::string& runtime() {
  static const std::string rt = [] {
    const char* e = std::getenv("HUSK_RUNTIME");
    return std::string(e && *e ? e : HUSK_IT_DEFAULT_RUNTIME);
  }();
  return rt;
}

bool runtime_is_runc() { return fs::path(runtime()).filename() == "runc"; }

std::string make_tempdir(const std::string& prefix) {
  std::string t = "/tmp/" + prefix + "XXXXXX";
  if (!::mkdtemp(t.data())) fail("mkdtemp " + t);
  return t;
}

TempDir::~TempDir() {
  try {
    remove_tree(path);
  } catch (...) {
  }
}

void remove_tree(const std::string& path) {
  if (path.size() < 6 || path.rfind("/tmp/", 0) != 0) throw std::logic_error("refusing to remove " + path);
  run({"rm", "-rf", "--one-file-system", path});
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot read " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void write_file(const std::string& path, const std::string& data, int mode) {
  {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    if (!f) throw std::runtime_error("cannot write " + path);
    f << data;
  }
  ::chmod(path.c_str(), static_cast<mode_t>(mode));
}

std::string trim(std::string s) {
  auto ws = [](char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; };
  while (!s.empty() && ws(s.back())) s.pop_back();
  size_t i = 0;
  while (i < s.size() && ws(s[i])) ++i;
  return s.substr(i);
}

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> v;
  std::stringstream ss(s);
  std::string l;
  while (std::getline(ss, l)) v.push_back(l);
  return v;
}

bool contains(const std::string& hay, const std::string& needle) {
  return hay.find(needle) != std::string::npos;
}

std::string unique_id(const std::string& tag) {
  static std::atomic<int> n{0};
  return "hit-" + std::to_string(::getpid()) + "-" + std::to_string(n++) + "-" + tag;
}

void build_template() {
  g_template = make_tempdir("husk-it-tpl-");
  auto r = run({HUSK_IT_MAKE_BUNDLE, g_template + "/b", runtime()});
  if (!r.ok())
    throw std::runtime_error("scripts/make-bundle failed (" + std::to_string(r.code) + "): " + r.err);
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

static std::string unescape_mount(const std::string& s) {
  std::string o;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      o += static_cast<char>(std::stoi(s.substr(i + 1, 3), nullptr, 8));
      i += 3;
    } else {
      o += s[i];
    }
  }
  return o;
}

std::vector<MountEntry> parse_mountinfo(const std::string& text) {
  std::vector<MountEntry> v;
  for (auto& l : lines(text)) {
    std::stringstream ss(l);
    std::vector<std::string> f;
    std::string w;
    while (ss >> w) f.push_back(w);
    size_t dash = 0;
    for (size_t i = 6; i < f.size(); ++i)
      if (f[i] == "-") {
        dash = i;
        break;
      }
    if (dash == 0 || dash + 2 >= f.size()) continue;
    MountEntry m;
    m.root = unescape_mount(f[3]);
    m.mount_point = unescape_mount(f[4]);
    m.mount_opts = f[5];
    m.fstype = f[dash + 1];
    m.source = dash + 2 < f.size() ? f[dash + 2] : "";
    m.super_opts = dash + 3 < f.size() ? f[dash + 3] : "";
    v.push_back(m);
  }
  return v;
}

bool MountEntry::has_opt(const std::string& opt) const {
  for (auto* opts : {&mount_opts, &super_opts}) {
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
  auto r = hit::run({"cp", private_rootfs ? "-a" : "-al", g_template + "/b/rootfs", rootfs});
  if (!r.ok()) throw std::runtime_error("cp rootfs: " + r.err);
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
  auto end = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto r = rt({"state", id});
    if (r.ok() && json::parse(r.out).value("status", "") == want) return true;
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(20ms);
  }
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
  auto end = std::chrono::steady_clock::now() + 5s;
  while (std::chrono::steady_clock::now() < end) {
    std::ifstream f("/proc/" + std::to_string(p) + "/comm");
    std::string comm;
    std::getline(f, comm);
    if (comm == want) return p;
    std::this_thread::sleep_for(5ms);
  }
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
    auto mounts = parse_mountinfo(read_file("/proc/self/mountinfo"));
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

static bool zombie_or_gone(const fs::path& procdir) {
  try {
    auto stat = read_file(procdir / "stat");
    auto rp = stat.rfind(')');
    return rp == std::string::npos || rp + 2 >= stat.size() || stat[rp + 2] == 'Z';
  } catch (...) {
    return true;
  }
}

std::vector<int> cgroup_pids(const std::string& id) {
  std::vector<int> v;
  std::error_code ec;
  for (auto& e : fs::directory_iterator("/proc", ec)) {
    auto name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos || zombie_or_gone(e.path())) continue;
    try {
      if (contains(read_file(e.path() / "cgroup"), "/husk-test/" + id + "\n")) v.push_back(std::stoi(name));
    } catch (...) {
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
  for (auto& e : fs::directory_iterator("/proc", ec)) {
    auto name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos || zombie_or_gone(e.path())) continue;
    std::error_code ec2;
    auto r = fs::read_symlink(e.path() / "root", ec2).string();
    if (!ec2 && r.rfind(c.bundle, 0) == 0) v.push_back("process " + name + " with root " + r);
  }
  for (int p : cgroup_pids(c.id)) v.push_back("process " + std::to_string(p) + " in cgroup /husk-test/" + c.id);
  for (auto& d : cgroup_dirs(c.id)) v.push_back("cgroup left: " + d);
  return v;
}

bool alive(int pid) {
  try {
    auto st = read_file("/proc/" + std::to_string(pid) + "/stat");
    auto rp = st.rfind(')');
    return rp != std::string::npos && rp + 2 < st.size() && st[rp + 2] != 'Z' && st[rp + 2] != 'X';
  } catch (...) {
    return false;
  }
}

Fd listen_unix(const std::string& path) {
  Fd s(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  REQUIRE(s);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  REQUIRE(path.size() < sizeof a.sun_path);
  std::strcpy(a.sun_path, path.c_str());
  REQUIRE(::bind(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  REQUIRE(::listen(s.get(), 1) == 0);
  return s;
}

Fd receive_fd(int listener, int timeout_ms) {
  pollfd p{listener, POLLIN, 0};
  if (::poll(&p, 1, timeout_ms) <= 0) return Fd();
  Fd conn(::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC));
  if (!conn) return Fd();
  pollfd q{conn.get(), POLLIN, 0};
  if (::poll(&q, 1, timeout_ms) <= 0) return Fd();
  char data[4096];
  int fd;
  if (husk::base::recv_with_fd(conn.get(), data, sizeof data, &fd) < 0) return Fd();
  return Fd(fd);
}

}  // namespace hit
