// --session NAME's rules and the Landlock plan a session keeps for its commands.
#include <catch2/catch.hpp>

#include "base/error.h"
#include "sandbox/internal.h"

using namespace husk::rt;
using Catch::Matchers::Contains;

TEST_CASE("a session name is one plain directory entry") {
  for (const char* ok : {"a", "build-1", "ci_job.2", "A9"}) REQUIRE_NOTHROW(check_session_name(ok));
  for (const char* bad : {"", ".", "..", "../x", "a/b", "/abs", ".hidden", "a b", "a\nb", "é", "x;rm"})
    REQUIRE_THROWS_WITH(check_session_name(bad), Contains("--session"));
  // A name is said back without its control bytes (a terminal would act on them).
  try {
    check_session_name("a\x1b]0;pwned\x07");
    FAIL("accepted");
  } catch (const husk::Error& e) {
    REQUIRE(std::string(e.what()).find('\x1b') == std::string::npos);
  }
  REQUIRE_NOTHROW(check_session_name(std::string(kMaxSessionName, 'n')));
  REQUIRE_THROWS_WITH(check_session_name(std::string(kMaxSessionName + 1, 'n')), Contains("1 to 64"));
}

TEST_CASE("a session's Landlock plan survives its JSON") {
  husk::landlock::Plan p;
  p.trees = {{"/usr", false}, {"/home/ann/proj", true}};
  p.hidden = {"/home/ann/.ssh"};
  p.scope_abstract_unix = p.scope_signal = p.limit_tcp = true;
  p.connect_ports = {3128};
  p.mount_view = false;
  p.file_system = false;  // --allow-nested
  const husk::landlock::Plan q = plan_from_json(nlohmann::json::parse(plan_to_json(p).dump()));
  REQUIRE(q.trees.size() == 2);
  REQUIRE(q.trees[1].path == "/home/ann/proj");
  REQUIRE(q.trees[1].write);
  REQUIRE_FALSE(q.trees[0].write);
  REQUIRE(q.hidden == p.hidden);
  REQUIRE(q.scope_abstract_unix);
  REQUIRE(q.scope_signal);
  REQUIRE(q.limit_tcp);
  REQUIRE_FALSE(q.file_system);
  REQUIRE(q.connect_ports == std::vector<uint16_t>{3128});
  REQUIRE_FALSE(q.mount_view);
}

TEST_CASE("a session's state with a missing or mistyped plan key is an error, not an empty plan") {
  nlohmann::json j = plan_to_json(husk::landlock::Plan{});
  j.erase("trees");
  REQUIRE_THROWS_WITH(plan_from_json(j), Contains("Landlock plan"));
  j = plan_to_json(husk::landlock::Plan{});
  j["limit_tcp"] = "yes";
  REQUIRE_THROWS_WITH(plan_from_json(j), Contains("Landlock plan"));
}

TEST_CASE("a session's seccomp filter survives its bytes") {
  husk::seccomp::Program p;
  p.insns = {BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 0), BPF_STMT(BPF_RET | BPF_K, 0x7fff0000)};
  p.flags = 4;
  const husk::seccomp::Program q = program_from_bytes(program_to_bytes(p));
  REQUIRE(q.insns.size() == 2);
  REQUIRE(q.insns[1].k == 0x7fff0000u);
  REQUIRE(q.insns[0].code == (BPF_LD | BPF_W | BPF_ABS));
  REQUIRE(q.flags == 4u);
  REQUIRE_FALSE(q.notify);
}

TEST_CASE("a truncated, empty or foreign filter file is an error, never no filter") {
  husk::seccomp::Program p;
  p.insns = {BPF_STMT(BPF_RET | BPF_K, 0), BPF_STMT(BPF_RET | BPF_K, 0x7fff0000)};
  const std::string good = program_to_bytes(p);
  // Cut after its first instruction it would still be a program the kernel takes.
  for (const std::string& bad : {std::string(), good.substr(0, good.size() - 8), good.substr(0, good.size() - 1),
                                 good.substr(0, 16), "HUSKBPF1" + good.substr(8), good + std::string(8, '\0')})
    REQUIRE_THROWS_WITH(program_from_bytes(bad), Contains("seccomp filter is malformed"));
  // A filter with a listener needs its agent: a session never keeps one apart.
  p.notify = true;
  REQUIRE_THROWS_WITH(program_to_bytes(p), Contains("listener"));
}
