// A container's status (runtime.md's four, plus runc's "paused") and what
// each command may do in it: runc's state machine, refused in runc's words.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace husk::rt {

enum class Status { creating, created, running, paused, stopped };

// The word state.json and `state` use; parse_status is its inverse (nullopt
// for any other text).
const char* status_name(Status s);
std::optional<Status> parse_status(std::string_view word);

// The commands whose answer depends on the status. `kill` is the init's
// signal (kill --all also reaches what the cgroup holds after it exited);
// `exec` a paused container only with --ignore-paused; `remove` is delete
// without --force.
enum class Verb { start, kill, exec, exec_ignore_paused, pause, resume, update, remove };

// Why `verb` may not act on container `id` in status `s`, in runc's words;
// nullopt when it may.
std::optional<std::string> refusal(Verb verb, Status s, const std::string& id);
inline bool can(Verb verb, Status s) { return !refusal(verb, s, ""); }
// Throws the refusal as an Error.
void require(Verb verb, Status s, const std::string& id);

}  // namespace husk::rt
