// husk-systemd: the systemd cgroup driver's bridge to systemd's D-Bus API.
// husk is a static PIE and Debian ships no libsystemd.a, so the sd-bus calls
// live in this small dynamically linked program. husk computes every unit
// name and property and runs it on the host, one request per run; the bridge
// only makes the calls and waits for systemd's jobs.
//
// stdin: one JSON request, read to end-of-file:
//   {"bus": "system"|"user", "method": "start"|"set"|"stop"|"reset", "unit": "x.scope",
//    "properties": [{"name": "MemoryMax", "type": "t", "value": 1024}, ...],
//    "timeoutMs": 30000}
// Property types are D-Bus signatures: s b t u au ay a(ss) a(st). timeoutMs
// bounds the wait for the start or stop job (default 30000). reset is
// ResetFailedUnit alone (a unit gone already counts as reset).
// stdout: one JSON reply: {"controlGroup": "/x.slice/x.scope"} for start, {}
// otherwise (stop may add "warning"), or on failure {"error": "<one line>",
// "errorName": "<D-Bus error name, or empty>", "errno": N}.
// Exit 0 on success, 1 with an error reply, 2 for a malformed request (told
// on stderr too).
#include <systemd/sd-bus.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "base/error.h"

namespace {

using husk::Error;
using nlohmann::json;

constexpr const char* kService = "org.freedesktop.systemd1";
constexpr const char* kPath = "/org/freedesktop/systemd1";
constexpr const char* kManager = "org.freedesktop.systemd1.Manager";
constexpr const char* kUnitExists = "org.freedesktop.systemd1.UnitExists";
constexpr const char* kNoSuchUnit = "org.freedesktop.systemd1.NoSuchUnit";

// ---- the request ----

// A request husk should never have sent: exit 2.
class BadRequest : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

using Value = std::variant<std::string, bool, uint64_t, uint32_t, std::vector<uint32_t>,
                           std::vector<uint8_t>, std::vector<std::pair<std::string, std::string>>,
                           std::vector<std::pair<std::string, uint64_t>>>;

struct Property {
  std::string name, type;  // type: the D-Bus signature of value
  Value value;
};

struct Request {
  std::string bus, method, unit;
  std::vector<Property> properties;
  uint64_t timeout_ms = 30000;
};

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Refuses keys other than `keys`: a misspelt one would otherwise be ignored.
void check_object(const json& o, std::initializer_list<std::string> keys, const std::string& where) {
  if (!o.is_object()) throw BadRequest(where + ": not a JSON object");
  for (const auto& [k, v] : o.items())
    if (std::find(keys.begin(), keys.end(), k) == keys.end())
      throw BadRequest(where + ": unknown key \"" + k + "\"");
}

const json& field(const json& o, const std::string& key, const std::string& where) {
  auto it = o.find(key);
  if (it == o.end()) throw BadRequest(where + ": \"" + key + "\" is missing");
  return *it;
}

std::string text_of(const json& v, const std::string& where) {
  if (!v.is_string()) throw BadRequest(where + ": not a string: " + v.dump());
  auto s = v.get<std::string>();
  // sd-bus takes C strings: a NUL would cut the value short.
  if (s.find('\0') != std::string::npos) throw BadRequest(where + ": contains a NUL byte");
  return s;
}

uint64_t number_of(const json& v, uint64_t max, const std::string& where) {
  if (!v.is_number_unsigned() || v.get<uint64_t>() > max)
    throw BadRequest(where + ": not an integer from 0 to " + std::to_string(max) + ": " + v.dump());
  return v.get<uint64_t>();
}

template <typename T, typename F>
std::vector<T> list_of(const json& v, const std::string& where, F item) {
  if (!v.is_array()) throw BadRequest(where + ": not an array: " + v.dump());
  std::vector<T> out;
  for (size_t i = 0; i < v.size(); ++i) out.push_back(item(v[i], where + "[" + std::to_string(i) + "]"));
  return out;
}

template <typename T, typename F>
std::vector<std::pair<std::string, T>> pairs_of(const json& v, const std::string& where, F second) {
  return list_of<std::pair<std::string, T>>(v, where, [&](const json& e, const std::string& w) {
    if (!e.is_array() || e.size() != 2) throw BadRequest(w + ": not a pair [string, value]: " + e.dump());
    return std::pair<std::string, T>{text_of(e[0], w + "[0]"), second(e[1], w + "[1]")};
  });
}

Value value_of(const std::string& type, const json& v, const std::string& where) {
  auto u8 = [](const json& e, const std::string& w) { return static_cast<uint8_t>(number_of(e, UINT8_MAX, w)); };
  auto u32 = [](const json& e, const std::string& w) { return static_cast<uint32_t>(number_of(e, UINT32_MAX, w)); };
  auto u64 = [](const json& e, const std::string& w) { return number_of(e, UINT64_MAX, w); };
  if (type == "s") return text_of(v, where + ".value");
  if (type == "b") {
    if (!v.is_boolean()) throw BadRequest(where + ".value: not true or false: " + v.dump());
    return v.get<bool>();
  }
  if (type == "t") return u64(v, where + ".value");
  if (type == "u") return u32(v, where + ".value");
  if (type == "au") return list_of<uint32_t>(v, where + ".value", u32);
  if (type == "ay") return list_of<uint8_t>(v, where + ".value", u8);
  if (type == "a(ss)") return pairs_of<std::string>(v, where + ".value", text_of);
  if (type == "a(st)") return pairs_of<uint64_t>(v, where + ".value", u64);
  throw BadRequest(where + ".type: \"" + type + "\" is not one of s b t u au ay a(ss) a(st)");
}

Property property_of(const json& p, const std::string& where) {
  check_object(p, {"name", "type", "value"}, where);
  Property out;
  out.name = text_of(field(p, "name", where), where + ".name");
  if (out.name.empty()) throw BadRequest(where + ".name: empty");
  std::string named = where + " (" + out.name + ")";
  out.type = text_of(field(p, "type", where), named + ".type");
  out.value = value_of(out.type, field(p, "value", where), named);
  return out;
}

std::string one_of(const json& v, std::initializer_list<std::string> allowed, const std::string& where) {
  std::string s = text_of(v, where);
  if (std::find(allowed.begin(), allowed.end(), s) != allowed.end()) return s;
  std::string list;
  for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
  throw BadRequest(where + ": \"" + s + "\" is not one of " + list);
}

Request parse_request(const std::string& text) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    throw BadRequest(std::string("request: not JSON: ") + e.what());
  }
  check_object(j, {"bus", "method", "unit", "properties", "timeoutMs"}, "request");
  Request rq;
  rq.bus = one_of(field(j, "bus", "request"), {"system", "user"}, "request.bus");
  rq.method = one_of(field(j, "method", "request"), {"start", "set", "stop", "reset"}, "request.method");
  rq.unit = text_of(field(j, "unit", "request"), "request.unit");
  if (rq.unit.empty()) throw BadRequest("request.unit: empty");
  // The cgroup of any other kind of unit is read from another interface.
  if (rq.method == "start" && !ends_with(rq.unit, ".scope") && !ends_with(rq.unit, ".slice"))
    throw BadRequest("request.unit: \"" + rq.unit + "\": start takes a .scope or .slice unit");
  if (auto it = j.find("properties"); it != j.end())
    rq.properties = list_of<Property>(*it, "request.properties", property_of);
  if (rq.method != "start" && rq.method != "set" && !rq.properties.empty())
    throw BadRequest("request.properties: " + rq.method + " takes none");
  if (auto it = j.find("timeoutMs"); it != j.end()) {
    rq.timeout_ms = number_of(*it, UINT64_MAX / 1000, "request.timeoutMs");
    if (rq.timeout_ms == 0) throw BadRequest("request.timeoutMs: 0 (the job could never finish in time)");
  }
  return rq;
}

