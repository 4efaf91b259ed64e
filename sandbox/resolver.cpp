// The pure parts of the proxy's resolver: resolv.conf and hosts files, DNS
// messages. The messages come from the network: every read is bounds-checked.
#include "sandbox/resolver.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstring>
#include <sstream>

#include "base/error.h"

namespace husk::rt::dns {

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// An address literal, port `port`; false when `text` is none.
bool parse_address(const std::string& text, uint16_t port, sockaddr_storage& out) {
  out = {};
  auto* four = reinterpret_cast<sockaddr_in*>(&out);
  auto* six = reinterpret_cast<sockaddr_in6*>(&out);
  if (::inet_pton(AF_INET, text.c_str(), &four->sin_addr) == 1) {
    four->sin_family = AF_INET;
    four->sin_port = htons(port);
    return true;
  }
  if (::inet_pton(AF_INET6, text.c_str(), &six->sin6_addr) == 1) {
    six->sin6_family = AF_INET6;
    six->sin6_port = htons(port);
    return true;
  }
  return false;
}

// The words of each line, comments (from '#' or ';') left out.
std::vector<std::vector<std::string>> lines_of(const std::string& text) {
  std::vector<std::vector<std::string>> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    line = line.substr(0, line.find_first_of("#;"));
    std::istringstream words(line);
    std::vector<std::string> w;
    for (std::string s; words >> s;) w.push_back(s);
    if (!w.empty()) out.push_back(std::move(w));
  }
  return out;
}

int option_value(const std::string& opt, size_t prefix, int lo, int hi) {
  int v = 0;
  for (size_t i = prefix; i < opt.size() && i < prefix + 3; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(opt[i]))) break;
    v = v * 10 + (opt[i] - '0');
  }
  return std::clamp(v, lo, hi);
}

// A DNS message, read with bounds checks.
struct Reader {
  const std::string& m;
  size_t at = 0;
  uint8_t u8() {
    if (at >= m.size()) throw Error("DNS answer: cut short");
    return static_cast<uint8_t>(m[at++]);
  }
  uint16_t u16() {
    uint16_t hi = u8();
    return static_cast<uint16_t>(hi << 8 | u8());
  }
  void skip(size_t n) {
    if (n > m.size() - at) throw Error("DNS answer: cut short");
    at += n;
  }
  // A name, compression pointers followed (each strictly backwards: no
  // loops), as dotted lower case.
  std::string name() {
    std::string out;
    size_t pos = at, limit = m.size();
    bool jumped = false;
    for (;;) {
      if (pos >= limit) throw Error("DNS answer: a name runs past its end");
      uint8_t len = static_cast<uint8_t>(m[pos]);
      if ((len & 0xc0) == 0xc0) {
        if (pos + 1 >= m.size()) throw Error("DNS answer: cut short");
        size_t to = (len & 0x3fu) << 8 | static_cast<uint8_t>(m[pos + 1]);
        if (!jumped) at = pos + 2;
        if (to >= pos) throw Error("DNS answer: a name pointer that does not point back");
        jumped = true;
        limit = pos;
        pos = to;
        continue;
      }
      if (len & 0xc0) throw Error("DNS answer: an unknown label type");
      if (len == 0) break;
      if (pos + 1 + len > limit) throw Error("DNS answer: a name runs past its end");
      if (!out.empty()) out += '.';
      out.append(m, pos + 1, len);
      if (out.size() > 253) throw Error("DNS answer: a name over 253 bytes");
      pos += 1 + len;
    }
    if (!jumped) at = pos + 1;
    return lower(out);
  }
};

}  // namespace

ResolvConf parse_resolv_conf(const std::string& text) {
  ResolvConf c;
  for (const auto& w : lines_of(text)) {
    if (w[0] == "nameserver" && w.size() > 1 && c.servers.size() < 3) {
      sockaddr_storage s;
      if (parse_address(w[1], 53, s)) c.servers.push_back(s);
    } else if ((w[0] == "search" || w[0] == "domain") && w.size() > 1) {
      c.search.clear();  // the last of them applies
      for (size_t i = 1; i < w.size() && c.search.size() < 6; ++i) {
        std::string d = lower(w[i]);
        while (!d.empty() && d.back() == '.') d.pop_back();
        if (!d.empty()) c.search.push_back(d);
      }
    } else if (w[0] == "options") {
      for (size_t i = 1; i < w.size(); ++i) {
        const std::string& o = w[i];
        if (o.rfind("timeout:", 0) == 0) c.timeout = option_value(o, 8, 1, 30);
        if (o.rfind("attempts:", 0) == 0) c.attempts = option_value(o, 9, 1, 5);
      }
    }
  }
  if (c.servers.empty()) {
    sockaddr_storage s;
    parse_address("127.0.0.1", 53, s);
    c.servers.push_back(s);
  }
  return c;
}

