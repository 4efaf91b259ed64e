// One call to CRIU, as runc makes it: husk starts `criu swrk` itself (so a
// restored process tree, made a sibling of criu, is husk's own child) and
// the bridge husk-criu (checkpoint/criu_bridge.cpp) speaks CRIU's RPC on
// that socket for it; only checkpoint and restore ever start either.
#pragma once

#include <sys/types.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "base/fd.h"

namespace husk::ckpt {

// A notification CRIU sent while it works ("post-restore", ...): its pid
// (0 when none) and the fd it carried ("orphan-pts-master": the pty master).
struct Notification {
  std::string script;
  pid_t pid = 0;
  base::Fd fd;
};

struct Reply {
  bool success = false;
  int cr_errno = 0;
  std::string cr_errmsg;
  pid_t pid = 0;  // restore: the restored init
};

class Criu {
 public:
  // Starts `criu swrk` (found in PATH) with `fds`: {fd in husk, number in
  // criu}, stdio included. Throws, saying CRIU is needed, when there is none.
  explicit Criu(const std::vector<std::pair<int, int>>& fds);
  ~Criu();
  Criu(const Criu&) = delete;
  Criu& operator=(const Criu&) = delete;

  pid_t pid() const { return pid_; }
  // Sends `type` (DUMP, SINGLE_PRE_DUMP, RESTORE) with `opts` through the bridge
  // at `bridge` and answers each notification by `on_notify` (throwing
  // refuses it: CRIU undoes the restore). Then waits for criu to exit.
  Reply call(const std::string& bridge, const std::string& type, const nlohmann::json& opts,
             const std::function<void(Notification&)>& on_notify);

 private:
  pid_t pid_ = -1;
  base::Fd sock_;  // husk's end; CRIU opens images_dir_fd through husk's /proc (SO_PEERCRED)
  base::Fd bridge_end_;
};

// Whether a criu program is in PATH.
bool criu_in_path();
// Before anything is done: CRIU (criu in PATH) and husk's bridge to it
// (`bridge`) are there, else an error saying which is missing.
void require_criu(const std::string& bridge);

// The last lines CRIU's log in `work_fd` marks as errors, for a message.
std::string log_errors(int work_fd, const std::string& log_name);

}  // namespace husk::ckpt
