// The status enum and runc's state machine: every command against every
// status, refused in the words runc 1.1.5 uses.
#include <catch2/catch.hpp>

#include <map>

#include "base/error.h"
#include "container/status.h"

using namespace husk::rt;

namespace {
constexpr Status kAll[] = {Status::creating, Status::created, Status::running, Status::paused, Status::stopped};
}

TEST_CASE("status words round-trip; nothing else parses") {
  for (Status s : kAll) CHECK(parse_status(status_name(s)) == s);
  CHECK_FALSE(parse_status("Running"));
  CHECK_FALSE(parse_status(""));
  CHECK_FALSE(parse_status("stopped "));
}

TEST_CASE("every command against every status") {
  // "" = allowed; else the refusal.
  const std::map<Verb, std::map<Status, std::string>> want = {
      {Verb::start,
       {{Status::creating, "cannot start an already creating container"},
        {Status::created, ""},
        {Status::running, "cannot start an already running container"},
        {Status::paused, "cannot start an already paused container"},
        {Status::stopped, "cannot start a container that has stopped"}}},
      {Verb::kill,
       {{Status::creating, "container not running"},
        {Status::created, ""},
        {Status::running, ""},
        {Status::paused, ""},
        {Status::stopped, "container not running"}}},
      {Verb::exec,
       {{Status::creating, "cannot exec in a container that is being created"},
        {Status::created, ""},
        {Status::running, ""},
        {Status::paused, "cannot exec in a paused container (use --ignore-paused)"},
        {Status::stopped, "cannot exec in a stopped container"}}},
      {Verb::exec_ignore_paused,
       {{Status::creating, "cannot exec in a container that is being created"},
        {Status::created, ""},
        {Status::running, ""},
        {Status::paused, ""},
        {Status::stopped, "cannot exec in a stopped container"}}},
      {Verb::pause,
       {{Status::creating, "container not running"},
        {Status::created, "container not running"},
        {Status::running, ""},
        {Status::paused, "container not running"},
        {Status::stopped, "container not running"}}},
      {Verb::resume,
       {{Status::creating, "container not paused"},
        {Status::created, "container not paused"},
        {Status::running, "container not paused"},
        {Status::paused, ""},
        {Status::stopped, "container not paused"}}},
      {Verb::update,
       {{Status::creating, ""},
        {Status::created, ""},
        {Status::running, ""},
        {Status::paused, ""},
        {Status::stopped, "container not running"}}},
      {Verb::remove,
       {{Status::creating, "cannot delete container \"c1\" that is not stopped: creating"},
        {Status::created, ""},
        {Status::running, "cannot delete container \"c1\" that is not stopped: running"},
        {Status::paused, "cannot delete container \"c1\" that is not stopped: paused"},
        {Status::stopped, ""}}},
  };
  for (const auto& [verb, by_status] : want) {
    for (Status s : kAll) {
      const std::string& expected = by_status.at(s);
      INFO("verb " << static_cast<int>(verb) << " in " << status_name(s));
      auto why = refusal(verb, s, "c1");
      CHECK(why.value_or("") == expected);
      CHECK(can(verb, s) == expected.empty());
      if (expected.empty())
        CHECK_NOTHROW(require(verb, s, "c1"));
      else
        CHECK_THROWS_WITH(require(verb, s, "c1"), expected);
    }
  }
}
