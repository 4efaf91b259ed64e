# pid 1 of the sandbox (issue 27), sourced by tests/sandbox/test-sandbox: a
# small init in front of the command reaps orphans, passes signals on and
# exits with the command's status; --as-pid-1 makes the command pid 1 itself.
# A command that cannot run exits 127/126 as in a shell.

# --- status ------------------------------------------------------------------
run_sb -- -- sh -c 'kill -TERM $$'
expect "pid 1: a command that sends itself SIGTERM dies of it (exit 143, as bwrap)" 143
run_sb -- -- /usr/bin/python3 -c 'import os, signal; os.kill(os.getpid(), signal.SIGABRT)'
expect "pid 1: a command that aborts itself (SIGABRT) exits 134" 134
run_sb -- -- sh -c 'echo $$'
expect "pid 1: the command is not pid 1 (its pid is 2)" 0 2
run_sb -- -- true
expect "pid 1: exit status 0 passes through" 0
run_sb -- -- sh -c 'exit 3'
expect "pid 1: exit status 3 passes through" 3
run_sb -- --as-pid-1 -- sh -c 'kill -TERM $$; echo pid=$$ alive'
expect "--as-pid-1: the command is pid 1 and a signal it has no handler for does nothing" 0 "pid=1 alive"

# --- orphans -----------------------------------------------------------------
# A grandchild whose parent exits is an orphan of pid 1's: it must be reaped
# once it exits. The command waits (bounded) until its /proc entry is gone,
# the final state, so no sampling can miss it; a zombie never goes.
orphan='pipe(R, W) or die;
my $a = fork // die;
if (!$a) { my $b = fork // die; exit 0 unless $b; print W "$b\n"; exit 0 }
close W; chomp(my $b = <R>); waitpid($a, 0);
for (1 .. 500) { -e "/proc/$b" or do { print "reaped $b\n"; exit 0 }; select(undef, undef, undef, 0.01) }
open(my $s, "<", "/proc/$b/stat"); print "left: ", <$s>; exit 1'
run_sb -- -- perl -e "$orphan"
expect "pid 1: an orphan that exits is reaped (no zombie)" 0 reaped
# Signals the sandbox sends pid 1 are not passed back to the command: pid 1
# takes them in order, lowest first, so once the orphan's SIGCHLD (17) was
# handled the ones sent before it (TERM 15, INT 2, HUP 1) were too.
run_sb -- -- perl -e 'kill "TERM", 1; kill "INT", 1; kill "HUP", 1;'"$orphan"
expect "pid 1: signals from inside the sandbox to pid 1 are dropped, not passed back to the command" 0 reaped
run_sb -- --as-pid-1 -- perl -e "$orphan"
expect "--as-pid-1: the command is the orphans' parent (a zombie stays, as before)" 1 "left: "

# --- signals -----------------------------------------------------------------
# Sent once the command's trap is set (it says so); husk passes SIGTERM to
# pid 1, which passes it on.
rm -f "$WORK/pid1-trap.out"
bg_sandbox "$WORK/pid1-trap.out" -- sh -c 'trap "echo got-term; exit 3" TERM; echo ready; sleep 30 & wait'
sb=$!
for _ in $(seq 100); do grep -q ready "$WORK/pid1-trap.out" 2>/dev/null && break; sleep 0.1; done
kill -TERM "$sb"; wait "$sb"; rc=$?
[ "$rc" = 3 ] && grep -q got-term "$WORK/pid1-trap.out" && pass "pid 1: SIGTERM to husk reaches the command's trap (exit 3)" ||
  fail "pid 1: SIGTERM to husk reaches the command's trap" "exit 3, got-term" "exit $rc: $(cat "$WORK/pid1-trap.out")"
rm -f "$WORK/pid1-trap.out"
bg_sandbox "$WORK/pid1-trap.out" -- sh -c 'echo ready; exec sleep 30'
sb=$!
for _ in $(seq 100); do grep -q ready "$WORK/pid1-trap.out" 2>/dev/null && break; sleep 0.1; done
kill -USR1 "$sb"; wait "$sb"; rc=$?
[ "$rc" = 138 ] && pass "pid 1: SIGUSR1 to husk ends a command without a handler (exit 138)" ||
  fail "pid 1: SIGUSR1 to husk" "exit 138" "exit $rc: $(cat "$WORK/pid1-trap.out")"
start=$SECONDS
run_sb -- --timeout 1 -- sh -c 'trap "" TERM; sleep 30'
[ "$RC" = 124 ] && [ $((SECONDS - start)) -le 8 ] &&
  pass "pid 1: --timeout ends a command that ignores SIGTERM (SIGKILL after the grace, exit 124)" ||
  fail "pid 1: --timeout and a command ignoring SIGTERM" "exit 124 within 8 s" "exit $RC after $((SECONDS - start)) s: $OUT"

# --- pid 1 is out of the command's reach ---------------------------------------
# It never execs: it stays husk, not dumpable, so the command can read
# neither its executable nor its memory or environment (ptrace is refused
# by the seccomp filter as well).
run_sb -- -- sh -c 'readlink /proc/1/exe && echo exe-read; head -c 64 /proc/1/environ && echo env-read;
  perl -e "open(my \$m, \"<\", \"/proc/1/mem\") and print qq(mem-read\n)"; echo done'
expect "pid 1: the command cannot read pid 1's /proc/1/exe, environ or mem" 0 done "-read"

# --- a command that cannot run -----------------------------------------------
run_sb -- -- nosuchcmd-$$
expect "a command not found exits 127 and says so" 127 "husk sandbox: nosuchcmd-$$: command not found"
run_sb -- --as-pid-1 -- nosuchcmd-$$
expect "--as-pid-1: a command not found exits 127 too" 127 "husk sandbox: nosuchcmd-$$: command not found"
printf 'echo hi\n' >"$HOME_DIR/proj/notexec.sh"; chown "$U:$G" "$HOME_DIR/proj/notexec.sh"; chmod 644 "$HOME_DIR/proj/notexec.sh"
run_sb -- -- ./notexec.sh
expect "a file that is not executable exits 126 and says why" 126 "husk sandbox: ./notexec.sh: permission denied"
printf '#!/no/such/interpreter\n' >"$HOME_DIR/proj/badinterp.sh"; chown "$U:$G" "$HOME_DIR/proj/badinterp.sh"; chmod 755 "$HOME_DIR/proj/badinterp.sh"
run_sb -- -- ./badinterp.sh
expect "a script whose interpreter is missing exits 126 and names the cause" 126 "husk sandbox: ./badinterp.sh: cannot execute: no such file or directory (its interpreter"
rm -f "$HOME_DIR/proj/notexec.sh" "$HOME_DIR/proj/badinterp.sh"