// ---- sd-bus ----

struct BusClose {
  void operator()(sd_bus* b) const { sd_bus_flush_close_unref(b); }
};
struct MessageUnref {
  void operator()(sd_bus_message* m) const { sd_bus_message_unref(m); }
};
struct SlotUnref {
  void operator()(sd_bus_slot* s) const { sd_bus_slot_unref(s); }
};
using Bus = std::unique_ptr<sd_bus, BusClose>;
using Message = std::unique_ptr<sd_bus_message, MessageUnref>;
using Slot = std::unique_ptr<sd_bus_slot, SlotUnref>;

struct BusError {
  sd_bus_error e{};  // SD_BUS_ERROR_NULL, whose compound literal is not C++
  BusError() = default;
  BusError(const BusError&) = delete;
  BusError& operator=(const BusError&) = delete;
  ~BusError() { sd_bus_error_free(&e); }
};

// A failed call: the message names the method and the unit and carries
// systemd's own; name() is the D-Bus error name.
class DbusError : public Error {
 public:
  DbusError(std::string msg, std::string name, int err) : Error(std::move(msg), err), name_(std::move(name)) {}
  const std::string& name() const { return name_; }

 private:
  std::string name_;
};

// A local sd-bus failure (building a message, reading a reply): no D-Bus error.
void check(int r, const std::string& what) {
  if (r < 0) throw husk::sys_error(what, -r);
}

