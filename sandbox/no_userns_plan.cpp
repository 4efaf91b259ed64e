// The sandbox without a user namespace: its Landlock plan, its seccomp
// profile's network cut, its environment and what it says. Pure.
#include <algorithm>
#include <sys/socket.h>

#include "base/path.h"
#include "sandbox/no_userns.h"

namespace husk::rt {
namespace {

using ojson = nlohmann::ordered_json;

// The devices a command writes to. Not /dev/pts nor /dev/ptmx: without a
// devpts of its own those are the user's other terminals (their keystrokes).
// Not /dev/console: the host's.
const char* const kDevices[] = {"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"};

bool has_option(const ojson& m, const char* option) {
  if (!m.contains("options")) return false;
  return std::find(m["options"].begin(), m["options"].end(), option) != m["options"].end();
}

bool within_any(const std::string& path, const std::vector<std::string>& dirs) {
  return std::any_of(dirs.begin(), dirs.end(), [&](const std::string& d) { return base::is_within(path, d); });
}

}  // namespace

void refuse_without_userns(const SandboxOptions& o, const std::string& reason) {
  const std::string why = " (no user namespace here: " + reason + ")";
  if (o.overlay) throw Error("--overlay: needs a mount namespace" + why);
  if (!o.keep_changes.empty()) throw Error("--keep-changes: needs a mount namespace for its overlay" + why);
  // A Landlock right on the writable directory holds below it: only a mount makes a path there read-only.
  if (!o.deny_write.empty()) throw Error("--deny-write: needs a mount namespace" + why);
  // The proxy would listen on the host's loopback, where any process may
  // use it, and TCP alone is what Landlock limits: UDP would go anywhere.
  if (!o.allow_hosts.empty())
    throw Error("--allow-host: needs a network namespace, where the proxy is the only way out" + why +
                "; use --net host or --net none");
  if (o.control_fd >= 0)
    throw Error("--control-fd: its hosts go through the proxy, which needs a network namespace" + why);
}

landlock::Plan no_userns_plan(const ojson& cfg, const std::vector<std::string>& hidden, const std::string& tmpdir) {
  landlock::Plan plan;
  plan.mount_view = false;
  // Not /proc's masks: its entries come and go with the processes; Landlock
  // refuses ptrace-like access (environ, mem, fd) to processes outside anyway.
  plan.hidden = hidden;
  // What the normal sandbox replaces with a fresh mount is the host's here:
  // other users' files, the user's sockets and scratch files. Hidden. Not
  // the read-only tmpfs: hidden directories (in `hidden`) and the covers of
  // missing persistence files, which without a mount nothing protects.
  for (const auto& m : cfg["mounts"]) {
    const std::string type = m["type"], dest = m["destination"];
    if (type == "tmpfs" && has_option(m, "ro")) continue;
    if (type != "bind" && type != "proc" && type != "sysfs" &&
        std::find(plan.hidden.begin(), plan.hidden.end(), dest) == plan.hidden.end())
      plan.hidden.push_back(dest);
  }
  plan.trees.push_back({"/", false});
  for (const auto& m : cfg["mounts"]) {
    if (m["type"] != "bind") continue;
    const std::string source = m["source"];
    const bool write = !has_option(m, "rro") && !has_option(m, "ro");
    // A read-only bind outside what is hidden is covered by "/" already; a
    // writable one inside a writable tree (a pinned directory) by that tree.
    if (write && std::any_of(plan.trees.begin(), plan.trees.end(),
                             [&](const landlock::Tree& t) { return t.write && base::is_within(source, t.path); }))
      continue;
    if (write || within_any(source, plan.hidden)) plan.trees.push_back({source, write});
  }
  plan.trees.push_back({tmpdir, true});
  for (const char* dev : kDevices) plan.trees.push_back({dev, true});
  plan.scope_abstract_unix = plan.scope_signal = true;
  return plan;
}

void cut_network(ojson& seccomp, const std::string& net) {
  auto& rules = seccomp["syscalls"];
  rules.erase(std::remove_if(rules.begin(), rules.end(),
                             [](const ojson& r) { return r["names"] == ojson::array({"socket"}); }),
              rules.end());
  if (net != "host") return;
  // The families the default profile allows but AF_UNIX, compared whole
  // (see spec::default_seccomp): AF_VSOCK (40) stays out too.
  for (uint64_t family = AF_UNIX + 1; family <= 45; ++family)
    if (family != 40)
      rules.push_back({{"names", {"socket"}},
                       {"action", "SCMP_ACT_ALLOW"},
                       {"args", {{{"index", 0}, {"value", family}, {"op", "SCMP_CMP_EQ"}}}}});
}

std::vector<std::string> no_userns_notes(const landlock::Rights& r, const landlock::Plan& plan) {
  std::vector<std::string> notes;
  for (const auto& t : plan.trees) {
    if (!t.write) continue;
    std::string inside;
    for (const auto& h : r.hidden)
      if (h != t.path && base::is_within(h, t.path)) inside += (inside.empty() ? "" : ", ") + h;
    // A right on the tree's top would hold in what is hidden below it.
    if (!inside.empty())
      notes.push_back(t.path + " holds hidden paths (" + inside +
                      "): without a mount namespace nothing new can be made at its top, only below its other "
                      "entries");
  }
  return notes;
}

bool no_userns_env(ojson& cfg, const std::string& tmpdir) {
  auto& env = cfg["process"]["env"];
  std::string home;
  for (const auto& e : env) {
    const std::string kv = e;
    if (kv.rfind("HOME=", 0) == 0) home = kv.substr(5);
  }
  bool scratch = false;
  for (const auto& m : cfg["mounts"]) scratch |= m["type"] == "tmpfs" && m["destination"] == home;
  ojson out = ojson::array();
  for (const auto& e : env) {
    const std::string kv = e;
    if (kv.rfind("TMPDIR=", 0) != 0 && !(scratch && kv.rfind("HOME=", 0) == 0)) out.push_back(kv);
  }
  out.push_back("TMPDIR=" + tmpdir);
  if (scratch) out.push_back("HOME=" + tmpdir + "/home");
  env = std::move(out);
  return scratch;
}

std::string walls_line(const std::string& reason, const landlock::Rights& r, const SandboxOptions& o,
                       const std::string& tmpdir) {
  std::string s = "no user namespace here (" + reason + "): running with Landlock ABI " + std::to_string(r.abi) +
                  ", seccomp, no_new_privs; no mount, pid or network namespace: writes only to the working "
                  "directory, --rw and TMPDIR=" + tmpdir + " (not /tmp nor /dev/shm); ";
  s += o.net == "host" ? "the host's network, no Unix sockets (socketpair only)"
                       : "no network: socket(2) refused (socketpair only)";
  if (r.scoped & landlock::kScopeSignal) s += "; no signal to processes outside";
  // Landlock is the only wall on files here: what this kernel's lacks is said, not left to --debug.
  std::string lacking;
  for (const auto& l : r.lacking)
    if (l.find("TCP") == std::string::npos) lacking += (lacking.empty() ? "" : ", ") + l;
  if (!lacking.empty()) s += "; Landlock ABI " + std::to_string(r.abi) + " here: " + lacking;
  // A read-only exception inside a writable tree needs a mount: Landlock's rights hold below a directory.
  s += "; persistence files in writable directories (.git/hooks, .git/config, .bashrc, ...) are NOT protected "
       "here: do not run git or a shell there before looking";
  return s + "; what the command leaves running is ended with it";
}

}  // namespace husk::rt
