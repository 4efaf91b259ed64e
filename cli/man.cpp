// Man pages in scdoc's markup (scdoc(5)), one per command and husk(8).
#include <set>
#include <sstream>

#include "cli/docs.h"

namespace husk::rt::docs {
namespace {

// Commands a user runs; the rest drive containers for an engine (section 8, as runc's).
const std::set<std::string> kUserCommands = {"sandbox", "connect", "check", "spec", "features"};

std::string section(const std::string& cmd) { return kUserCommands.count(cmd) ? "1" : "8"; }

// scdoc marks up with * and _ (and escapes with \), and a line starting
// with - is a list: help text is plain.
std::string plain(const std::string& s) {
  std::string out;
  for (char ch : s) {
    if (ch == '*' || ch == '_' || ch == '\\' || (ch == '-' && out.empty())) out += '\\';
    out += ch;
  }
  return out;
}

void options(std::ostringstream& o, const std::vector<Flag>& flags) {
  for (const auto& f : flags) {
    o << (f.short_name.empty() ? "" : "*-" + f.short_name + "*, ") << "*--" << plain(f.long_name) << "*"
      << (f.takes_value ? " _value_" : "") << "\n\t" << plain(f.what);
    if (!f.fallback.empty()) o << " (default: " << plain(f.fallback) << ")";
    o << "\n\n";
  }
}

Page command_page(const Command& c, const std::string& extra) {
  const std::string name = std::string("husk-") + c.name, sec = section(c.name);
  std::ostringstream o;
  o << name << "(" << sec << ")\n\n# NAME\n\n" << name << " - " << plain(c.what) << "\n\n# SYNOPSIS\n\n*husk "
    << c.name << "* " << plain(c.args) << "\n\nThe global options of *husk*(8) may also follow the command.\n\n";
  // A hand-written DESCRIPTION comes before the options (as bwrap(1) has
  // it), its other sections after them.
  size_t cut = extra.rfind("# DESCRIPTION", 0) == 0 ? extra.find("\n# ") : 0;
  cut = cut == std::string::npos ? extra.size() : cut;
  o << extra.substr(0, cut);
  const auto flags = flags_of(&c);
  if (!flags.empty()) {
    o << (cut ? "\n" : "") << "# OPTIONS\n\n";
    options(o, flags);
  }
  o << extra.substr(cut + (cut < extra.size() ? 1 : 0));
  o << "# SEE ALSO\n\n*husk*(8)" << (c.name == std::string("check") ? ", *husk-policy*(5)" : "") << "\n";
  return {name + "." + sec, o.str()};
}

Page main_page(const std::string& extra) {
  std::ostringstream o;
  o << "husk(8)\n\n# NAME\n\nhusk - an OCI container runtime, and a sandbox for untrusted commands\n\n"
    << "# SYNOPSIS\n\n*husk* [global options] _command_ [command options] [arguments...]\n\n"
    << "# DESCRIPTION\n\nhusk runs containers from OCI bundles with the command line of runc, for container "
    << "engines (containerd, podman, CRI-O, Docker), and runs commands from the host in a disposable "
    << "sandbox (*husk-sandbox*(1)). *husk* _command_ *--help* lists a command's options.\n\n"
    << "# GLOBAL OPTIONS\n\n";
  options(o, flags_of(nullptr));
  o << "# COMMANDS\n\n";
  for (const auto& c : commands())
    o << "*husk-" << c.name << "*(" << section(c.name) << ")\n\t" << plain(c.what) << "\n\n";
  o << extra << "# SEE ALSO\n\n*husk-policy*(5), *runc*(8), *crun*(1), *bwrap*(1)\n";
  return {"husk.8", o.str()};
}

}  // namespace

std::vector<Page> man_pages(std::string (*extra)(const std::string& file)) {
  std::vector<Page> pages{main_page(extra("husk.8"))};
  for (const auto& c : commands())
    pages.push_back(command_page(c, extra(std::string("husk-") + c.name + "." + section(c.name))));
  return pages;
}

}  // namespace husk::rt::docs
