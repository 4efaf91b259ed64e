#include "cli/docs.h"

#include <algorithm>
#include <sstream>

namespace husk::rt::docs {

std::vector<Flag> flags_of(const po::options_description& d) {
  std::vector<Flag> out;
  for (const auto& o : d.options()) {
    Flag f;
    f.long_name = o->long_name();
    const std::string s = o->canonical_display_name(po::command_line_style::allow_dash_for_short);
    if (s.size() == 2 && s[0] == '-') f.short_name = s.substr(1);
    f.what = o->description();
    f.takes_value = o->semantic()->max_tokens() > 0;
    f.repeatable = f.what.find("(repeatable)") != std::string::npos;
    // format_parameter() is "arg (=VALUE)" when there is a default.
    const std::string p = o->format_parameter();
    const size_t at = p.find("(=");
    if (at != std::string::npos && p.back() == ')') f.fallback = p.substr(at + 2, p.size() - at - 3);
    out.push_back(f);
  }
  return out;
}

std::vector<Flag> flags_of(const Command* c) {
  po::options_description d;
  if (!c) return flags_of(global_options());
  if (c->options) c->options(d);
  return flags_of(d);
}

namespace {

// A completion's description: the first clause, on one line.
std::string brief(std::string what) {
  for (const char* cut : {"; ", ": "})
    if (size_t at = what.find(cut); at != std::string::npos) what.resize(at);
  return what;
}

// Inside '...' in bash, zsh and fish ('\'' in the first two; fish escapes).
std::string quoted(const std::string& s, bool fish = false) {
  std::string out = "'";
  for (char ch : s) {
    if (ch == '\'') out += fish ? "\\'" : "'\\''";
    else if (fish && ch == '\\') out += "\\\\";
    else out += ch;
  }
  return out + "'";
}

std::string words(const std::vector<Flag>& flags, bool with_value_only) {
  std::string out;
  for (const auto& f : flags) {
    if (with_value_only && !f.takes_value) continue;
    out += " --" + f.long_name;
    if (!f.short_name.empty()) out += " -" + f.short_name;
  }
  return out.empty() ? out : out.substr(1);
}

bool takes_id(const Command& c) { return c.max_args > 0 && std::string(c.first_arg) == "a container ID"; }

}  // namespace

std::string bash_completion() {
  std::ostringstream o;
  const auto globals = flags_of(nullptr);
  std::string names;
  for (const auto& c : commands()) names += std::string(names.empty() ? "" : " ") + c.name;
  o << "# bash completion for husk, generated from its command table (husk-docs).\n"
    << "_husk() {\n"
    << "  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} cmd='' i\n"
    << "  local globals=" << quoted(words(globals, false)) << " global_values=" << quoted(words(globals, true))
    << "\n"
    << "  for ((i = 1; i < COMP_CWORD; i++)); do  # the command: the first word that is no global flag's\n"
    << "    case \" $global_values \" in *\" ${COMP_WORDS[i]} \"*) ((i++)); continue ;; esac\n"
    << "    [[ ${COMP_WORDS[i]} == -* ]] || { cmd=${COMP_WORDS[i]}; break; }\n"
    << "  done\n"
    << "  local j\n"
    << "  for ((j = i + 1; j < COMP_CWORD; j++)); do  # after --: a command line of its own\n"
    << "    [[ ${COMP_WORDS[j]} == -- ]] || continue\n"
    << "    if ((j + 1 == COMP_CWORD)); then COMPREPLY=($(compgen -c -- \"$cur\"))\n"
    << "    else compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- \"$cur\")); fi\n"
    << "    return\n"
    << "  done\n"
    << "  local opts='' values=$global_values ids=''\n"
    << "  case $cmd in\n"
    << "    '') opts=$globals ;;\n";
  for (const auto& c : commands()) {
    auto own = flags_of(&c);
    // The global flags the command does not define itself (spec's --rootless is a switch).
    std::vector<Flag> with_globals = own;
    for (const auto& g : globals)
      if (std::none_of(own.begin(), own.end(), [&](const Flag& f) { return f.long_name == g.long_name; }))
        with_globals.push_back(g);
    o << "    " << c.name << ") opts=" << quoted(words(with_globals, false))
      << " values=" << quoted(words(with_globals, true)) << (takes_id(c) ? " ids=1" : "") << " ;;\n";
  }
  o << "  esac\n"
    << "  if [[ \" $values \" == *\" $prev \"* ]]; then  # a flag's value: a file name\n"
    << "    compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- \"$cur\")); return\n"
    << "  fi\n"
    << "  if [[ $cur == -* ]]; then COMPREPLY=($(compgen -W \"$opts\" -- \"$cur\"))\n"
    << "  elif [[ -z $cmd ]]; then COMPREPLY=($(compgen -W " << quoted(names) << " -- \"$cur\"))\n"
    << "  elif [[ -n $ids ]]; then COMPREPLY=($(compgen -W \"$(husk list -q 2>/dev/null)\" -- \"$cur\"))\n"
    << "  else compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- \"$cur\"))\n"
    << "  fi\n"
    << "}\n"
    << "complete -F _husk husk\n";
  return o.str();
}

namespace {

// A flag as _arguments spells it: -b and --bundle exclude each other.
std::string zsh_spec(const Flag& f) {
  std::string what;
  for (char ch : brief(f.what)) {
    if (ch == '[' || ch == ']' || ch == ':' || ch == '\\') what += '\\';
    what += ch;
  }
  const std::string arg = f.takes_value ? ":" + f.long_name + ":_files" : "";
  const std::string both = f.short_name.empty() ? "--" + f.long_name : "-" + f.short_name + " --" + f.long_name;
  const std::string excl = f.repeatable ? "*" : "(" + both + ")";
  const std::string tail = "[" + what + "]" + arg;
  std::string out = " \\\n      " + quoted(excl + "--" + f.long_name + (f.takes_value ? "=" : "") + tail);
  if (!f.short_name.empty())
    out += " \\\n      " + quoted(excl + "-" + f.short_name + (f.takes_value ? "+" : "") + tail);
  return out;
}

}  // namespace

std::string zsh_completion() {
  std::ostringstream o;
  o << "#compdef husk\n# zsh completion for husk, generated from its command table (husk-docs).\n"
    << "_husk() {\n  local curcontext=$curcontext state line ret=1\n  local -a commands=(\n";
  for (const auto& c : commands()) o << "    " << quoted(std::string(c.name) + ":" + brief(c.what)) << "\n";
  o << "  )\n  _arguments -C";
  for (const auto& f : flags_of(nullptr)) o << zsh_spec(f);
  o << " \\\n      '1:command:->command' '*::argument:->argument' && ret=0\n"
    << "  case $state in\n"
    << "    command) _describe -t commands 'husk command' commands && ret=0 ;;\n"
    << "    argument)\n      case $words[1] in\n";
  for (const auto& c : commands()) {
    o << "        " << c.name << ") _arguments";
    for (const auto& f : flags_of(&c)) o << zsh_spec(f);
    if (takes_id(c)) o << " \\\n      '1:container:{compadd -- $(husk list -q 2>/dev/null)}'";
    o << " \\\n      '*:file:_files' && ret=0 ;;\n";
  }
  o << "      esac ;;\n  esac\n  return ret\n}\n_husk \"$@\"\n";
  return o.str();
}

std::string fish_completion() {
  std::ostringstream o;
  std::string names;
  for (const auto& c : commands()) names += std::string(names.empty() ? "" : " ") + c.name;
  o << "# fish completion for husk, generated from its command table (husk-docs).\n"
    << "complete -c husk -f\n";
  auto flag = [&](const Flag& f, const std::string& when) {
    o << "complete -c husk" << when << " -l " << f.long_name;
    if (!f.short_name.empty()) o << " -s " << f.short_name;
    o << (f.takes_value ? " -r -F" : "") << " -d " << quoted(brief(f.what), true) << "\n";
  };
  for (const auto& f : flags_of(nullptr)) flag(f, "");
  for (const auto& c : commands())
    o << "complete -c husk -n " << quoted("not __fish_seen_subcommand_from " + names, true) << " -a " << c.name
      << " -d " << quoted(brief(c.what), true) << "\n";
  for (const auto& c : commands()) {
    const std::string when = " -n " + quoted(std::string("__fish_seen_subcommand_from ") + c.name, true);
    for (const auto& f : flags_of(&c)) flag(f, when);
    if (takes_id(c)) o << "complete -c husk" << when << " -a '(husk list -q 2>/dev/null)'\n";
    else if (c.max_args > 0) o << "complete -c husk" << when << " -F\n";
  }
  return o.str();
}

}  // namespace husk::rt::docs
