// --control-fd: the caller's requests while the sandbox runs.
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>

#include "base/error.h"
#include "base/printable.h"
#include "sandbox/proxy.h"
#include "sandbox/report.h"

namespace husk::rt {

Control::Control(int fd, Proxy& proxy, const Report& report)
    : fd_(::fcntl(fd, F_DUPFD_CLOEXEC, 3)), proxy_(proxy), report_(report) {
  // Our own copy: the caller's number may be shared with --report-fd (one socket).
  if (!fd_) throw sys_error("--control-fd " + std::to_string(fd) + ": dup");
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) throw sys_error("--control-fd: pipe");
  stop_read_ = base::Fd(p[0]);
  stop_write_ = base::Fd(p[1]);
  thread_ = std::thread([this] { serve(); });
}

Control::~Control() {
  char x = 1;
  if (::write(stop_write_.get(), &x, 1) < 0) {
  }
  thread_.join();
}

// Checked as a new --allow-host would be, then in force before "accepted" is written.
void Control::answer(const std::string& line) {
  report::ojson id;
  std::string host;
  try {
    report::ControlRequest r = report::parse_control(line);
    id = r.id;
    host = r.text;
    proxy_.allow(r.host);
    report_.emit("control", report::control_answer(id, host, true, ""));
  } catch (const Error& e) {
    // The harness waits for the answer to its id, refused lines too.
    if (id.is_null()) id = report::control_id(line);
    report_.emit("control", report::control_answer(id, host, false, e.what()));
    std::cerr << "husk sandbox: --control-fd: refused: " << base::printable(e.what()) << std::endl;
  }
}

void Control::serve() {
  std::string pending;
  bool overlong = false;  // the rest of a line too long is skipped up to its newline
  char buf[4096];
  for (;;) {
    pollfd fds[2] = {{fd_.get(), POLLIN, 0}, {stop_read_.get(), POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents) return;
    ssize_t n = ::read(fd_.get(), buf, sizeof buf);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) {
      const std::string why = n == 0 ? "end of file" : std::string("read: ") + std::strerror(errno);
      if (!pending.empty() && !overlong) answer(pending);
      report_.emit("control-closed", {{"reason", why}});
      return;
    }
    pending.append(buf, static_cast<size_t>(n));
    size_t eol;
    while ((eol = pending.find('\n')) != std::string::npos) {
      if (!overlong) answer(pending.substr(0, eol));
      overlong = false;
      pending.erase(0, eol + 1);
    }
    if (pending.size() > report::kControlLineMax && !overlong) {
      answer(pending);  // refused for its length
      overlong = true;
    }
    if (overlong) pending.clear();
  }
}

}  // namespace husk::rt
