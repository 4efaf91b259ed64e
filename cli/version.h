// What `husk --version` and `husk features` say about this build.
#pragma once

#include <string>

namespace husk::rt {

// The commit husk was built from (git rev-parse --short HEAD, "-dirty" when
// the tree had changes), "unknown" when built outside git.
const char* build_commit();
// husk's version, commit, OCI spec version, build type and linking, and
// libseccomp's version, one "key: value" per line after the first (runc's style).
std::string version_text();

}  // namespace husk::rt
