// husk-fake-systemd ADDRESS LOG: a stand-in for systemd's Manager on a
// private bus, for tests/unit/cgroups/systemd_bridge_test.cpp (this host
// has no systemd). It appends every call to LOG as one line, "Member arg
// ...", and prints "ready" once it owns org.freedesktop.systemd1. What a
// call does depends on the unit:
//   exists.scope  StartTransientUnit fails with UnitExists until a ResetFailedUnit
//   stuck.scope   StartTransientUnit always fails with UnitExists
//   fail.scope    the start and stop jobs end "failed"
//   hang.scope    no JobRemoved for its jobs
//   gone.scope    StopUnit fails with NoSuchUnit
// Any other unit succeeds; its ControlGroup is /fake.slice/<unit>.
// ResetFailedUnit of a unit other than exists/stuck fails with NoSuchUnit,
// as systemd's does once a stopped scope is collected.
#include <systemd/sd-bus.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

constexpr const char* kPath = "/org/freedesktop/systemd1";
constexpr const char* kManager = "org.freedesktop.systemd1.Manager";
constexpr const char* kUnitPrefix = "/org/freedesktop/systemd1/unit";

struct State {
  FILE* log = nullptr;
  bool exists_reset = false;
  unsigned jobs = 0;
};

std::string read_value(sd_bus_message* m);

std::string read_container(sd_bus_message* m, char type, const char* contents) {
  if (sd_bus_message_enter_container(m, type, contents) < 0) return "?";
  std::string out = type == 'v' ? std::string("<") + contents + ">" : type == 'a' ? "[" : "(";
  for (bool first = true; sd_bus_message_at_end(m, false) == 0; first = false)
    out += (first || type == 'v' ? "" : ", ") + read_value(m);
  sd_bus_message_exit_container(m);
  return out + (type == 'v' ? "" : type == 'a' ? "]" : ")");
}

// One value at the read position: "text", true, 12, [a, b], (a, b), <sig>value.
std::string read_value(sd_bus_message* m) {
  char type = 0;
  const char* contents = nullptr;
  if (sd_bus_message_peek_type(m, &type, &contents) <= 0) return "?";
  if (type == 'a' || type == 'r' || type == 'v' || type == 'e') return read_container(m, type, contents);
  union {
    uint8_t y;
    int b;
    uint32_t u;
    uint64_t t;
    const char* s;
  } v{};
  if (sd_bus_message_read_basic(m, type, &v) < 0) return "?";
  switch (type) {
    case 'y': return std::to_string(v.y);
    case 'b': return v.b ? "true" : "false";
    case 'u': return std::to_string(v.u);
    case 't': return std::to_string(v.t);
    case 's':
    case 'o': return std::string("\"") + v.s + "\"";
    default: return std::string("?") + type;
  }
}

// The call as one log line; leaves the message rewound and its unit read.
std::string log_call(sd_bus_message* m, State& st) {
  std::string line = sd_bus_message_get_member(m);
  while (sd_bus_message_at_end(m, true) == 0) line += " " + read_value(m);
  std::fprintf(st.log, "%s\n", line.c_str());
  std::fflush(st.log);
  sd_bus_message_rewind(m, true);
  const char* unit = "";
  sd_bus_message_read_basic(m, 's', &unit);
  return unit;
}

// Replies with a new job, then sends its JobRemoved (as systemd: after the reply).
int reply_job(sd_bus_message* m, State& st, const std::string& unit) {
  std::string job = std::string(kPath) + "/job/" + std::to_string(++st.jobs);
  int r = sd_bus_reply_method_return(m, "o", job.c_str());
  if (r < 0 || unit == "hang.scope") return r;
  const char* result = unit == "fail.scope" ? "failed" : "done";
  return sd_bus_emit_signal(sd_bus_message_get_bus(m), kPath, kManager, "JobRemoved", "uoss", st.jobs, job.c_str(),
                            unit.c_str(), result);
}

int start_transient(sd_bus_message* m, void* data, sd_bus_error*) {
  auto& st = *static_cast<State*>(data);
  std::string unit = log_call(m, st);
  if (unit == "stuck.scope" || (unit == "exists.scope" && !st.exists_reset))
    return sd_bus_reply_method_errorf(m, "org.freedesktop.systemd1.UnitExists",
                                      "Unit %s was already loaded or has a fragment file.", unit.c_str());
  return reply_job(m, st, unit);
}

