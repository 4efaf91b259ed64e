# Shared by scripts/test and the suites it runs (tests/*/test-*, fuzz/run,
# conformance/engines/test-engines; the vm_* helpers for those that run a
# test binary inside the VM). Source it; `prog` names the caller.

vm_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
vm_repo=$(dirname "$vm_here")

# find_bin BUILD_DIR NAME: the built executable, or nothing.
find_bin() { find "$1" -name "$2" -type f -perm -u+x 2>/dev/null | head -n1; }

# apt_ensure LOG PKG...: install the Debian packages that are not installed
# yet (as root, with one `apt-get update` and retry); apt's output goes to
# LOG. Fails when a package is still missing: the caller says SKIP or FAIL.
apt_ensure() {
  local log=$1 p missing=()
  shift
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} = 0 ] && return 0
  [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null || { echo "not root with apt-get to install ${missing[*]}" >"$log"; return 1; }
  echo "$prog: installing ${missing[*]} with apt-get"
  export DEBIAN_FRONTEND=noninteractive
  timeout 600 apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends "${missing[@]}" >"$log" 2>&1 ||
    { timeout 120 apt-get -o DPkg::Lock::Timeout=600 update -q >>"$log" 2>&1 &&
      timeout 600 apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends "${missing[@]}" >>"$log" 2>&1; }
}
# apt_why LOG: apt's first error line, to name in a SKIP.
apt_why() { grep -m1 -E '^(E|W):' "$1" || tail -1 "$1"; }

# fuzz_toolchain: clang with libFuzzer (installed by scripts/setup when
# missing), else print why not and fail. fuzz/run needs it; tests/unit/test-asan
# uses it when there, so both share one sanitized build of the libraries.
fuzz_toolchain() {
  local probe ok=0
  HUSK_SETUP_FUZZ=1 "$vm_here/setup" >/dev/null || { echo "clang and libFuzzer (clang, libclang-rt-14-dev) are not installed"; return 1; }
  probe=$(mktemp -d)
  echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }' >"$probe/p.cpp"
  clang++ -fsanitize=fuzzer "$probe/p.cpp" -o "$probe/p" 2>"$probe/err" ||
    { echo "clang++ cannot link -fsanitize=fuzzer: $(head -1 "$probe/err")"; ok=1; }
  rm -rf "$probe"
  return $ok
}
# The build dir of that shared sanitized build (clang, HUSK_FUZZ: ASan + UBSan + coverage).
FUZZ_BUILD_DIR=${FUZZ_BUILD_DIR:-build-fuzz}

# ctest_skips BUILD_DIR [CTEST ARGS...]: ctest; a unit binary that skipped
# cases (exit 77, tests/skip.h) is "Skipped" to ctest and its output is not
# shown: print its SKIP lines from ctest's log and exit 77, as the other
# suites do, so a skip is never counted as a pass.
ctest_skips() {
  local dir=$1 log
  shift
  ctest --test-dir "$dir" --output-on-failure "$@" || return 1
  log=$dir/Testing/Temporary/LastTest.log
  grep -q '^SKIP: ' "$log" 2>/dev/null || return 0
  grep -h '^SKIP: ' "$log" | sort -u
  return 77
}

# vm_preflight: root and qemu (installed from Debian when missing), else
# print "SKIP: <reason>" and exit 0: a suite that cannot run here is skipped.
vm_preflight() {
  [ "$(id -u)" = 0 ] || { echo "SKIP: needs root to boot the VM"; exit 0; }
  command -v qemu-system-x86_64 >/dev/null && return 0
  export DEBIAN_FRONTEND=noninteractive
  if ! { apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends qemu-system-x86 >/dev/null 2>&1 ||
         { apt-get -o DPkg::Lock::Timeout=600 update -q >/dev/null 2>&1 && apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends qemu-system-x86 >/dev/null 2>&1; }; }; then
    echo "SKIP: qemu-system-x86_64 is not installed and apt-get cannot install it"
    exit 0
  fi
}

# vm_shares DIR...: -r options for the dirs the guest does not see already
# (the repo is shared; /usr is the host's).
vm_shares() {
  local d
  for d in "$@"; do
    case $d/ in "$vm_repo"/*|/usr/*) ;; *) printf '%s\n' -r "$d" ;; esac
  done
}

# vm_run CG2VM_ARGS...: scripts/cgroup2-vm, then exit with the guest command's
# status; a VM that cannot run here is a SKIP.
vm_run() {
  local rc
  set +e
  "$vm_here/cgroup2-vm" "$@"
  rc=$?
  set -e
  case $rc in
    125) echo "SKIP: the VM could not run here (see the messages above)"; exit 0 ;;
    124) echo "$prog: the VM timed out" >&2 ;;
  esac
  exit $rc
}
