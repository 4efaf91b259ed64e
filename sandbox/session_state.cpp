// What a session keeps between its commands: its name's rules and the
// Landlock plan each command builds again, as JSON. Pure.
#include <algorithm>
#include <cstring>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/printable.h"
#include "sandbox/internal.h"

namespace husk::rt {

void check_session_name(const std::string& name) {
  // A name is one directory entry: no '/', no "." or "..", nothing a
  // terminal or a shell would read otherwise.
  auto ok = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
           c == '.';
  };
  if (name.empty() || name.size() > kMaxSessionName || name[0] == '.' ||
      !std::all_of(name.begin(), name.end(), ok))
    throw Error("--session " + base::printable(name.substr(0, kMaxSessionName)) + ": a name is 1 to " +
                std::to_string(kMaxSessionName) + " letters, digits, '-', '_' or '.', not starting with '.'");
}

nlohmann::json plan_to_json(const landlock::Plan& p) {
  nlohmann::json trees = nlohmann::json::array();
  for (const auto& t : p.trees) trees.push_back({{"path", t.path}, {"write", t.write}});
  return {{"trees", trees},
          {"hidden", p.hidden},
          {"scope_abstract_unix", p.scope_abstract_unix},
          {"scope_signal", p.scope_signal},
          {"limit_tcp", p.limit_tcp},
          {"connect_ports", p.connect_ports},
          {"mount_view", p.mount_view},
          {"file_system", p.file_system}};
}

landlock::Plan plan_from_json(const nlohmann::json& j) {
  landlock::Plan p;
  try {
    for (const auto& t : j.at("trees")) p.trees.push_back({t.at("path").get<std::string>(), t.at("write").get<bool>()});
    p.hidden = j.at("hidden").get<std::vector<std::string>>();
    p.scope_abstract_unix = j.at("scope_abstract_unix").get<bool>();
    p.scope_signal = j.at("scope_signal").get<bool>();
    p.limit_tcp = j.at("limit_tcp").get<bool>();
    p.connect_ports = j.at("connect_ports").get<std::vector<uint16_t>>();
    p.mount_view = j.at("mount_view").get<bool>();
    p.file_system = j.at("file_system").get<bool>();
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("husk sandbox: the session's Landlock plan: ") + e.what());
  }
  return p;
}

namespace {
constexpr char kProgramMagic[8] = {'H', 'U', 'S', 'K', 'S', 'F', 'L', '1'};
}

std::string program_to_bytes(const seccomp::Program& p) {
  if (p.notify) throw Error("husk sandbox: a session's filter cannot have a listener");
  std::string out(kProgramMagic, sizeof kProgramMagic);
  // The count too: a file cut after any instruction would be a shorter program the kernel may take.
  for (const uint32_t v : {static_cast<uint32_t>(p.flags), static_cast<uint32_t>(p.insns.size())})
    out.append(reinterpret_cast<const char*>(&v), sizeof v);
  out.append(reinterpret_cast<const char*>(p.insns.data()), p.insns.size() * sizeof(sock_filter));
  return out;
}

seccomp::Program program_from_bytes(const std::string& bytes) {
  const size_t head = sizeof kProgramMagic + 2 * sizeof(uint32_t);
  const size_t rest = bytes.size() < head ? 0 : bytes.size() - head;
  uint32_t count = 0;
  if (rest) std::memcpy(&count, bytes.data() + sizeof kProgramMagic + sizeof(uint32_t), sizeof count);
  if (rest == 0 || rest != count * sizeof(sock_filter) || count > BPF_MAXINSNS ||
      std::memcmp(bytes.data(), kProgramMagic, sizeof kProgramMagic) != 0)
    throw Error("husk sandbox: the session's seccomp filter is malformed (" + std::to_string(bytes.size()) +
                " bytes)");
  seccomp::Program p;
  uint32_t flags;
  std::memcpy(&flags, bytes.data() + sizeof kProgramMagic, sizeof flags);
  p.flags = flags;
  p.insns.resize(rest / sizeof(sock_filter));
  std::memcpy(p.insns.data(), bytes.data() + head, rest);
  return p;
}

}  // namespace husk::rt
