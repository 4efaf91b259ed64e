// The parents of mounts inside a writable tree, pinned (sandbox/pins.cpp).
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "sandbox/no_userns.h"
#include "sandbox/persist.h"

using namespace husk::rt;
using ojson = nlohmann::ordered_json;

namespace {

ojson bind(const std::string& dest, const std::string& source, bool writable) {
  ojson options = {"rbind", "nosuid", "nodev"};
  if (!writable) options.push_back("rro");
  return {{"destination", dest}, {"type", "bind"}, {"source", source}, {"options", options}};
}

ojson tmpfs(const std::string& dest) {
  return {{"destination", dest}, {"type", "tmpfs"}, {"source", "tmpfs"}, {"options", {"ro", "mode=555"}}};
}

ojson hidden_file(const std::string& dest) {
  return {{"destination", dest}, {"type", "bind"}, {"source", "/e"}, {"options", {"bind", "ro"}}};
}

std::vector<std::string> lines(const ojson& mounts) {
  std::vector<std::string> out;
  for (const auto& m : mounts) {
    std::string line = m["destination"].get<std::string>() + " " + m["type"].get<std::string>();
    if (m["type"] == "bind") line += " " + m["source"].get<std::string>();
    if (m["options"].size() == 3 && m["options"][0] == "rbind") line += " pin";
    out.push_back(line);
  }
  return out;
}

// Every path is real but /p/link, a symlink to /p/real.
std::optional<std::string> real(const std::string& p) {
  if (p == "/p/link") return std::string("/p/real");
  if (p == "/p/gone") return std::nullopt;
  return p;
}

}  // namespace

TEST_CASE("pins: the directories between a writable tree and the mounts below it, once, before those mounts",
          "[sandbox]") {
  ojson mounts = ojson::array();
  mounts.push_back(bind("/usr", "/usr", false));
  mounts.push_back(bind("/p", "/p", true));                      // the working directory
  mounts.push_back(bind("/p/a/b/deny.sh", "/p/a/b/deny.sh", false));  // --deny-write
  mounts.push_back(bind("/p/ro", "/p/ro", false));               // --ro inside it
  mounts.push_back(bind("/p/.vscode", "/p/.vscode", false));      // a protected directory
  mounts.push_back(bind("/p/.claude", "/p/.claude", true));       // pinned by the persistence plan
  mounts.push_back(tmpfs("/p/a/secrets"));                        // a hidden directory
  mounts.push_back(hidden_file("/p/a/b/c/key"));
  mounts.push_back(hidden_file("/p/ro/x/key"));                   // below --ro: nothing to pin
  mounts.push_back(hidden_file("/p/.vscode/x/key"));              // below a read-only one: stays read-only
  mounts.push_back(hidden_file("/p/.claude/x/key"));              // in a pinned one: from there on
  mounts.push_back(hidden_file("/p/a/secrets/x/key"));            // in a hidden directory
  mounts.push_back(hidden_file("/p/link/key"));                   // through a symlink: where it lands
  mounts.push_back(hidden_file("/p/gone/key"));                   // not there
  mounts.push_back(hidden_file("/p/top"));                        // at the top: nothing
  mounts.push_back(hidden_file("/usr/x/key"));                    // in a read-only tree
  pin_parents(mounts, real);
  CHECK(lines(mounts) == std::vector<std::string>{
                             "/usr bind /usr",
                             "/p bind /p pin",
                             "/p/a bind /p/a pin",
                             "/p/a/b bind /p/a/b pin",
                             "/p/a/b/deny.sh bind /p/a/b/deny.sh",
                             "/p/ro bind /p/ro",
                             "/p/.vscode bind /p/.vscode",
                             "/p/.claude bind /p/.claude pin",
                             "/p/a/secrets tmpfs",
                             "/p/a/b/c bind /p/a/b/c pin",
                             "/p/a/b/c/key bind /e",
                             "/p/ro/x/key bind /e",
                             "/p/.vscode/x/key bind /e",
                             "/p/.claude/x bind /p/.claude/x pin",
                             "/p/.claude/x/key bind /e",
                             "/p/a/secrets/x/key bind /e",
                             "/p/real bind /p/real pin",
                             "/p/link/key bind /e",
                             "/p/gone/key bind /e",
                             "/p/top bind /e",
                             "/usr/x/key bind /e",
                         });
}

TEST_CASE("pins: a tree shown elsewhere pins from its source; an overlay is not pinned", "[sandbox]") {
  ojson mounts = ojson::array();
  mounts.push_back(bind("/w", "/host/w", true));
  mounts.push_back({{"destination", "/o"}, {"type", "overlay"}, {"source", "overlay"}, {"options", ojson::array()}});
  mounts.push_back(hidden_file("/w/d/key"));
  mounts.push_back(hidden_file("/o/d/key"));
  pin_parents(mounts, [](const std::string& p) { return std::optional<std::string>(p); });
  CHECK(lines(mounts) == std::vector<std::string>{"/w bind /host/w pin", "/o overlay", "/w/d bind /host/w/d pin",
                                                  "/w/d/key bind /e", "/o/d/key bind /e"});
}

TEST_CASE("pins: no Landlock tree of their own, without a user namespace either (the tree above grants it)",
          "[sandbox]") {
  ojson cfg = {{"mounts", ojson::array()}, {"process", {{"env", ojson::array()}}}};
  cfg["mounts"].push_back(bind("/p", "/p", true));
  cfg["mounts"].push_back(hidden_file("/p/a/key"));
  pin_parents(cfg["mounts"], [](const std::string& p) { return std::optional<std::string>(p); });
  REQUIRE(cfg["mounts"].size() == 3);
  std::vector<std::string> trees;
  for (const auto& t : no_userns_plan(cfg, {"/p/a/key"}, "/t").trees) trees.push_back(t.path);
  CHECK(std::count(trees.begin(), trees.end(), "/p") == 1);
  CHECK(std::count(trees.begin(), trees.end(), "/p/a") == 0);
}
