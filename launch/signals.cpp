#include "launch/signals.h"

#include <signal.h>
#include <strings.h>

#include <cstdlib>
#include <cstring>

#include "base/error.h"

namespace husk::rt {
namespace {
struct Named {
  const char* name;
  int num;
};
constexpr Named kSignals[] = {
    {"HUP", SIGHUP},       {"INT", SIGINT},       {"QUIT", SIGQUIT},   {"ILL", SIGILL},
    {"TRAP", SIGTRAP},     {"ABRT", SIGABRT},     {"IOT", SIGIOT},     {"BUS", SIGBUS},
    {"FPE", SIGFPE},       {"KILL", SIGKILL},     {"USR1", SIGUSR1},   {"SEGV", SIGSEGV},
    {"USR2", SIGUSR2},     {"PIPE", SIGPIPE},     {"ALRM", SIGALRM},   {"TERM", SIGTERM},
    {"STKFLT", SIGSTKFLT}, {"CHLD", SIGCHLD},     {"CLD", SIGCHLD},    {"CONT", SIGCONT},
    {"STOP", SIGSTOP},     {"TSTP", SIGTSTP},     {"TTIN", SIGTTIN},   {"TTOU", SIGTTOU},
    {"URG", SIGURG},       {"XCPU", SIGXCPU},     {"XFSZ", SIGXFSZ},   {"VTALRM", SIGVTALRM},
    {"PROF", SIGPROF},     {"WINCH", SIGWINCH},   {"IO", SIGIO},       {"POLL", SIGPOLL},
    {"PWR", SIGPWR},       {"SYS", SIGSYS},
};

bool parse_int(const char* s, long& out) {
  if (!*s) return false;
  char* end;
  errno = 0;
  out = strtol(s, &end, 10);
  return errno == 0 && *end == '\0';
}
}  // namespace

int parse_signal(const std::string& input) {
  const Error bad("invalid signal \"" + input + "\"");
  long n;
  if (parse_int(input.c_str(), n)) {
    // 0 delivers nothing: `kill ID 0` asks whether the container is alive, as with runc.
    if (n < 0 || n > SIGRTMAX) throw bad;
    return static_cast<int>(n);
  }
  const char* name = input.c_str();
  if (strncasecmp(name, "SIG", 3) == 0) name += 3;
  for (const auto& s : kSignals)
    if (strcasecmp(name, s.name) == 0) return s.num;
  // RTMIN, RTMIN+n, RTMAX, RTMAX-n
  for (const char* base : {"RTMIN", "RTMAX"}) {
    if (strncasecmp(name, base, 5) != 0) continue;
    int sig = base[3] == 'I' ? SIGRTMIN : SIGRTMAX;
    const char* rest = name + 5;
    if (*rest == '\0') return sig;
    if ((*rest == '+' && sig == SIGRTMIN) || (*rest == '-' && sig == SIGRTMAX)) {
      if (!parse_int(rest + 1, n)) throw bad;
      int r = sig == SIGRTMIN ? sig + static_cast<int>(n) : sig - static_cast<int>(n);
      if (r >= SIGRTMIN && r <= SIGRTMAX) return r;
    }
    throw bad;
  }
  throw bad;
}

}  // namespace husk::rt