std::string one_line(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

[[noreturn]] void fail(const std::string& what, const sd_bus_error& e, int r) {
  std::string msg = e.message ? e.message : std::strerror(-r);
  throw DbusError(what + ": " + one_line(msg), e.name ? e.name : "", -r);
}

// Where sd-bus connects (sd_bus_open_system(3), sd_bus_open_user(3)).
std::string bus_address(const std::string& which) {
  const char* env = std::getenv(which == "system" ? "DBUS_SYSTEM_BUS_ADDRESS" : "DBUS_SESSION_BUS_ADDRESS");
  if (env && *env) return env;
  if (which == "system") return "unix:path=/run/dbus/system_bus_socket";
  const char* runtime_dir = std::getenv("XDG_RUNTIME_DIR");
  return std::string("unix:path=") + (runtime_dir ? runtime_dir : "") + "/bus";
}

Bus connect(const std::string& which) {
  sd_bus* b = nullptr;
  int r = which == "system" ? sd_bus_open_system(&b) : sd_bus_open_user(&b);
  if (r >= 0) return Bus(b);
  std::string what = "connect to the systemd " + which + " bus";
  if (which == "user" && r == -ENOMEDIUM)
    throw Error(what + ": neither DBUS_SESSION_BUS_ADDRESS nor XDG_RUNTIME_DIR is set", ENOMEDIUM);
  throw husk::sys_error(what + " at " + bus_address(which), -r);
}

Message new_call(sd_bus* bus, const std::string& method) {
  sd_bus_message* m = nullptr;
  check(sd_bus_message_new_method_call(bus, &m, kService, kPath, kManager, method.c_str()),
        "build the " + method + " call");
  return Message(m);
}

Message call(sd_bus* bus, sd_bus_message* m, const std::string& what) {
  BusError err;
  sd_bus_message* reply = nullptr;
  int r = sd_bus_call(bus, m, 0, &err.e, &reply);
  if (r < 0) fail(what, err.e, r);
  return Message(reply);
}

// Manager.<method>(unit[, mode]): the calls without properties.
Message call_unit(sd_bus* bus, const std::string& method, const std::string& unit, const char* mode = nullptr) {
  Message m = new_call(bus, method);
  int r = sd_bus_message_append_basic(m.get(), 's', unit.c_str());
  if (r >= 0 && mode) r = sd_bus_message_append_basic(m.get(), 's', mode);
  check(r, "build the " + method + " call");
  return call(bus, m.get(), method + " " + unit);
}

std::string read_path(sd_bus_message* reply, const std::string& what) {
  const char* path = nullptr;
  check(sd_bus_message_read_basic(reply, 'o', &path), "read the reply of " + what);
  return path;
}

template <typename T>
int append_pairs(sd_bus_message* m, const std::vector<std::pair<std::string, T>>& pairs) {
  constexpr bool strings = std::is_same_v<T, std::string>;
  const char* sig = strings ? "(ss)" : "(st)";
  int r = sd_bus_message_open_container(m, 'a', sig);
  for (size_t i = 0; r >= 0 && i < pairs.size(); ++i) {
    if constexpr (strings)
      r = sd_bus_message_append(m, sig, pairs[i].first.c_str(), pairs[i].second.c_str());
    else
      r = sd_bus_message_append(m, sig, pairs[i].first.c_str(), pairs[i].second);
  }
  return r < 0 ? r : sd_bus_message_close_container(m);
}

int append_value(sd_bus_message* m, const Value& value) {
  return std::visit(
      [m](const auto& v) -> int {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::string>) {
          return sd_bus_message_append_basic(m, 's', v.c_str());
        } else if constexpr (std::is_same_v<T, bool>) {
          int b = v;  // D-Bus booleans are 32 bits wide
          return sd_bus_message_append_basic(m, 'b', &b);
        } else if constexpr (std::is_same_v<T, uint64_t>) {
          return sd_bus_message_append_basic(m, 't', &v);
        } else if constexpr (std::is_same_v<T, uint32_t>) {
          return sd_bus_message_append_basic(m, 'u', &v);
        } else if constexpr (std::is_same_v<T, std::vector<uint32_t>>) {
          return sd_bus_message_append_array(m, 'u', v.data(), v.size() * sizeof(uint32_t));
        } else if constexpr (std::is_same_v<T, std::vector<uint8_t>>) {
          return sd_bus_message_append_array(m, 'y', v.data(), v.size());
        } else {
          return append_pairs(m, v);
        }
      },
      value);
}

