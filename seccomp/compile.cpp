// Plan -> BPF with libseccomp (optionally cached on disk), and loading a BPF
// program with seccomp(2).
#include <fcntl.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>
#include <optional>

#include "base/fd.h"
#include "seccomp/seccomp.h"

namespace husk::seccomp {
namespace {

using base::Fd;

constexpr unsigned kHandledFlags =
    SECCOMP_FILTER_FLAG_TSYNC | SECCOMP_FILTER_FLAG_LOG | SECCOMP_FILTER_FLAG_SPEC_ALLOW;

// Above this many rules libseccomp's binary-tree layout gives the container
// shorter filter runs per syscall (libseccomp <= 2.5.4 mis-builds the tree
// with no rules, as runc notes).
constexpr size_t kTreeThreshold = 32;

void check_flags(unsigned flags, const char* stage) {
  // SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV would need libseccomp >= 2.6.
  if (flags & ~kHandledFlags)
    throw Error(std::string("seccomp: ") + stage + ": filter flags " +
                std::to_string(flags & ~kHandledFlags) + " not supported by libseccomp " +
                std::to_string(SCMP_VER_MAJOR) + "." + std::to_string(SCMP_VER_MINOR) + "." +
                std::to_string(SCMP_VER_MICRO));
}

struct CtxDeleter {
  void operator()(void* ctx) const { seccomp_release(ctx); }
};
using Ctx = std::unique_ptr<void, CtxDeleter>;

// libseccomp returns -errno.
void check(int rc, const std::string& what) {
  if (rc < 0) throw sys_error("seccomp: compile filter: " + what, -rc);
}

// ---- ENOSYS prologue ----
// A few instructions run before libseccomp's program: for each arch with a
// limit, syscall numbers above it return ERRNO(ENOSYS); everything else falls
// through to the filter unchanged.

// Conditional jumps name labels; offsets are resolved at the end.
class Assembler {
 public:
  static constexpr int kNext = -1;  // fall through
  int label() {
    at_.push_back(-1);
    return static_cast<int>(at_.size()) - 1;
  }
  void bind(int label) { at_[static_cast<size_t>(label)] = static_cast<long>(code_.size()); }
  void load_word(uint32_t offset) { emit(BPF_LD | BPF_W | BPF_ABS, offset); }
  void jump_if(uint16_t test, uint32_t k, int if_true, int if_false = kNext) {
    emit(BPF_JMP | test | BPF_K, k, if_true, if_false);
  }
  void jump(int label) { emit(BPF_JMP | BPF_JA, 0, label); }
  void ret(uint32_t k) { emit(BPF_RET | BPF_K, k); }

  std::vector<sock_filter> finish() {
    std::vector<sock_filter> out;
    for (size_t i = 0; i < code_.size(); ++i) {
      const Insn& in = code_[i];
      sock_filter f{in.code, 0, 0, in.k};
      auto offset = [&](int label) -> long {
        return label == kNext ? 0 : at_[static_cast<size_t>(label)] - static_cast<long>(i) - 1;
      };
      if (in.code == (BPF_JMP | BPF_JA)) {
        f.k = static_cast<uint32_t>(offset(in.if_true));
      } else if (BPF_CLASS(in.code) == BPF_JMP) {
        // The prologue is a few dozen instructions, far below the 255 limit.
        f.jt = static_cast<uint8_t>(offset(in.if_true));
        f.jf = static_cast<uint8_t>(offset(in.if_false));
      }
      out.push_back(f);
    }
    return out;
  }

