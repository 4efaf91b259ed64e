// husk-criu: the bridge between husk and CRIU's RPC. husk stays a static
// binary that never links CRIU's library; checkpoint and restore start this
// small dynamically linked program, which only translates: one JSON request
// from husk (fd 3) becomes a criu_req on the socket of the `criu swrk`
// husk started (fd 4), each of CRIU's notifications goes back to husk as
// JSON (with the fd CRIU sent, if any) and husk's answer back to CRIU, and
// the final response ends the run. The message types come from the
// protobuf-c code Debian's criu package ships in libcriu.
//
// Request: {"type": "DUMP"|"SINGLE_PRE_DUMP"|"RESTORE"|..., "opts": {...}},
// where opts carries criu_opts fields by their rpc.proto names (nested
// messages as objects, repeated fields as arrays, enums by name).
#include <criu/rpc.pb-c.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/fdpass.h"

namespace {

using nlohmann::json;
using husk::Error;

constexpr int kHusk = 3;
constexpr int kCriu = 4;
constexpr size_t kMaxMessage = 1 << 20;

// Memory the built message points into, freed with the program.
struct Arena {
  std::deque<std::string> strings;
  std::deque<std::vector<char>> blocks;
  char* string(const std::string& s) { return strings.emplace_back(s).data(); }
  void* block(size_t size) { return blocks.emplace_back(size, 0).data(); }
};

void fill(ProtobufCMessage* msg, const json& obj, Arena& arena);

// One value of `field` from JSON into `slot` (the field's storage).
void set_value(const ProtobufCFieldDescriptor* field, void* slot, const json& v, Arena& arena) {
  const std::string name = field->name;
  switch (field->type) {
    case PROTOBUF_C_TYPE_BOOL:
      if (!v.is_boolean()) throw Error("criu_opts." + name + ": a boolean expected");
      *static_cast<protobuf_c_boolean*>(slot) = v.get<bool>();
      return;
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
      if (!v.is_number_integer()) throw Error("criu_opts." + name + ": an integer expected");
      *static_cast<int32_t*>(slot) = v.get<int32_t>();
      return;
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
      if (!v.is_number_unsigned()) throw Error("criu_opts." + name + ": an unsigned integer expected");
      *static_cast<uint32_t*>(slot) = v.get<uint32_t>();
      return;
    case PROTOBUF_C_TYPE_STRING:
      if (!v.is_string()) throw Error("criu_opts." + name + ": a string expected");
      *static_cast<char**>(slot) = arena.string(v.get<std::string>());
      return;
    case PROTOBUF_C_TYPE_ENUM: {
      auto* e = static_cast<const ProtobufCEnumDescriptor*>(field->descriptor);
      const ProtobufCEnumValue* ev =
          v.is_string() ? protobuf_c_enum_descriptor_get_value_by_name(e, v.get<std::string>().c_str()) : nullptr;
      if (!ev) throw Error("criu_opts." + name + ": not a value of " + e->name);
      *static_cast<int*>(slot) = ev->value;
      return;
    }
    case PROTOBUF_C_TYPE_MESSAGE: {
      auto* d = static_cast<const ProtobufCMessageDescriptor*>(field->descriptor);
      auto* sub = static_cast<ProtobufCMessage*>(arena.block(d->sizeof_message));
      d->message_init(sub);
      fill(sub, v, arena);
      *static_cast<ProtobufCMessage**>(slot) = sub;
      return;
    }
    default:
      throw Error("criu_opts." + name + ": a type husk-criu does not fill");
  }
}

size_t slot_size(const ProtobufCFieldDescriptor* field) {
  switch (field->type) {
    case PROTOBUF_C_TYPE_BOOL: return sizeof(protobuf_c_boolean);
    case PROTOBUF_C_TYPE_ENUM: return sizeof(int);
    case PROTOBUF_C_TYPE_STRING:
    case PROTOBUF_C_TYPE_MESSAGE: return sizeof(void*);
    default: return sizeof(uint32_t);
  }
}

// Every key of `obj` into the message's field of that name.
void fill(ProtobufCMessage* msg, const json& obj, Arena& arena) {
  if (!obj.is_object()) throw Error(std::string(msg->descriptor->name) + ": an object expected");
  for (const auto& [key, v] : obj.items()) {
    const ProtobufCFieldDescriptor* field =
        protobuf_c_message_descriptor_get_field_by_name(msg->descriptor, key.c_str());
    if (!field) throw Error(std::string(msg->descriptor->name) + " has no field " + key);
    char* base = reinterpret_cast<char*>(msg);
    if (field->label == PROTOBUF_C_LABEL_REPEATED) {
      if (!v.is_array()) throw Error(std::string(field->name) + ": an array expected");
      const size_t size = slot_size(field);
      char* items = static_cast<char*>(arena.block(size * v.size() + 1));
      for (size_t i = 0; i < v.size(); ++i) set_value(field, items + i * size, v[i], arena);
      *reinterpret_cast<size_t*>(base + field->quantifier_offset) = v.size();
      *reinterpret_cast<void**>(base + field->offset) = items;
      continue;
    }
    set_value(field, base + field->offset, v, arena);
    // Scalars carry a has_ flag; strings and messages are present when set.
    if (field->label == PROTOBUF_C_LABEL_OPTIONAL && field->type != PROTOBUF_C_TYPE_STRING &&
        field->type != PROTOBUF_C_TYPE_MESSAGE)
      *reinterpret_cast<protobuf_c_boolean*>(base + field->quantifier_offset) = 1;
  }
}

void send_json(const json& j, int fd = -1) {
  const std::string text = j.dump();
  if (husk::base::send_with_fd(kHusk, text.data(), text.size(), fd) < 0) throw husk::sys_error("send to husk");
}

json recv_json() {
  std::string buf(kMaxMessage, '\0');
  int fd = -1;
  const ssize_t n = husk::base::recv_with_fd(kHusk, buf.data(), buf.size(), &fd);
  if (fd >= 0) ::close(fd);
  if (n <= 0) throw Error("husk closed the bridge's socket");
  return json::parse(buf.substr(0, static_cast<size_t>(n)));
}

void send_req(const CriuReq& req) {
  std::vector<uint8_t> out(criu_req__get_packed_size(&req));
  criu_req__pack(&req, out.data());
  if (::send(kCriu, out.data(), out.size(), MSG_NOSIGNAL) < 0) throw husk::sys_error("send to criu");
}

// The next response; `fd` gets what CRIU attached (the orphan pts master).
CriuResp* recv_resp(int* fd) {
  std::vector<uint8_t> buf(kMaxMessage);
  const ssize_t n = husk::base::recv_with_fd(kCriu, buf.data(), buf.size(), fd);
  if (n < 0) throw husk::sys_error("receive from criu");
  if (n == 0) throw Error("criu swrk closed its socket without an answer (it died: see its log)");
  CriuResp* resp = criu_resp__unpack(nullptr, static_cast<size_t>(n), buf.data());
  if (!resp) throw Error("criu sent a message husk-criu cannot read");
  return resp;
}

json final_reply(const CriuResp& r) {
  const ProtobufCEnumValue* type = protobuf_c_enum_descriptor_get_value(&criu_req_type__descriptor, r.type);
  json j = {{"type", type ? type->name : "?"}, {"success", static_cast<bool>(r.success)}};
  if (r.has_cr_errno) j["cr_errno"] = r.cr_errno;
  if (r.cr_errmsg) j["cr_errmsg"] = r.cr_errmsg;
  if (r.restore) j["pid"] = r.restore->pid;
  if (r.dump && r.dump->has_restored) j["restored"] = static_cast<bool>(r.dump->restored);
  if (r.version)
    j["version"] = r.version->major_number * 10000 + r.version->minor_number * 100 +
                   (r.version->has_sublevel ? r.version->sublevel : 0);
  return j;
}

void run() {
  const json request = recv_json();
  Arena arena;
  CriuReq req = CRIU_REQ__INIT;
  const ProtobufCEnumValue* type =
      protobuf_c_enum_descriptor_get_value_by_name(&criu_req_type__descriptor, request.value("type", "").c_str());
  if (!type) throw Error("request type " + request.value("type", std::string()) + " is not CRIU's");
  req.type = static_cast<CriuReqType>(type->value);
  CriuOpts opts = CRIU_OPTS__INIT;
  if (request.contains("opts")) {
    fill(&opts.base, request["opts"], arena);
    req.opts = &opts;
  }
  send_req(req);
  for (;;) {
    int fd = -1;
    CriuResp* resp = recv_resp(&fd);
    if (resp->type != CRIU_REQ_TYPE__NOTIFY) {
      send_json(final_reply(*resp));
      criu_resp__free_unpacked(resp, nullptr);
      return;
    }
    json note = {{"notify", resp->notify && resp->notify->script ? resp->notify->script : ""}};
    if (resp->notify && resp->notify->has_pid) note["pid"] = resp->notify->pid;
    criu_resp__free_unpacked(resp, nullptr);
    send_json(note, fd);
    if (fd >= 0) ::close(fd);
    const json answer = recv_json();
    CriuReq ack = CRIU_REQ__INIT;
    ack.type = CRIU_REQ_TYPE__NOTIFY;
    ack.has_notify_success = 1;
    ack.notify_success = answer.value("ok", false);
    send_req(ack);
  }
}

}  // namespace

int main() {
  try {
    run();
    return 0;
  } catch (const std::exception& e) {
    try {
      send_json({{"error", e.what()}});
    } catch (const std::exception&) {
      std::cerr << "husk-criu: " << e.what() << '\n';
    }
    return 1;
  }
}