// The a(sv) of StartTransientUnit and SetUnitProperties.
void append_properties(sd_bus_message* m, const std::vector<Property>& props) {
  check(sd_bus_message_open_container(m, 'a', "(sv)"), "build the property list");
  for (const auto& p : props) {
    int r = sd_bus_message_open_container(m, 'r', "sv");
    if (r >= 0) r = sd_bus_message_append_basic(m, 's', p.name.c_str());
    if (r >= 0) r = sd_bus_message_open_container(m, 'v', p.type.c_str());
    if (r >= 0) r = append_value(m, p.value);
    if (r >= 0) r = sd_bus_message_close_container(m);
    if (r >= 0) r = sd_bus_message_close_container(m);
    check(r, "build property " + p.name + " (" + p.type + ")");
  }
  check(sd_bus_message_close_container(m), "build the property list");
}

// ---- jobs ----

// The JobRemoved signal of one job. The match is added before the call that
// queues the job: sd_bus_call only queues what arrives meanwhile, and the
// callback runs later from sd_bus_process, once `path` is known.
struct JobWatch {
  std::string path;
  std::optional<std::string> result;  // "done", "failed", "canceled", ...
};

int on_job_removed(sd_bus_message* m, void* data, sd_bus_error*) {
  auto* w = static_cast<JobWatch*>(data);
  uint32_t id = 0;
  const char *path = nullptr, *unit = nullptr, *result = nullptr;
  if (sd_bus_message_read(m, "uoss", &id, &path, &unit, &result) >= 0 && w->path == path) w->result = result;
  return 0;
}

// No Subscribe() needed: systemd sends JobRemoved to the client that queued the job.
Slot watch_jobs(sd_bus* bus, JobWatch& w) {
  sd_bus_slot* s = nullptr;
  check(sd_bus_match_signal(bus, &s, kService, kPath, kManager, "JobRemoved", on_job_removed, &w),
        "listen for systemd's JobRemoved signal");
  return Slot(s);
}

uint64_t now_us() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000 + static_cast<uint64_t>(ts.tv_nsec) / 1000;
}

// The job's result; nullopt when timeout_ms passed first.
std::optional<std::string> wait_job(sd_bus* bus, JobWatch& w, uint64_t timeout_ms, const std::string& unit) {
  uint64_t deadline = now_us() + timeout_ms * 1000;
  while (!w.result) {
    int r = sd_bus_process(bus, nullptr);
    if (r > 0) continue;
    if (r == 0) {
      uint64_t now = now_us();
      if (now >= deadline) return std::nullopt;
      r = sd_bus_wait(bus, deadline - now);
    }
    if (r < 0) throw husk::sys_error("wait for the systemd job " + w.path + " of " + unit, -r);
  }
  return w.result;
}

Error job_timeout(const Request& rq) {
  return Error("systemd job for " + rq.unit + ": timed out after " + std::to_string(rq.timeout_ms) + " ms",
               ETIMEDOUT);
}

// ---- the methods ----

std::string start_transient(sd_bus* bus, const Request& rq) {
  Message m = new_call(bus, "StartTransientUnit");
  check(sd_bus_message_append(m.get(), "ss", rq.unit.c_str(), "replace"), "build the StartTransientUnit call");
  append_properties(m.get(), rq.properties);
  check(sd_bus_message_append(m.get(), "a(sa(sv))", 0), "build the StartTransientUnit call");
  std::string what = "StartTransientUnit " + rq.unit;
  return read_path(call(bus, m.get(), what).get(), what);
}

// Errors ignored: the retried start's, or the failed job's, is the one to report.
void reset_failed_quietly(sd_bus* bus, const std::string& unit) {
  try {
    call_unit(bus, "ResetFailedUnit", unit);
  } catch (const Error&) {
  }
}

