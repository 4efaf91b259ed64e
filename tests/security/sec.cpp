#include "sec.h"
#include "skip.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

namespace fs = std::filesystem;
using namespace hit;

namespace sec {

namespace {
std::string g_hostile_dir, g_hostile, g_hostile_error = "not built";
}  // namespace

void skip(const std::string& reason) { husk_test::record_skip(reason); }

const std::string& hostile_binary() { return g_hostile; }
const std::string& hostile_error() { return g_hostile_error; }

void build_hostile() {
  g_hostile_dir = make_tempdir("husk-sec-hostile-");
  std::string out = g_hostile_dir + "/hostile";
  auto r = run({"cc", "-static", "-O2", "-o", out, HUSK_SEC_HOSTILE_SRC}, SpawnOpts{.timeout = std::chrono::seconds(120)});
  if (r.ok() && fs::exists(out)) {
    g_hostile = out;
  } else {
    g_hostile_error = "cannot build the static hostile helper with `cc -static`: " + trim(r.err);
  }
}

void remove_hostile() {
  if (!g_hostile_dir.empty()) remove_tree(g_hostile_dir);
}

void install_hostile(Container& c) {
  REQUIRE_FALSE(g_hostile.empty());
  fs::copy_file(g_hostile, c.rootfs + "/hostile", fs::copy_options::overwrite_existing);
  ::chmod((c.rootfs + "/hostile").c_str(), 0755);
}

std::string sha256(const std::string& path) {
  auto r = run({"sha256sum", path});
  if (!r.ok()) return "unreadable: " + r.err;
  return r.out.substr(0, r.out.find(' '));
}

std::string file_state(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) return "absent";
  std::ostringstream o;
  o << std::oct << st.st_mode << std::dec << " " << st.st_uid << ":" << st.st_gid << " size " << st.st_size
    << " mtime " << st.st_mtim.tv_sec << "." << st.st_mtim.tv_nsec << " ino " << st.st_ino;
  if (S_ISREG(st.st_mode)) o << " sha256 " << sha256(path);
  if (S_ISLNK(st.st_mode)) o << " -> " << fs::read_symlink(path).string();
  return o.str();
}

std::string tree_state(const std::string& dir) {
  std::vector<std::string> v;
  v.push_back(". " + file_state(dir));
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, fs::directory_options::none, ec);
       it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    v.push_back(it->path().string() + " " + file_state(it->path()));
  }
  std::sort(v.begin(), v.end());
  std::string s;
  for (auto& l : v) s += l + "\n";
  return s;
}

RuntimeCopy::RuntimeCopy() {
  dir = make_tempdir("husk-sec-rt-");
  path = dir + "/" + fs::path(runtime()).filename().string();
  fs::copy_file(runtime(), path);
  ::chmod(path.c_str(), 0755);
  hash = sha256(path);
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) {
    dev = st.st_dev;
    ino = st.st_ino;
  }
}

RuntimeCopy::~RuntimeCopy() {
  try {
    remove_tree(dir);
  } catch (...) {
  }
}

Result rt_with(const std::string& rt, const Container& c, const std::vector<std::string>& args,
               const SpawnOpts& opts) {
  std::vector<std::string> argv{rt, "--root", c.root};
  argv.insert(argv.end(), args.begin(), args.end());
  return hit::run(argv, opts);
}

void add_caps(json& cfg, const std::vector<std::string>& caps) {
  auto& c = cfg["process"]["capabilities"];
  for (const char* set : {"bounding", "effective", "permitted"})
    for (auto& n : caps) {
      auto& arr = c[set];
      if (std::find(arr.begin(), arr.end(), n) == arr.end()) arr.push_back(n);
    }
}

void drop_mount(json& cfg, const std::string& destination) {
  auto& m = cfg["mounts"];
  for (auto it = m.begin(); it != m.end();)
    if ((*it).value("destination", "") == destination)
      it = m.erase(it);
    else
      ++it;
}

void join_namespace(json& cfg, const std::string& type, const std::string& path) {
  auto& ns = cfg["linux"]["namespaces"];
  for (auto& n : ns)
    if (n.value("type", "") == type) {
      n["path"] = path;
      return;
    }
  ns.push_back({{"type", type}, {"path", path}});
}

void remove_namespace(json& cfg, const std::string& type) {
  auto& ns = cfg["linux"]["namespaces"];
  for (auto it = ns.begin(); it != ns.end();)
    if ((*it).value("type", "") == type)
      it = ns.erase(it);
    else
      ++it;
}

std::vector<FdInfo> process_fds(int pid) {
  std::vector<FdInfo> v;
  std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  std::error_code ec;
  for (auto& e : fs::directory_iterator(dir, ec)) {
    FdInfo f;
    f.fd = std::stoi(e.path().filename().string());
    std::error_code ec2;
    f.target = fs::read_symlink(e.path(), ec2).string();
    struct stat st;
    if (::stat(e.path().c_str(), &st) == 0) {
      f.stat_ok = true;
      f.mode = st.st_mode;
      f.dev = st.st_dev;
      f.rdev = st.st_rdev;
      f.ino = st.st_ino;
    }
    v.push_back(f);
  }
  std::sort(v.begin(), v.end(), [](auto& a, auto& b) { return a.fd < b.fd; });
  return v;
}

int find_in_container(const Container& c, const std::string& comm) {
  std::error_code ec;
  for (auto& e : fs::directory_iterator("/proc", ec)) {
    auto name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::error_code ec2;
    auto root = fs::read_symlink(e.path() / "root", ec2).string();
    if (ec2 || root != c.rootfs) continue;
    std::ifstream f(e.path() / "comm");
    std::string cm;
    std::getline(f, cm);
    if (cm == comm) return std::stoi(name);
  }
  return -1;
}

}  // namespace sec
