// Keeping the husk binary out of reach of the containers it starts
// (CVE-2019-5736). husk's init and exec children are clones of husk, so
// until their final execve /proc/<pid>/exe is husk's own binary: a container
// process that opens it (a /proc/*/exe scanner, a #!/proc/self/exe script, a
// reopened fd) could write the host's copy once husk exits. Commands that
// start container processes therefore run from a copy that cannot be written.
#pragma once

#include <string>

namespace husk::rt {

// Return when /proc/self/exe cannot be opened for writing (it lives on a
// read-only mount, e.g. an installed read-only bind of the binary, or is a
// sealed memfd), or only root can write it and we run without root or any
// capability (rootless: an installed husk needs no copy); otherwise re-exec the same argv from a private read-only
// overlayfs view of the binary's directory (no copy, shared page cache), or,
// where overlayfs cannot be mounted, from a sealed memfd copy. Throws when
// neither works. `scratch_dir` (made 0700 if missing) holds the overlay's
// empty lower layer. Call before anything else is opened or started.
void ensure_protected_binary(char** argv, const std::string& scratch_dir);

// The path husk was started from, also in the protected copy ("" unknown).
std::string own_binary_path();
// A helper program shipped with husk: next to it (a build tree), else in
// <dir>/../libexec/husk (an install). The first when neither is there.
std::string companion_path(const std::string& name);

}  // namespace husk::rt
