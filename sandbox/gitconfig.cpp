// git's config syntax, the part that finds variables (gitconfig.h): pure.
#include "sandbox/gitconfig.h"

#include <cctype>

namespace husk::rt {
namespace {

// A cursor over the text; "\r\n" reads as "\n", as git reads it.
struct Reader {
  std::string_view s;
  size_t at = 0;
  bool end() const { return at >= s.size(); }
  char peek() const {
    if (end()) return '\n';
    return s[at] == '\r' && at + 1 < s.size() && s[at + 1] == '\n' ? '\n' : s[at];
  }
  char next() {
    const char c = peek();
    if (!end()) at += s[at] == '\r' && c == '\n' ? 2 : 1;
    return c;
  }
  void skip_line() {
    while (!end() && next() != '\n') {
    }
  }
};

char lower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }
bool name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-'; }

// "[section]", "[section \"sub\"]" or the old "[section.sub]" (its
// subsection lower-cased too), after the "[".
bool section(Reader& r, GitConfigEntry& e) {
  e.section.clear();
  e.subsection.clear();
  while (!r.end()) {
    const char c = r.next();
    if (c == ']') {
      if (size_t dot = e.section.find('.'); dot != std::string::npos) {
        e.subsection = e.section.substr(dot + 1);
        e.section.resize(dot);
      }
      return !e.section.empty();
    }
    if (std::isspace(static_cast<unsigned char>(c))) break;
    if (!name_char(c) && c != '.') return false;
    e.section += lower(c);
  }
  while (!r.end() && std::isspace(static_cast<unsigned char>(r.peek()))) r.next();
  if (r.end() || r.next() != '"') return false;
  while (!r.end()) {
    char c = r.next();
    if (c == '\n' || c == '\0') return false;
    if (c == '"') return !r.end() && r.next() == ']';
    if (c == '\\') {
      if (r.end() || (c = r.next()) == '\n') return false;
    }
    e.subsection += c;
  }
  return false;
}

// A value after "=": quotes, escapes, comments, a backslash at the end of a
// line continuing it; unquoted blanks at either end dropped, each inner one
// a space.
bool value(Reader& r, std::string& out) {
  out.clear();
  bool quoted = false, comment = false;
  size_t blanks = 0;
  for (;;) {
    if (r.end()) return !quoted;
    char c = r.next();
    if (c == '\n') return !quoted;
    if (comment) continue;
    if (c == '\0') return false;
    if (!quoted && std::isspace(static_cast<unsigned char>(c))) {
      if (!out.empty()) ++blanks;
      continue;
    }
    if (!quoted && (c == ';' || c == '#')) {
      comment = true;
      continue;
    }
    out.append(blanks, ' ');
    blanks = 0;
    if (c == '"') {
      quoted = !quoted;
      continue;
    }
    if (c == '\\') {
      c = r.next();  // at the end: "\n", as git reads it
      if (c == '\n') continue;
      if (c == 't') c = '\t';
      else if (c == 'n') c = '\n';
      else if (c == 'b') c = '\b';
      else if (c != '\\' && c != '"') return false;
    }
    out += c;
  }
}

}  // namespace

std::vector<GitConfigEntry> parse_git_config(std::string_view text) {
  std::vector<GitConfigEntry> out;
  Reader r{text};
  if (text.substr(0, 3) == "\xef\xbb\xbf") r.at = 3;  // a UTF-8 byte order mark
  GitConfigEntry e;
  bool in_section = false;
  while (!r.end()) {
    const char c = r.next();
    if (std::isspace(static_cast<unsigned char>(c))) continue;
    if (c == '#' || c == ';') {
      r.skip_line();
    } else if (c == '[') {
      if (!(in_section = section(r, e))) break;
    } else if (std::isalpha(static_cast<unsigned char>(c)) && in_section) {
      e.key.assign(1, lower(c));
      while (name_char(r.peek())) e.key += lower(r.next());
      while (r.peek() == ' ' || r.peek() == '\t') r.next();
      e.bare = r.peek() == '\n';
      e.value.clear();
      if (e.bare) r.next();
      else if (r.next() != '=' || !value(r, e.value)) break;
      out.push_back(e);
    } else {
      break;
    }
  }
  return out;
}

GitConfigPaths git_config_paths(std::string_view text) {
  GitConfigPaths out;
  for (const auto& e : parse_git_config(text)) {
    if (e.bare || e.value.empty()) continue;
    if (e.section == "core" && e.subsection.empty() && e.key == "hookspath") out.hooks.push_back(e.value);
    else if (e.key == "path" && ((e.section == "include" && e.subsection.empty()) || e.section == "includeif"))
      out.includes.push_back(e.value);
  }
  return out;
}

}  // namespace husk::rt