 private:
  struct Insn {
    uint16_t code;
    uint32_t k;
    int if_true, if_false;
  };
  void emit(uint16_t code, uint32_t k, int if_true = kNext, int if_false = kNext) {
    code_.push_back({code, k, if_true, if_false});
  }
  std::vector<Insn> code_;
  std::vector<long> at_;
};

constexpr uint32_t kX32Bit = 0x40000000;  // x32 syscalls run as x86_64 with this bit set

std::vector<sock_filter> enosys_prologue(const std::vector<EnosysLimit>& limits) {
  // The kernel reports x32 as x86_64, so both share one section.
  struct Section {
    uint32_t audit_arch;
    std::optional<uint32_t> max_nr, max_x32_nr;
    int label = 0;
  };
  std::vector<Section> sections;
  for (const EnosysLimit& l : limits) {
    const bool x32 = l.arch == SCMP_ARCH_X32;
    const uint32_t audit = x32 ? SCMP_ARCH_X86_64 : l.arch;
    auto it = std::find_if(sections.begin(), sections.end(),
                           [&](const Section& s) { return s.audit_arch == audit; });
    if (it == sections.end()) it = sections.insert(sections.end(), {audit, {}, {}});
    (x32 ? it->max_x32_nr : it->max_nr) = l.max_nr;
  }

  Assembler a;
  const int filter = a.label(), enosys = a.label();
  a.load_word(offsetof(seccomp_data, arch));
  for (Section& s : sections) {
    s.label = a.label();
    a.jump_if(BPF_JEQ, s.audit_arch, s.label);
  }
  a.jump(filter);
  for (const Section& s : sections) {
    a.bind(s.label);
    a.load_word(offsetof(seccomp_data, nr));
    // s390 funnels syscall numbers the kernel does not know into 0.
    if (s.audit_arch == SCMP_ARCH_S390 || s.audit_arch == SCMP_ARCH_S390X)
      a.jump_if(BPF_JEQ, 0, enosys);
    if (s.audit_arch == SCMP_ARCH_X86_64) {
      const int x32 = a.label();
      a.jump_if(BPF_JSET, kX32Bit, x32);
      if (s.max_nr) a.jump_if(BPF_JGT, *s.max_nr, enosys);
      a.jump(filter);
      a.bind(x32);
      if (s.max_x32_nr) a.jump_if(BPF_JGT, *s.max_x32_nr, enosys);
    } else {
      a.jump_if(BPF_JGT, *s.max_nr, enosys);
    }
    a.jump(filter);
  }
  a.bind(enosys);
  a.ret(SCMP_ACT_ERRNO(ENOSYS));
  a.bind(filter);
  return a.finish();
}

std::vector<sock_filter> generate(const Plan& p) {
  Ctx ctx(seccomp_init(p.default_action));
  if (!ctx) throw Error("seccomp: compile filter: invalid default action");
  if (p.rules.size() > kTreeThreshold)
    check(seccomp_attr_set(ctx.get(), SCMP_FLTATR_CTL_OPTIMIZE, 2), "set binary tree optimization");
  for (uint32_t arch : p.arches) {
    int rc = seccomp_arch_add(ctx.get(), arch);
    if (rc != -EEXIST) check(rc, "add architecture");
  }
  std::vector<scmp_arg_cmp> conds;
  for (const Rule& r : p.rules) {
    conds.clear();
    for (const ArgCmp& a : r.args)
      conds.push_back({a.index, static_cast<scmp_compare>(a.op), a.value, a.value_two});
    check(seccomp_rule_add_array(ctx.get(), r.action, r.syscall_nr,
                                 static_cast<unsigned>(conds.size()), conds.data()),
          "add rule for " + r.name + " (linux.seccomp.syscalls[" + std::to_string(r.origin) + "])");
  }

  // libseccomp 2.5 exports only to an fd.
  Fd mem(memfd_create("husk-seccomp-bpf", MFD_CLOEXEC));
  if (!mem) throw sys_error("seccomp: compile filter: memfd_create");
  check(seccomp_export_bpf(ctx.get(), mem.get()), "export BPF");
  struct stat st;
  if (fstat(mem.get(), &st) != 0) throw sys_error("seccomp: compile filter: fstat");
  std::vector<sock_filter> insns;
  if (!p.enosys.empty()) insns = enosys_prologue(p.enosys);
  const size_t prologue = insns.size();
  insns.resize(prologue + static_cast<size_t>(st.st_size) / sizeof(sock_filter));
  const size_t bytes = (insns.size() - prologue) * sizeof(sock_filter);
  if (pread(mem.get(), insns.data() + prologue, bytes, 0) != static_cast<ssize_t>(bytes))
    throw sys_error("seccomp: compile filter: read BPF");
  if (insns.empty() || insns.size() > BPF_MAXINSNS)
    throw Error("seccomp: compile filter: " + std::to_string(insns.size()) +
                " BPF instructions, the kernel takes 1.." + std::to_string(BPF_MAXINSNS));
  return insns;
}

// ---- cache ----
// File: magic, key length, key, instructions. The key is everything the BPF
// depends on, compared whole, so a hash collision cannot pick a wrong filter.

// Bump the digit whenever husk changes the code it generates for a plan.
constexpr char kMagic[8] = {'H', 'U', 'S', 'K', 'B', 'P', 'F', '1'};

template <class T>
void put(std::string& out, const T& v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

std::string cache_key(const Plan& p) {
  std::string k;
  put(k, uint32_t{SCMP_VER_MAJOR * 10000 + SCMP_VER_MINOR * 100 + SCMP_VER_MICRO});
  put(k, seccomp_arch_native());
  put(k, p.default_action);
  put(k, static_cast<uint64_t>(p.arches.size()));
  for (uint32_t a : p.arches) put(k, a);
  put(k, static_cast<uint64_t>(p.enosys.size()));
  for (const EnosysLimit& l : p.enosys) {
    put(k, l.arch);
    put(k, l.max_nr);
  }
  put(k, static_cast<uint64_t>(p.rules.size()));
  for (const Rule& r : p.rules) {
    put(k, r.syscall_nr);
    put(k, r.action);
    put(k, static_cast<uint64_t>(r.args.size()));
    for (const ArgCmp& a : r.args) {
      put(k, a.index);
      put(k, a.op);
      put(k, a.value);
      put(k, a.value_two);
    }
  }
  return k;
}

std::string cache_name(const std::string& key) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : key) h = (h ^ c) * 1099511628211ull;
  char buf[32];
  snprintf(buf, sizeof buf, "%016llx.bpf", static_cast<unsigned long long>(h));
  return buf;
}

// Only trust what this euid owns and nobody else can write.
bool trusted(int fd, bool dir) {
  struct stat st;
  return fstat(fd, &st) == 0 && (dir ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode)) &&
         st.st_uid == geteuid() && (st.st_mode & 022) == 0;
}

