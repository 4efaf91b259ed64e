// The runc-compatible commands. The CLI parses flags into these structs;
// each function returns the process exit status.
#pragma once

#include <string>
#include <vector>

namespace husk::rt {

struct Global {
  std::string root;
  bool systemd_cgroup = false;
};

struct CreateOptions {
  std::string id;
  std::string bundle = ".";
  std::string pid_file;
  std::string console_socket;
  bool no_pivot = false;
  bool no_new_keyring = false;
  int preserve_fds = 0;
  // run only
  bool detach = false;
  bool keep = false;
};

int cmd_create(const Global& g, const CreateOptions& o);
int cmd_start(const Global& g, const std::string& id);
int cmd_run(const Global& g, const CreateOptions& o);
int cmd_state(const Global& g, const std::string& id);
int cmd_kill(const Global& g, const std::string& id, const std::string& signal, bool all);
int cmd_delete(const Global& g, const std::string& id, bool force);
int cmd_list(const Global& g, const std::string& format, bool quiet);
int cmd_spec(const std::string& bundle, bool rootless);
int cmd_features();

}  // namespace husk::rt
