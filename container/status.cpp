#include "container/status.h"

#include "base/error.h"

namespace husk::rt {

namespace {
constexpr std::pair<Status, const char*> kNames[] = {{Status::creating, "creating"},
                                                     {Status::created, "created"},
                                                     {Status::running, "running"},
                                                     {Status::paused, "paused"},
                                                     {Status::stopped, "stopped"}};
}  // namespace

const char* status_name(Status s) {
  for (const auto& [status, name] : kNames)
    if (status == s) return name;
  return "unknown";
}

std::optional<Status> parse_status(std::string_view word) {
  for (const auto& [status, name] : kNames)
    if (word == name) return status;
  return std::nullopt;
}

std::optional<std::string> refusal(Verb verb, Status s, const std::string& id) {
  const std::string st = status_name(s);
  switch (verb) {
    case Verb::start:
      if (s == Status::created) return std::nullopt;
      if (s == Status::stopped) return "cannot start a container that has stopped";
      return "cannot start an already " + st + " container";
    case Verb::kill:
      if (s == Status::creating || s == Status::stopped) return "container not running";
      return std::nullopt;
    case Verb::exec:
    case Verb::exec_ignore_paused:
      if (s == Status::stopped) return "cannot exec in a stopped container";
      if (s == Status::creating) return "cannot exec in a container that is being created";
      if (s == Status::paused && verb == Verb::exec) return "cannot exec in a paused container (use --ignore-paused)";
      return std::nullopt;
    case Verb::pause:
      if (s != Status::running) return "container not running";
      return std::nullopt;
    case Verb::resume:
      if (s != Status::paused) return "container not paused";
      return std::nullopt;
    case Verb::update:
      if (s == Status::stopped) return "container not running";
      return std::nullopt;
    case Verb::remove:
      // A created container goes without --force, as runc and crun do it
      // (containerd's shim relies on it; runtime.md asks for an error).
      if (s == Status::stopped || s == Status::created) return std::nullopt;
      return "cannot delete container " + quote(id) + " that is not stopped: " + st;
  }
  return std::nullopt;
}

void require(Verb verb, Status s, const std::string& id) {
  if (auto why = refusal(verb, s, id)) throw Error(*why);
}

}  // namespace husk::rt