int stop_unit(sd_bus_message* m, void* data, sd_bus_error*) {
  auto& st = *static_cast<State*>(data);
  std::string unit = log_call(m, st);
  if (unit == "gone.scope")
    return sd_bus_reply_method_errorf(m, "org.freedesktop.systemd1.NoSuchUnit", "Unit %s not loaded.", unit.c_str());
  return reply_job(m, st, unit);
}

int reset_failed(sd_bus_message* m, void* data, sd_bus_error*) {
  auto& st = *static_cast<State*>(data);
  std::string unit = log_call(m, st);
  if (unit == "exists.scope") st.exists_reset = true;
  if (unit == "exists.scope" || unit == "stuck.scope") return sd_bus_reply_method_return(m, "");
  return sd_bus_reply_method_errorf(m, "org.freedesktop.systemd1.NoSuchUnit", "Unit %s not loaded.", unit.c_str());
}

int get_unit(sd_bus_message* m, void* data, sd_bus_error*) {
  std::string unit = log_call(m, *static_cast<State*>(data));
  char* path = nullptr;
  int r = sd_bus_path_encode(kUnitPrefix, unit.c_str(), &path);
  if (r >= 0) r = sd_bus_reply_method_return(m, "o", path);
  std::free(path);
  return r;
}

int set_properties(sd_bus_message* m, void* data, sd_bus_error*) {
  log_call(m, *static_cast<State*>(data));
  return sd_bus_reply_method_return(m, "");
}

int control_group(sd_bus*, const char* path, const char*, const char*, sd_bus_message* reply, void*,
                  sd_bus_error*) {
  char* unit = nullptr;
  int r = sd_bus_path_decode(path, kUnitPrefix, &unit);
  if (r > 0) r = sd_bus_message_append(reply, "s", (std::string("/fake.slice/") + unit).c_str());
  std::free(unit);
  return r;
}

const sd_bus_vtable kManagerVtable[] = {
    SD_BUS_VTABLE_START(0),
    SD_BUS_METHOD("StartTransientUnit", "ssa(sv)a(sa(sv))", "o", start_transient, 0),
    SD_BUS_METHOD("StopUnit", "ss", "o", stop_unit, 0),
    SD_BUS_METHOD("ResetFailedUnit", "s", "", reset_failed, 0),
    SD_BUS_METHOD("GetUnit", "s", "o", get_unit, 0),
    SD_BUS_METHOD("SetUnitProperties", "sba(sv)", "", set_properties, 0),
    SD_BUS_SIGNAL("JobRemoved", "uoss", 0),
    SD_BUS_VTABLE_END};

const sd_bus_vtable kUnitVtable[] = {SD_BUS_VTABLE_START(0),
                                     SD_BUS_PROPERTY("ControlGroup", "s", control_group, 0, 0),
                                     SD_BUS_VTABLE_END};

int serve(sd_bus* bus, State& st) {
  int r = sd_bus_add_object_vtable(bus, nullptr, kPath, kManager, kManagerVtable, &st);
  if (r >= 0) r = sd_bus_add_fallback_vtable(bus, nullptr, kUnitPrefix, "org.freedesktop.systemd1.Scope",
                                             kUnitVtable, nullptr, &st);
  if (r >= 0) r = sd_bus_add_fallback_vtable(bus, nullptr, kUnitPrefix, "org.freedesktop.systemd1.Slice",
                                             kUnitVtable, nullptr, &st);
  if (r >= 0) r = sd_bus_request_name(bus, "org.freedesktop.systemd1", 0);
  if (r < 0) return r;
  std::printf("ready\n");
  std::fflush(stdout);
  for (;;) {
    r = sd_bus_process(bus, nullptr);
    if (r < 0) return r;
    if (r == 0 && (r = sd_bus_wait(bus, UINT64_MAX)) < 0) return r;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: husk-fake-systemd ADDRESS LOG\n");
    return 2;
  }
  State st;
  st.log = std::fopen(argv[2], "ae");
  sd_bus* bus = nullptr;
  int r = st.log ? sd_bus_new(&bus) : -errno;
  if (r >= 0) r = sd_bus_set_address(bus, argv[1]);
  if (r >= 0) r = sd_bus_set_bus_client(bus, 1);
  if (r >= 0) r = sd_bus_start(bus);
  if (r >= 0) r = serve(bus, st);
  std::fprintf(stderr, "husk-fake-systemd: %s\n", std::strerror(-r));
  return 1;
}
