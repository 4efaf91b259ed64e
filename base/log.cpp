#include "base/log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>

#include "base/error.h"
#include "base/time.h"

namespace husk::log {
namespace {
int g_fd = -1;
Format g_format = Format::text;
bool g_debug = false;

void emit(const char* level, const std::string& msg) {
  int fd = g_fd >= 0 ? g_fd : STDERR_FILENO;
  std::string line;
  // RFC3339 without sub-second digits is what runc/logrus writes
  std::string t = base::now_rfc3339();
  t = t.substr(0, 19) + "Z";
  if (g_format == Format::json)
    line = "{\"level\":\"" + std::string(level) + "\",\"msg\":\"" + json_escape(msg) +
           "\",\"time\":\"" + t + "\"}\n";
  else
    line = "time=\"" + t + "\" level=" + level + " msg=\"" + json_escape(msg) + "\"\n";
  // one write(2) per line keeps concurrent appenders from interleaving
  ssize_t ignored = ::write(fd, line.data(), line.size());
  (void)ignored;
}
}  // namespace

void init(const std::string& path, Format format, bool debug) {
  g_format = format;
  g_debug = debug;
  // Every later line would be lost, errors included: fail now, as runc does.
  if (!path.empty() && (g_fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644)) < 0)
    throw sys_error("--log: open " + path);
}

int fd() { return g_fd; }

void close() {
  if (g_fd >= 0) ::close(g_fd);
  g_fd = -1;
}

void debug(const std::string& msg) {
  if (g_debug) emit("debug", msg);
}

// Like runc's, warnings go to stderr when there is no --log.
void warn(const std::string& msg) { emit("warning", msg); }

void notice(const std::string& msg) {
  if (g_fd >= 0 || g_debug || ::isatty(STDERR_FILENO)) emit("warning", msg);
}

void error(const std::string& msg) {
  if (g_fd >= 0) emit("error", msg);
}

std::string json_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size() + 8);
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out;
}

}  // namespace husk::log
