#include "base/mountinfo.h"

#include <sstream>

#include "base/file.h"

namespace husk::base {

namespace {

bool is_octal(char c) { return c >= '0' && c <= '7'; }

std::string unescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && is_octal(s[i + 1]) && is_octal(s[i + 2]) && is_octal(s[i + 3])) {
      out += static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

}  // namespace

std::vector<MountInfo> parse_mountinfo(const std::string& text) {
  std::vector<MountInfo> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    // Optional fields end at " - "; fstype, source and options follow it.
    auto sep = line.find(" - ");
    if (sep == std::string::npos) continue;
    std::istringstream pre(line.substr(0, sep)), post(line.substr(sep + 3));
    MountInfo m;
    std::string devno, root, mp;
    if (!(pre >> m.id >> m.parent >> devno >> root >> mp >> m.options)) continue;
    std::getline(pre >> std::ws, m.optional);
    if (!(post >> m.fstype >> m.source)) continue;
    post >> m.super_options;
    m.root = unescape(root);
    m.mount_point = unescape(mp);
    m.source = unescape(m.source);
    out.push_back(std::move(m));
  }
  return out;
}

std::vector<MountInfo> read_mountinfo(const std::string& path) { return parse_mountinfo(read_file(path)); }

}  // namespace husk::base
