#include "checkpoint/plan.h"

#include <sched.h>

#include <cstdlib>

#include "base/error.h"

namespace husk::ckpt {

namespace {

const char* criu_cg_mode(const std::string& mode) {
  if (mode == "soft") return "SOFT";
  if (mode == "full") return "FULL";
  if (mode == "strict") return "STRICT";
  if (mode == "ignore") return "IGNORE";
  return nullptr;
}

// What both requests carry from the shared flags.
json common_opts(const CriuFlags& f, int images_fd, int work_fd, const std::string& log) {
  json o = {{"images_dir_fd", images_fd}, {"log_level", 4}, {"log_file", log}, {"manage_cgroups", true}};
  if (work_fd >= 0) o["work_dir_fd"] = work_fd;
  if (!f.manage_cgroups_mode.empty()) o["manage_cgroups_mode"] = criu_cg_mode(f.manage_cgroups_mode);
  if (!f.empty_ns.empty()) o["empty_ns"] = static_cast<uint32_t>(CLONE_NEWNET);
  for (auto [flag, name] : {std::pair{f.tcp_established, "tcp_established"}, {f.ext_unix_sk, "ext_unix_sk"},
                            {f.shell_job, "shell_job"}, {f.file_locks, "file_locks"},
                            {f.auto_dedup, "auto_dedup"}, {f.lazy_pages, "lazy_pages"}})
    if (flag) o[name] = true;
  return o;
}

const spec::Namespace* joined_netns(const spec::Spec& spec) {
  const spec::Namespace* ns = spec.linux_ ? spec.linux_->find_namespace("network") : nullptr;
  return ns && !ns->path.empty() ? ns : nullptr;
}

// stdio restore hands in from the caller: a pipe, a file or terminal from outside.
bool inherited(const std::string& descriptor) {
  for (const char* prefix : {"pipe:", "file[", "tty["})
    if (descriptor.rfind(prefix, 0) == 0) return true;
  return false;
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : " ") + s;
  return out;
}

}  // namespace

void check_flags(const CriuFlags& f) {
  if (!f.manage_cgroups_mode.empty() && !criu_cg_mode(f.manage_cgroups_mode))
    throw Error("--manage-cgroups-mode " + f.manage_cgroups_mode + ": must be soft, full, strict or ignore");
  for (const auto& ns : f.empty_ns)
    if (ns != "network") throw Error("--empty-ns " + ns + ": only the network namespace can be left empty");
}

std::string log_name(const std::string& type) {
  if (type == "RESTORE") return "restore.log";
  if (type == "SINGLE_PRE_DUMP") return "predump.log";
  return "dump.log";
}

std::string dump_request(const CheckpointFlags& f) { return f.pre_dump ? "SINGLE_PRE_DUMP" : "DUMP"; }

json dump_opts(const spec::Spec& spec, const CheckpointFlags& f, const DumpFacts& facts) {
  json o = common_opts(f.criu, facts.images_fd, facts.work_fd, log_name(dump_request(f)));
  o["pid"] = facts.pid;
  o["root"] = facts.rootfs;
  if (f.leave_running) o["leave_running"] = true;
  // Memory changes are tracked from a pre-dump on, so that the next dump
  // (given it as its parent) writes only the pages changed since.
  if (f.pre_dump || !f.parent_path.empty()) o["track_mem"] = true;
  if (!f.parent_path.empty()) o["parent_img"] = f.parent_path;
  // The pty master is the console receiver's, outside: CRIU dumps the
  // slave as an orphan, and restore sends a new master out.
  if (spec.process && spec.process->terminal) o["orphan_pts_master"] = true;
  if (!f.page_server.empty()) {
    const size_t colon = f.page_server.rfind(':');
    if (colon == std::string::npos || colon == 0)
      throw Error("--page-server " + f.page_server + ": ADDRESS:PORT expected");
    const std::string port = f.page_server.substr(colon + 1);
    char* end = nullptr;
    const long n = std::strtol(port.c_str(), &end, 10);
    if (port.empty() || *end || n < 1 || n > 65535) throw Error("--page-server " + f.page_server + ": bad port");
    o["ps"] = {{"address", f.page_server.substr(0, colon)}, {"port", static_cast<int>(n)}};
  }
  if (facts.status_fd >= 0) o["status_fd"] = facts.status_fd;
  if (!facts.freeze_cgroup.empty()) o["freeze_cgroup"] = facts.freeze_cgroup;
  // Binds come from outside the container's mount namespace: each is
  // recorded under its destination, to be bound again from the bundle's
  // source at restore. Masked files are binds of the host's /dev/null.
  json ext = json::array();
  for (const auto& m : spec.mounts)
    if (spec::is_bind(m)) ext.push_back({{"key", m.destination}, {"val", m.destination}});
  for (const auto& path : facts.masked_files) ext.push_back({{"key", path}, {"val", path}});
  if (!ext.empty()) o["ext_mnt"] = ext;
  json external(facts.external_files);
  if (joined_netns(spec)) {
    if (facts.netns_inode == 0) throw Error("linux.namespaces: the joined network namespace's inode is unknown");
    external.push_back("net[" + std::to_string(facts.netns_inode) + "]:extRootNetNS");
  }
  if (!external.empty()) o["external"] = external;
  return o;
}