std::string control_group(sd_bus* bus, const std::string& unit) {
  std::string path = read_path(call_unit(bus, "GetUnit", unit).get(), "GetUnit " + unit);
  const char* iface = ends_with(unit, ".slice") ? "org.freedesktop.systemd1.Slice" : "org.freedesktop.systemd1.Scope";
  BusError err;
  char* raw = nullptr;
  int r = sd_bus_get_property_string(bus, kService, path.c_str(), iface, "ControlGroup", &err.e, &raw);
  if (r < 0) fail("read the ControlGroup of " + unit, err.e, r);
  std::unique_ptr<char, decltype(&std::free)> cg(raw, &std::free);
  if (!*cg) throw Error("the ControlGroup of " + unit + " is empty: the unit has no cgroup");
  return cg.get();
}

json start(sd_bus* bus, const Request& rq) {
  JobWatch w;
  Slot slot = watch_jobs(bus, w);
  try {
    w.path = start_transient(bus, rq);
  } catch (const DbusError& e) {
    // A failed unit of an earlier run keeps its name until reset: once.
    if (e.name() != kUnitExists) throw;
    reset_failed_quietly(bus, rq.unit);
    w.path = start_transient(bus, rq);
  }
  auto result = wait_job(bus, w, rq.timeout_ms, rq.unit);
  if (result != "done") {
    reset_failed_quietly(bus, rq.unit);
    if (!result) throw job_timeout(rq);
    throw Error("systemd job for " + rq.unit + ": " + *result);
  }
  return {{"controlGroup", control_group(bus, rq.unit)}};
}

json set(sd_bus* bus, const Request& rq) {
  Message m = new_call(bus, "SetUnitProperties");
  int runtime = 1;  // not kept across a reboot: the unit is transient anyway
  check(sd_bus_message_append(m.get(), "sb", rq.unit.c_str(), runtime), "build the SetUnitProperties call");
  append_properties(m.get(), rq.properties);
  call(bus, m.get(), "SetUnitProperties " + rq.unit);
  return json::object();
}

json reset(sd_bus* bus, const Request& rq) {
  try {
    call_unit(bus, "ResetFailedUnit", rq.unit);
  } catch (const DbusError& e) {
    if (e.name() != kNoSuchUnit) throw;  // not loaded (collected, or never there): nothing to reset
  }
  return json::object();
}

json stop(sd_bus* bus, const Request& rq) {
  JobWatch w;
  Slot slot = watch_jobs(bus, w);
  try {
    w.path = read_path(call_unit(bus, "StopUnit", rq.unit, "replace").get(), "StopUnit " + rq.unit);
  } catch (const DbusError& e) {
    if (e.name() == kNoSuchUnit) return json::object();  // a scope goes when its last process does
    throw;
  }
  auto result = wait_job(bus, w, rq.timeout_ms, rq.unit);
  if (!result) throw job_timeout(rq);
  json reply = json::object();
  if (*result != "done") reply["warning"] = "systemd job for " + rq.unit + ": " + *result;
  reset(bus, rq);
  return reply;
}

json run(const Request& rq) {
  Bus bus = connect(rq.bus);
  if (rq.method == "start") return start(bus.get(), rq);
  if (rq.method == "set") return set(bus.get(), rq);
  if (rq.method == "stop") return stop(bus.get(), rq);
  return reset(bus.get(), rq);
}

json error_reply(const std::string& msg, const std::string& name, int err) {
  return {{"error", msg}, {"errorName", name}, {"errno", err}};
}

}  // namespace

int main() {
  json reply;
  int rc = 0;
  try {
    std::string in{std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>()};
    reply = run(parse_request(in));
  } catch (const BadRequest& e) {
    std::cerr << "husk-systemd: " << e.what() << '\n';
    reply = error_reply(e.what(), "", EINVAL);
    rc = 2;
  } catch (const DbusError& e) {
    reply = error_reply(e.what(), e.name(), e.err());
    rc = 1;
  } catch (const Error& e) {
    reply = error_reply(e.what(), "", e.err());
    rc = 1;
  } catch (const std::exception& e) {
    reply = error_reply(e.what(), "", 0);
    rc = 1;
  }
  std::cout << reply.dump(-1, ' ', false, json::error_handler_t::replace) << '\n' << std::flush;
  return std::cout ? rc : 1;
}
