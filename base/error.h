// The one error type of husk: an errno (0 when the failure is not a syscall's)
// plus a human message that already names what was being done and on what.
#pragma once

#include <cerrno>
#include <stdexcept>
#include <string>
#include <string_view>

namespace husk {

class Error : public std::runtime_error {
 public:
  explicit Error(std::string msg, int err = 0)
      : std::runtime_error(std::move(msg)), errno_(err) {}
  int err() const { return errno_; }

 private:
  int errno_;
};

// "what: strerror(errno)" for the current errno; the message should say the
// action and the path, e.g. sys_error("mount proc on /proc").
Error sys_error(const std::string& what, int err = errno);

// Prefix an error with more context, keeping its errno:
// rethrow_with("config.json", e) -> "config.json: <e>".
[[noreturn]] void rethrow_with(const std::string& context, const Error& e);

// s in double quotes, like Go's %q (quote, backslash, control bytes escaped;
// every non-ASCII byte too), so a hostile name (a container id from the command line or
// a state.json) stays one printable line in an error.
std::string quote(std::string_view s);

}  // namespace husk
