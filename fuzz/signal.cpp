// The SIGNAL argument of `husk kill`: rt::parse_signal. An accepted signal
// must be one kill(2) takes (0: the liveness probe).
#include <signal.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/error.h"
#include "launch/signals.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    int sig = husk::rt::parse_signal(std::string(reinterpret_cast<const char*>(data), size));
    if (sig < 0 || sig > SIGRTMAX) __builtin_trap();
  } catch (const husk::Error&) {
    // An unknown signal; any other exception escapes and is a finding.
  }
  return 0;
}
