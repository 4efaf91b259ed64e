// husk sandbox --report: the events a harness reads, one JSON object per
// line, and the lines --control-fd reads. Pure: an event in, its line out;
// a line in, its request out (report.cpp writes, control.cpp reads).
#pragma once

#include <ctime>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sandbox/proxy.h"

namespace husk::rt::report {

using ojson = nlohmann::ordered_json;

// {"type": TYPE, "time": RFC 3339 UTC in ms, "sandbox": ID, FIELDS...} and a
// newline. Bytes that are not UTF-8 (a path's) become U+FFFD, control
// characters are escaped: always one line, never an exception.
std::string line(const std::string& type, const timespec& when, const std::string& sandbox, const ojson& fields);

// "refused": a connection the proxy did not make (ProxyRefusal).
ojson refused(const ProxyRefusal& r);

// What the sandbox decided at start ("start").
struct Start {
  std::vector<std::string> command;
  std::string cwd;
  uint32_t uid = 0, gid = 0;
  bool user_namespace = true;
  std::string net;
  std::vector<std::string> allowed_hosts;
  bool control = false;  // --control-fd: hosts may be added while it runs
  // "cgroup", "systemd-scope", "rlimit" or "none"; each limit as asked.
  std::string limits;
  uint64_t pids = 0;
  std::string memory, cpus;
  double timeout = 0;
  int landlock_abi = 0;
  std::vector<std::string> hidden, protected_paths, writable, notes;
};
ojson start(const Start& s);

// "limit": `which` ("pids", "memory" or "timeout") was reached; `count`:
// the cgroup's count of it (forks refused, processes OOM-killed).
ojson limit(const std::string& which, uint64_t count, const std::string& detail);

// "limit" for --timeout S.
ojson timeout(double seconds);

// "exit": husk's exit status, the signal it stands for (128 + N), the run's length.
ojson exit(int status, double seconds);

// The count after `key` in a cgroup's flat-keyed file (memory.events,
// memory.oom_control, pids.events: "KEY N" lines); 0 when absent.
uint64_t event_count(const std::string& text, const std::string& key);

// One line of --control-fd: {"allow-host": "NAME[:PORT]"} with an optional
// "id" (any JSON value, echoed in the answer). Throws Error with the reason.
struct ControlRequest {
  AllowedHost host;
  std::string text;  // as given
  ojson id;          // null when none
};
constexpr size_t kControlLineMax = 4096;
ControlRequest parse_control(const std::string& line);
// The "id" of a line that parse_control refused, for its answer (null when none).
ojson control_id(const std::string& line);

// "control": the answer to one line. `request` null when it was no JSON.
ojson control_answer(const ojson& id, const std::string& allow_host, bool accepted, const std::string& reason);

}  // namespace husk::rt::report
