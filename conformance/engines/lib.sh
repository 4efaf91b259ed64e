# Shared helpers for the engine end-to-end checks; sourced by run-engines.
# Every check prints "PASS: <what>" or "FAIL: <what>" with the command, the
# expectation and what happened; FAILED counts the failures.

FAILED=0
OUT=""   # output (stdout+stderr) of the last `capture`
RC=0     # exit code of the last `capture`

pass() { echo "PASS: $1"; }
fail() {  # fail WHAT CMD EXPECTED ACTUAL
  FAILED=$((FAILED + 1))
  echo "FAIL: $1"
  echo "      command:  $2"
  echo "      expected: $3"
  echo "      actual:   $(printf '%s' "$4" | head -c 2000 | sed '2,$s/^/                /')"
}
# Not "SKIP:" at line start: scripts/test reads that as the whole suite skipped.
skip() { echo "skipped check: $1"; }

# capture CMD...: run with a timeout, keep combined output in OUT, rc in RC.
capture() {
  local f
  f=$(mktemp "$WORK/out.XXXXXX")
  timeout --kill-after=5 "${CHECK_TIMEOUT:-60}" "$@" >"$f" 2>&1
  RC=$?
  OUT=$(cat "$f")
  rm -f "$f"
}

# check WHAT RC SUBSTR CMD...: CMD must exit with RC ("nz": any non-zero) and
# its output must contain SUBSTR (empty: no requirement).
check() {
  local what=$1 want_rc=$2 want_out=$3
  shift 3
  capture "$@"
  local ok=1
  if [ "$want_rc" = nz ]; then [ "$RC" -ne 0 ] || ok=0; else [ "$RC" -eq "$want_rc" ] || ok=0; fi
  if [ -n "$want_out" ] && [[ "$OUT" != *"$want_out"* ]]; then ok=0; fi
  if [ $ok = 1 ]; then
    pass "$what"
  else
    fail "$what" "$*" "exit $want_rc${want_out:+, output containing '$want_out'}" "exit $RC, output: $OUT"
  fi
  [ $ok = 1 ]
}

# expect_eq WHAT CMD-DESCRIPTION EXPECTED ACTUAL
expect_eq() {
  if [ "$3" = "$4" ]; then pass "$1"; else fail "$1" "$2" "$3" "$4"; fi
}

# cgroup_of PID CONTROLLER: the cgroup path of PID in a v1 controller
# hierarchy, or in the unified one when CONTROLLER is "".
cgroup_of() {
  if [ -n "$2" ]; then
    awk -F: -v c="$2" '{ n = split($2, a, ","); for (i = 1; i <= n; i++) if (a[i] == c) print $3 }' "/proc/$1/cgroup"
  else
    awk -F: '$1 == "0" { print $3 }' "/proc/$1/cgroup"
  fi
}

# cgroup_file PID V1-CONTROLLER V1-FILE V2-FILE: host path of a limit file
# of PID's cgroup, v1 when that controller is mounted, else cgroup2.
cgroup_file() {
  local p
  p=$(cgroup_of "$1" "$2")
  if [ -n "$p" ] && [ -d "/sys/fs/cgroup/$2" ]; then
    echo "/sys/fs/cgroup/$2$p/$3"
  else
    p=$(cgroup_of "$1" "")
    if [ -d /sys/fs/cgroup/unified ]; then echo "/sys/fs/cgroup/unified$p/$4"; else echo "/sys/fs/cgroup$p/$4"; fi
  fi
}

# The cgroup of a container must be below our own test parent; anything
# else (above all the machine's process_api) would be a runtime bug.
check_cgroup_parent() {  # WHAT PID PREFIX
  local p
  p=$(cgroup_of "$2" memory)
  [ -n "$p" ] || p=$(cgroup_of "$2" "")
  if [[ "$p" == "$3"/* ]]; then pass "$1"; else fail "$1" "cat /proc/$2/cgroup" "a cgroup below $3" "$p"; fi
}

# Remove the cgroup directories of our test parent in every hierarchy,
# deepest first; only rmdir, so a cgroup that still has tasks stays (and
# is reported).
remove_cgroups() {  # ABSOLUTE-PARENT
  local d
  case "$1" in /husk-engine-test*) ;; *) echo "remove_cgroups: refusing $1" >&2; return 1 ;; esac
  for d in /sys/fs/cgroup/*"$1" /sys/fs/cgroup/"$1"; do
    [ -d "$d" ] || continue
    find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null
    [ -d "$d" ] && echo "warning: could not remove $d (still in use?)" >&2
  done
  return 0
}

# Pids of husk processes still alive whose command line contains PATTERN
# (our temp dir or state root): after the engines are done, any is a leak.
stray_husk() {
  ps -eo pid=,args= | awk -v h="$HUSK" -v p="$1" '$2 == h && index($0, p) { print $1 }'
}
check_no_stray_husk() {  # WHAT PATTERN
  local pids
  pids=$(stray_husk "$2")
  if [ -z "$pids" ]; then pass "$1"; return; fi
  fail "$1" "ps -eo pid,args" "no husk process left" "$(ps -o pid=,args= -p "$(echo $pids | tr ' ' ,)")"
  kill -9 $pids 2>/dev/null
}

# wait_serving PID TRIES CMD...: until CMD succeeds (0.2 s apart, TRIES times)
# while the daemon PID lives; fails when it died or never answered.
wait_serving() {
  local pid=$1 tries=$2 i
  shift 2
  for i in $(seq "$tries"); do
    "$@" >/dev/null 2>&1 && return 0
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.2
  done
  return 1
}
