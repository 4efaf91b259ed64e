// What the commands that report print: state and list as runc prints them,
// ps through the host's ps, check's findings, features, events.
#include "cli/print.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "base/error.h"
#include "base/fd.h"
#include "cli/version.h"

namespace husk::rt {

using base::Fd;

namespace {

struct PsOutput {
  std::string out, err;
  int status;  // exit status; 128 + n when killed by signal n
};

// argv run without a shell (the arguments are the caller's), stdout through
// a pipe, stderr into a memfd read after the exit: neither can block ps.
PsOutput run_ps(const std::vector<std::string>& argv) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) throw sys_error("ps: pipe");
  Fd rd(p[0]), wr(p[1]);
  Fd err(::memfd_create("husk-ps-stderr", MFD_CLOEXEC));
  if (!err) throw sys_error("ps: memfd_create");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, wr.get(), STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&fa, err.get(), STDERR_FILENO);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid;
  int rc = ::posix_spawnp(&pid, "ps", &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) throw sys_error("ps: run ps", rc);
  wr.reset();
  PsOutput r;
  char buf[65536];
  ssize_t n;
  while ((n = ::read(rd.get(), buf, sizeof buf)) != 0) {
    if (n > 0) r.out.append(buf, static_cast<size_t>(n));
    else if (errno != EINTR) throw sys_error("ps: read its output");
  }
  int ws;
  while (::waitpid(pid, &ws, 0) < 0)
    if (errno != EINTR) throw sys_error("ps: wait for pid " + std::to_string(pid));
  r.status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
  while ((n = ::pread(err.get(), buf, sizeof buf, static_cast<off_t>(r.err.size()))) > 0)
    r.err.append(buf, static_cast<size_t>(n));
  return r;
}

// runc's table: columns padded to the widest cell, three spaces apart.
void print_table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width(rows.front().size(), 0);
  for (const auto& r : rows)
    for (size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
  for (const auto& r : rows) {
    std::string line;
    for (size_t i = 0; i < r.size(); ++i) {
      line += r[i];
      if (i + 1 < r.size()) line += std::string(width[i] - r[i].size() + 3, ' ');
    }
    std::cout << line << "\n";
  }
}

}  // namespace

int print_state(const spec::State& s) {
  std::cout << spec::state_to_json(s, true) << std::endl;
  return 0;
}

int print_list(const std::vector<spec::State>& states, const std::string& format, bool quiet) {
  if (quiet) {
    for (const auto& s : states) std::cout << s.id << "\n";
    return 0;
  }
  if (format == "json") {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& s : states) arr.push_back(nlohmann::json::parse(spec::state_to_json(s, false)));
    std::cout << arr.dump() << std::endl;
    return 0;
  }
  if (format != "table") throw Error("invalid format option \"" + format + "\"");
  std::vector<std::vector<std::string>> rows{{"ID", "PID", "STATUS", "BUNDLE", "CREATED", "OWNER"}};
  for (const auto& s : states) rows.push_back({s.id, std::to_string(s.pid), s.status, s.bundle, s.created, s.owner});
  print_table(rows);
  return 0;
}

int print_ps(const std::vector<pid_t>& pids, const std::string& format, const std::vector<std::string>& ps_args) {
  if (format == "json") {
    std::cout << nlohmann::json(pids).dump() << std::endl;
    return 0;
  }
  if (format != "table") throw Error("invalid format option \"" + format + "\"");
  // Like runc: run the host's ps and keep the header plus our processes' lines.
  std::vector<std::string> argv{"ps"};
  if (ps_args.empty()) argv.push_back("-ef");
  argv.insert(argv.end(), ps_args.begin(), ps_args.end());
  PsOutput ps = run_ps(argv);
  // Its stderr (a usage text on a bad option) becomes one line of our error.
  if (ps.status != 0) {
    while (!ps.err.empty() && std::isspace(static_cast<unsigned char>(ps.err.back()))) ps.err.pop_back();
    throw Error("ps: exit status " + std::to_string(ps.status) + ": " + quote(ps.err));
  }
  std::cerr << ps.err;  // a warning of a ps that went on
  std::set<pid_t> want(pids.begin(), pids.end());
  std::istringstream out(ps.out);
  std::string line;
  int pid_col = -1;
  while (std::getline(out, line)) {
    std::istringstream words(line);
    std::vector<std::string> cols{std::istream_iterator<std::string>(words), {}};
    if (pid_col < 0) {
      auto it = std::find(cols.begin(), cols.end(), "PID");
      if (it == cols.end()) throw Error("ps output has no PID column");
      pid_col = static_cast<int>(it - cols.begin());
      std::cout << line << '\n';
      continue;
    }
    if (static_cast<int>(cols.size()) > pid_col && want.count(atoi(cols[static_cast<size_t>(pid_col)].c_str())))
      std::cout << line << '\n';
  }
  std::cout.flush();
  return 0;
}

int print_check(const std::string& bundle, const CheckResult& r) {
  if (r.findings.empty())
    std::cout << bundle << ": no findings under policy " << r.policy_name << "\n";
  else
    std::cout << policy::findings_table(r.findings);
  return policy::violated(r.findings) ? 1 : 0;
}

int print_features(const spec::Features& f) {
  spec::Features with_commit = f;
  with_commit.annotations["org.husk.commit"] = build_commit();
  std::cout << spec::features_to_json(with_commit) << std::endl;
  return 0;
}

void print_event(const std::string& json_line) { std::cout << json_line << std::endl; }

void print_late_error(const std::string& error) {
  if (!error.empty()) std::cerr << error << std::endl;
}

}  // namespace husk::rt