std::vector<sockaddr_storage> hosts_lookup(const std::string& text, const std::string& name) {
  const std::string want = lower(name);
  std::vector<sockaddr_storage> four, six;
  for (const auto& w : lines_of(text)) {
    sockaddr_storage s;
    if (w.size() < 2 || !parse_address(w[0], 0, s)) continue;
    bool named = false;
    for (size_t i = 1; i < w.size() && !named; ++i) named = lower(w[i]) == want;
    if (named) (s.ss_family == AF_INET ? four : six).push_back(s);
  }
  four.insert(four.end(), six.begin(), six.end());
  return four;
}

std::vector<std::string> candidates(const std::string& name, const ResolvConf& conf) {
  if (!name.empty() && name.back() == '.') return {name.substr(0, name.size() - 1)};
  // The allow list judges the name as written: with a search domain added
  // (Kubernetes' ndots:5 tries it first) an allowed foo.example.com could
  // reach foo.example.com.default.svc.cluster.local. Only a single label
  // (an --allow-host of a short internal name) is looked up in them.
  if (name.find('.') != std::string::npos) return {name};
  std::vector<std::string> out;
  for (const auto& d : conf.search) out.push_back(name + "." + d);
  out.push_back(name);
  return out;
}

std::string build_query(uint16_t id, const std::string& name, uint16_t type) {
  if (name.empty() || name.size() > 253) throw Error("a name of " + std::to_string(name.size()) + " bytes");
  // id, flags: recursion desired, one question.
  std::string q = {static_cast<char>(id >> 8), static_cast<char>(id & 0xff), 1, 0, 0, 1, 0, 0, 0, 0, 0, 0};
  size_t start = 0;
  for (;;) {
    size_t dot = name.find('.', start);
    size_t len = (dot == std::string::npos ? name.size() : dot) - start;
    if (len == 0 || len > 63) throw Error("a label of " + std::to_string(len) + " bytes in the name");
    q += static_cast<char>(len);
    q.append(name, start, len);
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  q += '\0';
  q += {static_cast<char>(type >> 8), static_cast<char>(type & 0xff), 0, 1};
  return q;
}

Answer parse_answer(const std::string& msg, uint16_t id, const std::string& name, uint16_t type) {
  Reader r{msg};
  if (r.u16() != id) throw Error("DNS answer: another query's id");
  uint16_t flags = r.u16();
  if (!(flags & 0x8000) || (flags & 0x7800)) throw Error("DNS answer: not an answer to a standard query");
  Answer a;
  a.rcode = flags & 0xf;
  a.truncated = flags & 0x0200;
  uint16_t questions = r.u16(), answers = r.u16();
  r.skip(4);  // authority and additional counts
  // Some servers leave the question out of an error; an answer must echo it.
  if (questions == 0 && a.rcode != 0) return a;
  if (questions != 1) throw Error("DNS answer: " + std::to_string(questions) + " questions");
  std::string asked = lower(name);
  while (!asked.empty() && asked.back() == '.') asked.pop_back();
  if (r.name() != asked || r.u16() != type || r.u16() != 1) throw Error("DNS answer: to another question");
  if (a.truncated) return a;  // the rest may be cut anywhere: asked again over TCP
  for (uint16_t i = 0; i < answers; ++i) {
    r.name();
    uint16_t rtype = r.u16(), rclass = r.u16();
    r.skip(4);  // TTL
    uint16_t length = r.u16();
    size_t data = r.at;
    r.skip(length);
    if (rtype != type || rclass != 1) continue;  // a CNAME, or another class
    sockaddr_storage s{};
    if (type == kTypeA && length == 4) {
      auto* four = reinterpret_cast<sockaddr_in*>(&s);
      four->sin_family = AF_INET;
      std::memcpy(&four->sin_addr, msg.data() + data, 4);
    } else if (type == kTypeAAAA && length == 16) {
      auto* six = reinterpret_cast<sockaddr_in6*>(&s);
      six->sin6_family = AF_INET6;
      std::memcpy(&six->sin6_addr, msg.data() + data, 16);
    } else {
      throw Error("DNS answer: an address record of " + std::to_string(length) + " bytes");
    }
    a.addresses.push_back(s);
  }
  return a;
}

std::string describe(Failure f, int rcode) {
  switch (f) {
    case Failure::none: return "resolved";
    case Failure::not_found: return "no such name (NXDOMAIN)";
    case Failure::no_address: return "the name has no address (no A or AAAA record)";
    case Failure::timeout: return "no answer from the name servers of /etc/resolv.conf (timeout)";
    case Failure::unreachable: return "no name server of /etc/resolv.conf could be reached";
    case Failure::server_failure:
      if (rcode == 2) return "the name server failed (SERVFAIL)";
      if (rcode == 5) return "the name server refused the query (REFUSED)";
      if (rcode < 0) return "the name server's answer is malformed";
      return "the name server answered with error " + std::to_string(rcode);
  }
  return "unknown";
}

}  // namespace husk::rt::dns
