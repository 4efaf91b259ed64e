// Runtime log: --log FILE (appended, shared by every call for a container)
// in --log-format text|json, the same lines runc writes.
#pragma once

#include <string>

namespace husk::log {

enum class Format { text, json };

// Opens the log file in append mode (created if missing); throws an Error
// naming it when it cannot be opened. Without a file,
// debug lines and warnings go to stderr and errors are only printed by the CLI.
void init(const std::string& path, Format format, bool debug);

// The log file's fd (-1 without one), for children that keep it; close()
// drops it, e.g. before the init waits for start reachable from the container.
int fd();
void close();

void debug(const std::string& msg);
void warn(const std::string& msg);
// A warning about husk's circumstances, not the container's fault (no cgroup
// for a rootless container): into --log, on stderr only with --debug or when
// stderr is a terminal. An engine that passes no --log (rootless podman, for
// runtimes outside runtime_supports_json) hands husk's stderr to the
// container's, where it would show in every `podman logs`.
void notice(const std::string& msg);
void error(const std::string& msg);

// JSON string escaping (also used by callers that print JSON by hand).
std::string json_escape(const std::string& s);

}  // namespace husk::log
