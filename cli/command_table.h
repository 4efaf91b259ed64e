// The command table of the command line: each command's flags, usage and
// handler. Internal to cli/ (its interface is cli.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "container/context.h"

namespace husk::rt {

namespace po = boost::program_options;

// What a command's handler gets: its flags, its positional arguments (the
// table has checked their number; args[0] is the ID of a command that takes
// one) and the global settings.
struct Invocation {
  const po::variables_map& vm;
  std::vector<std::string> args;
  const Context& g;
  int preserve_fds;

  bool flag(const char* n) const { return vm.count(n) && vm[n].as<bool>(); }
  std::string str(const char* n) const { return vm.count(n) ? vm[n].as<std::string>() : std::string(); }
  std::vector<std::string> strs(const char* n) const {
    return vm.count(n) ? vm[n].as<std::vector<std::string>>() : std::vector<std::string>{};
  }
  const std::string& id() const { return args[0]; }
  std::vector<std::string> after_id() const { return {args.begin() + 1, args.end()}; }
};

// max_args for `exec ID CMD...` and `ps ID [PS ARGS...]`: after the ID comes a
// command line whose flags are its own, not husk's.
constexpr size_t kCommandLine = SIZE_MAX;

struct Command {
  const char* name;
  const char* args;  // usage line after the name
  const char* what;
  void (*options)(po::options_description&);  // its own flags; nullptr: none
  int (*run)(const Invocation&);
  size_t max_args;  // positional arguments; the first is the container ID when > 0
  bool launches;    // starts container processes from husk's binary (see self_exe.h)
  const char* first_arg = "a container ID";  // what the first positional argument is
};

// The table, in the order help lists it.
const std::vector<Command>& commands();
// nullptr for an unknown name.
const Command* find_command(const std::string& name);
// The global options, before the command or after it (cli.cpp).
po::options_description global_options();

}  // namespace husk::rt
