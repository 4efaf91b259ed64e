// What every command gets from husk's global flags.
#pragma once

#include <functional>
#include <memory>
#include <string>

namespace husk::rt {

class Launcher;
struct InitRequest;

struct Context {
  std::string root;           // --root: the state store
  std::string seccomp_cache;  // outside --root, which another runtime may list
  bool systemd_cgroup = false;
  bool rootless = false;     // detect_rootless(): no privileges over the host's cgroups and ids
  std::string binary_name;   // the file name husk was called as (argv[0]): picks an operator policy
  // How create starts the init: InitLauncher unless set. The lifecycle's
  // unit tests set a fake that needs no root.
  std::function<std::unique_ptr<Launcher>(const InitRequest&)> init_launcher;
};

}  // namespace husk::rt
