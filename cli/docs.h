// Shell completions and man pages, generated from the command table and the
// global options: the text `--help` prints is their only source. husk-docs
// (docs_main.cpp) writes them at build time; husk itself does not carry them.
#pragma once

#include <string>
#include <vector>

#include "cli/command_table.h"

namespace husk::rt::docs {

// One flag as help shows it.
struct Flag {
  std::string long_name;   // without dashes
  std::string short_name;  // one letter, or empty
  std::string what;        // its program_options description
  std::string fallback;    // its default value as text, or empty
  bool takes_value = false;
  bool repeatable = false;
};

std::vector<Flag> flags_of(const po::options_description& d);
// The flags of a command, or the global ones for nullptr.
std::vector<Flag> flags_of(const Command* c);

std::string bash_completion();
std::string zsh_completion();
std::string fish_completion();

// A man page's file name ("husk-run.8") and its scdoc source.
struct Page {
  std::string file;
  std::string scdoc;
};
// husk(8) and one page per command. extra(file) returns hand-written scdoc
// appended to that page (the sandbox's defaults), or "".
std::vector<Page> man_pages(std::string (*extra)(const std::string& file));

}  // namespace husk::rt::docs