json restore_opts(const spec::Spec& spec, const RestoreFlags& f, const RestoreFacts& facts) {
  json o = common_opts(f.criu, facts.images_fd, facts.work_fd, log_name("RESTORE"));
  o["root"] = facts.rootfs;
  o["rst_sibling"] = true;
  o["notify_scripts"] = true;
  json ext = json::array();
  for (const auto& m : spec.mounts)
    if (spec::is_bind(m)) ext.push_back({{"key", m.destination}, {"val", m.source}});
  for (const auto& path : facts.masked_files) ext.push_back({{"key", path}, {"val", "/dev/null"}});
  if (!ext.empty()) o["ext_mnt"] = ext;
  // stdio that was a pipe (a shim's) or a file from outside is the caller's stdio now.
  json inherit = json::array();
  for (size_t i = 0; i < facts.descriptors.size() && i < 3; ++i)
    if (inherited(facts.descriptors[i]))
      inherit.push_back({{"key", facts.descriptors[i]}, {"fd", static_cast<int>(i)}});
  if (joined_netns(spec)) {
    if (facts.netns_fd < 0) throw Error("linux.namespaces: the network namespace to join is not open");
    inherit.push_back({{"key", "extRootNetNS"}, {"fd", facts.netns_fd}});
  }
  if (!inherit.empty()) o["inherit_fd"] = inherit;
  json roots = json::array();
  for (const auto& [ctrl, path] : facts.cgroups) roots.push_back({{"ctrl", ctrl}, {"path", path}});
  if (!roots.empty()) o["cg_root"] = roots;
  if (spec.process && spec.process->terminal) o["orphan_pts_master"] = true;
  if (!f.lsm_profile.empty()) o["lsm_profile"] = f.lsm_profile;
  if (!f.lsm_mount_context.empty()) o["lsm_mount_context"] = f.lsm_mount_context;
  return o;
}

std::string config_mismatch(const spec::Spec& image, const spec::Spec& bundle) {
  const spec::Process empty;
  const spec::Process& a = image.process ? *image.process : empty;
  const spec::Process& b = bundle.process ? *bundle.process : empty;
  if (a.args != b.args) return "process.args (" + join(a.args) + " in the image, " + join(b.args) + " here)";
  if (a.cwd != b.cwd) return "process.cwd (" + a.cwd + " in the image, " + b.cwd + " here)";
  if (a.user.uid != b.user.uid || a.user.gid != b.user.gid) return "process.user";
  if (a.terminal != b.terminal) return "process.terminal";
  if (image.mounts.size() != bundle.mounts.size())
    return "mounts (" + std::to_string(image.mounts.size()) + " in the image, " +
           std::to_string(bundle.mounts.size()) + " here)";
  // In any order: CRIU restores the mounts from its image, binds are
  // matched by destination (podman's restore --import --name lists them anew).
  std::multiset<std::string> mx, my;
  for (const auto& m : image.mounts) mx.insert(m.destination + " " + m.type + (spec::is_bind(m) ? " bind" : ""));
  for (const auto& m : bundle.mounts) my.insert(m.destination + " " + m.type + (spec::is_bind(m) ? " bind" : ""));
  for (auto x = mx.begin(), y = my.begin(); x != mx.end(); ++x, ++y)
    if (*x != *y) return "mounts (" + *x + " in the image, " + *y + " here)";
  const std::vector<spec::Namespace> none;
  const auto& nx = image.linux_ ? image.linux_->namespaces : none;
  const auto& ny = bundle.linux_ ? bundle.linux_->namespaces : none;
  std::set<std::string> tx, ty;
  for (const auto& n : nx) tx.insert(n.type + (n.path.empty() ? "" : " (joined)"));
  for (const auto& n : ny) ty.insert(n.type + (n.path.empty() ? "" : " (joined)"));
  if (tx != ty) return "linux.namespaces";
  if (image.root && bundle.root && image.root->readonly != bundle.root->readonly) return "root.readonly";
  return "";
}

}  // namespace husk::ckpt
