// A made-up host for sandbox_config's tests: ann (uid 1000) working in
// ~/proj, the top-level directories `root_dirs`, and only the paths
// `existing` there (each its own real path).
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "sandbox/sandbox.h"

namespace husk::rt::test {

inline SandboxHost fake_host(std::vector<std::string> root_dirs, std::set<std::string> existing) {
  SandboxHost h;
  h.uid = h.gid = 1000;
  h.user_name = "ann";
  h.home = "/home/ann";
  h.cwd = "/home/ann/proj";
  h.root_dirs = std::move(root_dirs);
  h.homes = {"/home/ann"};
  h.real = [existing = std::move(existing)](const std::string& p) -> std::optional<std::string> {
    if (!existing.count(p)) return std::nullopt;
    return p;
  };
  return h;
}

// `husk sandbox -- make`.
inline SandboxOptions make_command() {
  SandboxOptions o;
  o.args = {"make"};
  return o;
}

}  // namespace husk::rt::test
