// husk-docs MAN_SRC OUT: writes OUT/man/*.scd (the pages of man.cpp, each
// followed by MAN_SRC/<page>.scd when there is one; MAN_SRC's other pages as
// they are) and OUT/completions/{husk.bash,_husk,husk.fish}. Build-time only.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include "cli/docs.h"

namespace fs = std::filesystem;
using namespace husk::rt::docs;

namespace {

fs::path g_src;

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string extra(const std::string& file) {
  const fs::path p = g_src / (file + ".scd");
  return fs::exists(p) ? read(p) : "";
}

void write(const fs::path& p, const std::string& text) {
  std::ofstream out(p);
  out << text;
  if (!out.flush()) throw std::runtime_error("husk-docs: cannot write " + p.string());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: husk-docs MAN_SRC OUT\n";
    return 2;
  }
  try {
    g_src = argv[1];
    const fs::path out = argv[2];
    fs::remove_all(out / "man");  // a page of a command no longer there goes too
    fs::create_directories(out / "man");
    fs::create_directories(out / "completions");
    std::set<std::string> generated;
    for (const auto& page : man_pages(extra)) {
      write(out / "man" / (page.file + ".scd"), page.scdoc);
      generated.insert(page.file + ".scd");
    }
    for (const auto& e : fs::directory_iterator(g_src))
      if (!generated.count(e.path().filename().string()))
        fs::copy_file(e.path(), out / "man" / e.path().filename(), fs::copy_options::overwrite_existing);
    write(out / "completions" / "husk.bash", bash_completion());
    write(out / "completions" / "_husk", zsh_completion());
    write(out / "completions" / "husk.fish", fish_completion());
  } catch (const std::exception& e) {
    std::cerr << e.what() << std::endl;
    return 1;
  }
  return 0;
}
