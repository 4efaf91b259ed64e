// What every command gets from husk's global flags.
#pragma once

#include <string>

namespace husk::rt {

struct Context {
  std::string root;           // --root: the state store
  std::string seccomp_cache;  // outside --root, which another runtime may list
  bool systemd_cgroup = false;
  bool rootless = false;     // detect_rootless(): no privileges over the host's cgroups and ids
  std::string binary_name;   // the file name husk was called as (argv[0]): picks an operator policy
};

}  // namespace husk::rt
