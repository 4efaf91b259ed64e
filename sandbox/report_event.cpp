#include "sandbox/report_event.h"

#include <signal.h>

#include <cstdio>
#include <cstring>
#include <sstream>

#include "base/error.h"
#include "sandbox/internal.h"

namespace husk::rt::report {

std::string line(const std::string& type, const timespec& when, const std::string& sandbox, const ojson& fields) {
  tm t{};
  gmtime_r(&when.tv_sec, &t);
  char stamp[40];
  size_t n = std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &t);
  std::snprintf(stamp + n, sizeof stamp - n, ".%03ldZ", when.tv_nsec / 1000000);
  ojson e = {{"type", type}, {"time", stamp}, {"sandbox", sandbox}};
  for (const auto& [k, v] : fields.items()) e[k] = v;
  return e.dump(-1, ' ', false, ojson::error_handler_t::replace) + "\n";
}

ojson refused(const ProxyRefusal& r) {
  ojson e = {{"name", r.name}, {"port", r.port}, {"rule", r.rule}};
  if (!r.detail.empty()) e["detail"] = r.detail;
  return e;
}

ojson start(const Start& s) {
  ojson limits = {{"mechanism", s.limits}};
  if (s.pids) limits["pids"] = s.pids;
  if (!s.memory.empty()) limits["memory"] = s.memory;
  if (!s.cpus.empty()) limits["cpus"] = s.cpus;
  if (s.timeout > 0) limits["timeout"] = s.timeout;
  // An rlimit makes fork or malloc fail inside the command: husk never sees it.
  if (s.limits == "rlimit")
    limits["unreported"] = "rlimits: a fork or an allocation refused inside the command is not seen by husk";
  ojson e = {{"command", s.command}, {"cwd", s.cwd}, {"uid", s.uid}, {"gid", s.gid},
             {"user_namespace", s.user_namespace}, {"net", s.net}, {"allowed_hosts", s.allowed_hosts},
             {"control", s.control}, {"limits", limits}, {"landlock_abi", s.landlock_abi},
             {"hidden", s.hidden}, {"protected", s.protected_paths}, {"writable", s.writable},
             {"notes", s.notes}};
  return e;
}

ojson limit(const std::string& which, uint64_t count, const std::string& detail) {
  ojson e = {{"limit", which}};
  if (count) e["count"] = count;
  e["detail"] = detail;
  return e;
}

ojson timeout(double seconds) {
  ojson e = limit("timeout", 0,
                  "SIGTERM, then SIGKILL " + std::to_string(static_cast<int>(kKillGrace)) + " s later if needed");
  e["seconds"] = seconds;
  return e;
}

ojson exit(int status, double seconds) {
  ojson e = {{"status", status}};
  // As a shell says it: 128 + N is signal N, whether it killed the command
  // or the command exited so (the sandbox's pid 1 passes it on this way).
  if (status > 128 && status - 128 < NSIG)
    if (const char* name = sigabbrev_np(status - 128)) e["signal"] = std::string("SIG") + name;
  e["seconds"] = static_cast<double>(static_cast<int64_t>(seconds * 1000)) / 1000;
  return e;
}

uint64_t event_count(const std::string& text, const std::string& key) {
  std::istringstream lines(text);
  std::string k;
  uint64_t n = 0;
  while (lines >> k >> n)
    if (k == key) return n;
  return 0;
}

ControlRequest parse_control(const std::string& line) {
  if (line.size() > kControlLineMax) throw Error("a line over " + std::to_string(kControlLineMax) + " bytes");
  ojson j = ojson::parse(line, nullptr, false);
  if (j.is_discarded()) throw Error("not JSON");
  if (!j.is_object()) throw Error("not a JSON object");
  ControlRequest r;
  for (const auto& [k, v] : j.items()) {
    if (k == "id") {
      r.id = v;
    } else if (k == "allow-host") {
      if (!v.is_string()) throw Error("\"allow-host\" must be a string");
      r.text = v.get<std::string>();
    } else {
      // Named escaped: the key is the caller's, the reason goes to the report and stderr.
      throw Error("unknown key " + quote(k) + " (only \"allow-host\" and \"id\")");
    }
  }
  if (!j.contains("allow-host")) throw Error("no \"allow-host\"");
  r.host = parse_allowed_host(r.text);
  return r;
}

ojson control_id(const std::string& line) {
  if (line.size() > kControlLineMax) return nullptr;
  ojson j = ojson::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("id")) return nullptr;
  return j["id"];
}

ojson control_answer(const ojson& id, const std::string& allow_host, bool accepted, const std::string& reason) {
  ojson e;
  if (!id.is_null()) e["id"] = id;
  if (!allow_host.empty()) e["allow-host"] = allow_host;
  e["accepted"] = accepted;
  if (!reason.empty()) e["reason"] = reason;
  return e;
}

}  // namespace husk::rt::report