// The cache directory, made 0700 below a parent that nobody else can use
// to swap it: one another user owns or may write (a /tmp/husk-UID planted
// before husk ever ran) could move a directory of theirs in under the name.
// The parent is ours or root's and open to no one else, or root's sticky
// /tmp. An empty Fd when there is none to trust.
Fd open_cache_dir(const std::string& path) {
  const size_t slash = path.rfind('/');
  const std::string parent = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  const std::string leaf = slash == std::string::npos ? path : path.substr(slash + 1);
  Fd above(open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  struct stat st;
  if (!above || leaf.empty() || fstat(above.get(), &st) != 0 || (st.st_uid != geteuid() && st.st_uid != 0) ||
      ((st.st_mode & 022) != 0 && !(st.st_uid == 0 && (st.st_mode & S_ISVTX))))
    return Fd();
  mkdirat(above.get(), leaf.c_str(), 0700);
  Fd dir(openat(above.get(), leaf.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (dir && !trusted(dir.get(), true)) return Fd();
  return dir;
}

bool read_cached(int dfd, const std::string& name, const std::string& key,
                 std::vector<sock_filter>& insns) {
  Fd f(openat(dfd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!f || !trusted(f.get(), false)) return false;
  struct stat st;
  if (fstat(f.get(), &st) != 0) return false;
  std::string data(static_cast<size_t>(st.st_size), '\0');
  if (pread(f.get(), data.data(), data.size(), 0) != static_cast<ssize_t>(data.size())) return false;
  const size_t head = sizeof kMagic + sizeof(uint64_t);
  if (data.size() < head || std::memcmp(data.data(), kMagic, sizeof kMagic) != 0) return false;
  uint64_t key_len;
  std::memcpy(&key_len, data.data() + sizeof kMagic, sizeof key_len);
  if (key_len != key.size() || data.size() < head + key_len ||
      data.compare(head, key_len, key) != 0)
    return false;
  const size_t rest = data.size() - head - key_len;
  if (rest == 0 || rest % sizeof(sock_filter) != 0 || rest / sizeof(sock_filter) > BPF_MAXINSNS)
    return false;
  insns.resize(rest / sizeof(sock_filter));
  std::memcpy(insns.data(), data.data() + head + key_len, rest);
  return true;
}

void write_cached(int dfd, const std::string& name, const std::string& key,
                  const std::vector<sock_filter>& insns) {
  std::string data(kMagic, sizeof kMagic);
  put(data, static_cast<uint64_t>(key.size()));
  data += key;
  data.append(reinterpret_cast<const char*>(insns.data()), insns.size() * sizeof(sock_filter));
  const std::string tmp = name + "." + std::to_string(getpid()) + ".tmp";
  Fd f(openat(dfd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!f) return;
  // Publish by rename so a concurrent start never reads half a file.
  if (write(f.get(), data.data(), data.size()) != static_cast<ssize_t>(data.size()) ||
      renameat(dfd, tmp.c_str(), dfd, name.c_str()) != 0)
    unlinkat(dfd, tmp.c_str(), 0);
}

}  // namespace

Program compile(const Plan& p, const std::string& cache_dir) {
  check_flags(p.flags, "compile filter");
  Program prog;
  prog.flags = p.flags;
  prog.notify = p.notify;
  if (cache_dir.empty()) {
    prog.insns = generate(p);
    return prog;
  }
  // A cache that cannot be made or is not safely ours is skipped, not fatal:
  // the filter is the same without it, only slower to build.
  Fd dir = open_cache_dir(cache_dir);
  if (!dir) {
    prog.insns = generate(p);
    return prog;
  }
  const std::string key = cache_key(p);
  const std::string name = cache_name(key);
  if (read_cached(dir.get(), name, key, prog.insns)) return prog;
  prog.insns = generate(p);
  write_cached(dir.get(), name, key, prog.insns);
  return prog;
}

int load(const Program& prog) {
  check_flags(prog.flags, "load filter");
  if (prog.insns.empty() || prog.insns.size() > BPF_MAXINSNS)
    throw Error("seccomp: load filter: " + std::to_string(prog.insns.size()) +
                " BPF instructions, the kernel takes 1.." + std::to_string(BPF_MAXINSNS));
  sock_fprog fprog{static_cast<unsigned short>(prog.insns.size()),
                   const_cast<sock_filter*>(prog.insns.data())};
  unsigned flags = prog.flags;
  if (prog.notify) {
    flags |= SECCOMP_FILTER_FLAG_NEW_LISTENER;
    // Plain TSYNC reports a failing thread id, which would be ambiguous with
    // the listener fd; ESRCH makes the failure an errno.
    if (flags & SECCOMP_FILTER_FLAG_TSYNC) flags |= SECCOMP_FILTER_FLAG_TSYNC_ESRCH;
  }
  long rc = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &fprog);
  if (rc < 0) throw sys_error("seccomp: load filter");
  if (!prog.notify) {
    if (rc > 0)
      throw Error("seccomp: load filter: thread " + std::to_string(rc) +
                      " could not be synchronized (SECCOMP_FILTER_FLAG_TSYNC)",
                  ESRCH);
    return -1;
  }
  // The kernel makes the listener close-on-exec (seccomp(2)). No syscall may
  // follow before the caller hands it to the agent: one the filter notifies
  // would wait for an agent that cannot have the fd yet, forever.
  return static_cast<int>(rc);
}

int load(const Plan& p) { return load(compile(p)); }

}  // namespace husk::seccomp
