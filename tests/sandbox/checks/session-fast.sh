# Session mode's per-command path (issue 28): each command reads the
# seccomp filter the keeper compiled once, kept in the session's directory.
# Sourced by tests/sandbox/test-sandbox (its user, helpers and $husk).

# --- session: the kept filter --------------------------------------------------
FSESS=f$$
FSESS_DIR=$HOME_DIR/run/husk-sessions/$FSESS
run_sb -- --session "$FSESS" --start
expect "session filter: --start keeps the compiled filter beside the state" 0
run_sb -- --session "$FSESS" -- sh -c 'grep -E "^(NoNewPrivs|Seccomp):" /proc/self/status | tr -s "\t\n" "  "; unshare -U true 2>/dev/null || echo refused'
expect "session filter: a command loads it (unshare refused as in a fresh sandbox)" 0 "NoNewPrivs: 1 Seccomp: 2 refused"
# A filter file cut short (by whole instructions: still a program the kernel
# could take) or gone, the user's own file: the command is refused, never run
# with less of a filter.
if [ -f "$FSESS_DIR/filter" ]; then
  cp "$FSESS_DIR/filter" "$WORK/filter.kept"
  head -c -8 "$WORK/filter.kept" >"$FSESS_DIR/filter"
fi
run_sb -- --session "$FSESS" -- sh -c 'echo ran-unfiltered'
expect "session filter: a truncated filter refuses the command" 1 "seccomp filter is malformed" ran-unfiltered
rm -f "$FSESS_DIR/filter"
run_sb -- --session "$FSESS" -- sh -c 'echo ran-unfiltered'
expect "session filter: a removed filter refuses the command" 1 "filter" ran-unfiltered
run_sb -- --session "$FSESS" --stop
expect "session filter: --stop" 0
[ ! -e "$FSESS_DIR" ] && pass "session filter: --stop removes the kept config and filter" ||
  fail "session filter: nothing left" "no $FSESS_DIR" "$(ls -A "$FSESS_DIR" 2>&1 | tr '\n' ' ')"
