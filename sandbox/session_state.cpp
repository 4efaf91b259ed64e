// What a session keeps between its commands: its name's rules and the
// Landlock plan each command builds again, as JSON. Pure.
#include <algorithm>

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
          {"mount_view", p.mount_view}};
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
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("husk sandbox: the session's Landlock plan: ") + e.what());
  }
  return p;
}

}  // namespace husk::rt
