// What the husk-it-namespaces cases share: a child in new namespaces that
// builds a container rootfs and reports what it found, and small probes.
//
// main.cpp first moves the test process into a private mount namespace of its
// own and makes its temporary directory (g_tmp) a *shared* mount there; each
// scenario then forks a child that unshares again (so its copy of that
// directory is a peer of ours) and builds a container rootfs below it. The
// child checks the result from inside and reports failures over a pipe; it
// also reads our mountinfo to prove none of its mounts propagated back.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "namespaces/namespaces.h"

namespace nstest {

namespace fs = std::filesystem;

extern std::string g_tmp;  // shared mount (in our namespace) holding all test rootfs dirs

// The file's text; "" when it does not exist (other failures throw).
std::string slurp(const std::string& path);

// Collects failed expectations inside the child.
struct Report {
  std::string text;
  void fail(const std::string& msg) { text += "FAIL: " + msg + "\n"; }
  void expect(bool ok, const std::string& msg) {
    if (!ok) fail(msg);
  }
};

struct Outcome {
  int status = -1;
  std::string report;
};

// Run `body` in a child in new namespaces; its Report (and any exception)
// comes back. `parent`, when given, runs in the parent with the child's pid
// before the report is read (for a host side the child waits for).
Outcome in_child(int unshare_flags, const std::function<void(Report&)>& body,
                 const std::function<void(pid_t)>& parent = {});

void expect_ok(const Outcome& o);

// `f` must throw a husk::Error whose text contains `needle`; `accepted` is
// reported when it does not throw.
void expect_error(Report& r, const std::function<void()>& f, const std::string& needle,
                  const std::string& accepted);

// A fresh rootfs with a static busybox, below the shared temp dir.
std::string make_rootfs(const std::string& name);

husk::ns::RootfsOptions options_for(const std::string& rootfs);

husk::spec::Mount mnt(std::string dest, std::string type, std::string source, std::vector<std::string> opts);

uint32_t mode_of(const std::string& p);
bool is_ro(const std::string& p);
long fs_type(const std::string& p);
int write_errno(const std::string& p);  // errno of creating/opening `p` for writing, 0 when it works
void write_file(const std::string& path, const std::string& text);

// Nothing of the child's appeared in our (the "host's") mount table.
void expect_no_leak(Report& r, pid_t host_pid, const std::string& under);

}  // namespace nstest
