// git's config syntax: the variables found, and where a hostile or broken
// file stops the reading as it stops git.
#include <catch2/catch.hpp>
#include <string>

#include "sandbox/gitconfig.h"

using namespace husk::rt;

namespace {

std::vector<std::string> vars(std::string_view text) {
  std::vector<std::string> out;
  for (const auto& e : parse_git_config(text))
    out.push_back(e.section + (e.subsection.empty() ? "" : "[" + e.subsection + "]") + "." + e.key +
                  (e.bare ? "" : "=" + e.value));
  return out;
}

}  // namespace

TEST_CASE("gitconfig: sections, subsections, keys and values as git reads them", "[sandbox]") {
  CHECK(vars("[Core]\n\tHooksPath = .husky\n") == std::vector<std::string>{"core.hookspath=.husky"});
  CHECK(vars("[includeIf \"gitdir:~/Work/\"]\npath = a\n") ==
        std::vector<std::string>{"includeif[gitdir:~/Work/].path=a"});
  CHECK(vars("[a.B]x=1") == std::vector<std::string>{"a[b].x=1"});  // the old form: lower-cased
  CHECK(vars("[s \"q\\\"\\\\x\"] k") == std::vector<std::string>{"s[q\"\\x].k"});
  CHECK(vars("[s]k = \" a  b \" c ; comment\n") == std::vector<std::string>{"s.k= a  b  c"});
  CHECK(vars("[s]k =  a \t b  # c\n") == std::vector<std::string>{"s.k=a   b"});  // each blank a space
  CHECK(vars("[s]k = a\\\n b\r\nl = \"x;#y\"") == std::vector<std::string>{"s.k=a b", "s.l=x;#y"});
  CHECK(vars("[s]k = \\t\\n\\b") == std::vector<std::string>{"s.k=\t\n\b"});
  CHECK(vars("\xef\xbb\xbf# c\n; c\n[s] k=1 \n [t]\n k=2") == std::vector<std::string>{"s.k=1", "t.k=2"});
  CHECK(vars("[s]k=") == std::vector<std::string>{"s.k="});
}

TEST_CASE("gitconfig: a syntax error ends the reading where git stops", "[sandbox]") {
  CHECK(vars("[s]a=1\nk = \"open\nb=2").size() == 1);   // a quote left open at the line's end
  CHECK(vars("[s]a=1\nk = \\q\nb=2").size() == 1);      // an unknown escape
  CHECK(vars("[s]a=1\n[t\nb=2").size() == 1);            // a section never closed
  CHECK(vars("[s]a=1\n[t \"x\nb=2").size() == 1);        // a subsection never closed
  CHECK(vars("[s]a=1\n[t \"x\" y]\nb=2").size() == 1);   // more after the subsection
  CHECK(vars("[s]a=1\n[t x]\nb=2").size() == 1);         // a subsection without quotes
  CHECK(vars("[s]a=1\n[]\nb=2").size() == 1);            // no name
  CHECK(vars("[s]a=1\nk ; c\nb=2").size() == 1);         // no "=" before a comment
  CHECK(vars("[s]a=1\n1k=2").size() == 1);               // a key starting with a digit
  CHECK(vars("k=1\n[s]a=1").empty());                   // a key outside any section
  CHECK(vars(std::string("[s]a=1\nk=x\0y\nb=2", 17)).size() == 1);  // a NUL
  CHECK(vars("[s]a=1\nk = x\\").size() == 2);            // a backslash at the very end: a line's end
  CHECK(vars(std::string(100000, '[')).empty());
  CHECK(vars("[s \"" + std::string(100000, 'x')).empty());
}

TEST_CASE("gitconfig: the paths a config names", "[sandbox]") {
  auto p = git_config_paths(
      "[core]\n hooksPath = .husky/_\n[include]\n path = ../.gitconfig.local\n"
      "[includeIf \"onbranch:main\"]\n path = \"../x y\"\n[include \"sub\"]\n path = not-an-include\n"
      "[other]\n path = no\n[core \"x\"]\n hookspath = no\n[include]\n path\n path =\n");
  CHECK(p.hooks == std::vector<std::string>{".husky/_"});
  CHECK(p.includes == std::vector<std::string>{"../.gitconfig.local", "../x y"});
}
