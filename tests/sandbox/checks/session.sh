# Session mode (issue 28): `husk sandbox --session NAME --start` makes one
# sandbox, `--session NAME -- CMD` runs commands in it, `--stop` removes it.
# Sourced by tests/sandbox/test-sandbox (its user, helpers and $husk).

# --- session mode --------------------------------------------------------------
SESS=s$$
SESS_DIR=$HOME_DIR/run/husk-sessions/$SESS
PROJ_BEFORE=$(ls -A "$HOME_DIR/proj")
run_sb -- --session "$SESS" --start --timeout 30
expect "session: --start returns once the sandbox runs" 0
keeper=$(jq -r .keeper "$SESS_DIR/state" 2>/dev/null)
sess_mode=$(stat -c '%U %a' "$HOME_DIR/run/husk-sessions" "$SESS_DIR" 2>/dev/null | sort -u | tr '\n' ' ')
[ "$sess_mode" = "$SB_USER 700 " ] && [ -n "$keeper" ] && kill -0 "$keeper" 2>/dev/null &&
  pass "session: its state is in the user's runtime directory, 0700, the keeper runs" ||
  fail "session: state 0700 in XDG_RUNTIME_DIR, the keeper running" "$SB_USER 700, a live keeper" "'$sess_mode', keeper '$keeper'"

run_sb -- --session "$SESS" -- sh -c 'echo one >/tmp/shared; echo two >from-session; echo $$'
first_pid=$OUT
run_sb -- --session "$SESS" -- sh -c 'cat /tmp/shared from-session; echo $$'
if [ "$RC" = 0 ] && [[ "$OUT" == one*two* ]] && [ "$(cat "$HOME_DIR/proj/from-session" 2>/dev/null)" = two ] &&
   [ "${OUT##*$'\n'}" != "$first_pid" ]; then
  pass "session: a command sees what an earlier one wrote in /tmp and the project (each a process of its own)"
else
  fail "session: commands share the writable directories" "one, two, another pid" "exit $RC: $OUT (first $first_pid)"
fi
rm -f "$HOME_DIR/proj/from-session"

run_sb -- --session "$SESS" -- cat "$HOME_DIR/.ssh/id_rsa"
expect "session: credentials stay hidden (~/.ssh/id_rsa)" 1 "cat: " "ssh-secret"
run_sb -- --session "$SESS" -- sh -c 'exit 7'
expect "session: a command's exit status passes through (7)" 7
run_sb -- --session "$SESS" -- sh -c 'kill -TERM $$'
expect "session: a command killed by a signal exits 128+N (143)" 143
run_sb -- --session "$SESS" -- sh -c 'read x; echo "got $x"' <<<"input"
expect "session: stdin is the caller's" 0 "got input"
run_sb -- --session "$SESS" -- no-such-command-$$
expect "session: a command that cannot run exits 127, as in a fresh sandbox" 127 "no-such-command-$$"
run_sb -- --session "$SESS" -- sh -c 'ls -A /sys/class/net | tr "\n" " "; grep -E "^(NoNewPrivs|Seccomp):" /proc/self/status | tr -s "\t\n" "  "'
expect "session: each command: loopback only, no_new_privs, its seccomp filter" 0 "lo NoNewPrivs: 1 Seccomp: 2"
run_sb -- --session "$SESS" -- sh -c 'ls -A '"$HOME_DIR/run"'; '"$husk"' sandbox --session '"$SESS"' --stop'
[ "$RC" != 0 ] && [[ "$OUT" != *husk-sessions* ]] && [ -n "$keeper" ] && kill -0 "$keeper" 2>/dev/null &&
  pass "session: a command sees no session state and cannot stop its session" ||
  fail "session: the control out of reach" "no husk-sessions, --stop refused, the keeper alive" "exit $RC: $OUT"
run_sb -- --session "$SESS" -- sh -c '(echo x >.envrc) 2>/dev/null && echo wrote; (mkdir -p .vscode/x) 2>/dev/null && echo made; echo done'
expect "session: persistence files cannot be made in the project (.envrc, .vscode)" 0 done wrote
[[ "$OUT" != *made* ]] || fail "session: .vscode cannot be made" "not made" "$OUT"
started=$(date +%s%N)
run_sb -- --session "$SESS" --timeout 1 -- sleep 20
took=$(( ($(date +%s%N) - started) / 1000000 ))
[ "$RC" = 124 ] && [ "$took" -lt 10000 ] && pass "session: --timeout 1 ends one command (exit 124, ${took} ms)" ||
  fail "session: --timeout per command" "exit 124 in under 10 s" "exit $RC in $took ms: $OUT"

# A signal to husk reaches the command: its trap says so once it is set,
# and husk is signalled only then.
(cd "$HOME_DIR/proj" && exec "${AS_USER[@]}" "$husk" sandbox --session "$SESS" -- \
  sh -c 'trap "echo got-term; exit 3" TERM; echo ready; while :; do sleep 0.1; done' >"$WORK/sess-sig.out" 2>&1) &
sig_husk=$!
for _ in $(seq 100); do grep -q ready "$WORK/sess-sig.out" 2>/dev/null && break; sleep 0.1; done
kill -TERM "$sig_husk"
wait "$sig_husk"; sig_rc=$?
[ "$sig_rc" = 3 ] && grep -q got-term "$WORK/sess-sig.out" &&
  pass "session: SIGTERM to husk reaches the command (its trap runs, exit 3)" ||
  fail "session: signals passed on" "got-term, exit 3" "exit $sig_rc: $(head -c 300 "$WORK/sess-sig.out")"
run_sb -- --session "$SESS" --rw /tmp -- true
expect "session: a flag that would change the walls for one command is refused" 1 "were set by its --start"
# The user's default settings set walls: those of --start; a command runs.
as_user -- sh -c 'mkdir -p ~/.config/husk && printf "hide: [nonexistent-ss]\npids: 50\n" >~/.config/husk/sandbox.yaml'
run_sb -- --session "$SESS" -- sh -c 'echo ran'
rm -rf "$HOME_DIR/.config/husk"
expect "session: the user's default settings do not stop a session's command" 0 ran

# Another user: neither joins, nor stops, nor sees the session, even
# pointed at the user's runtime directory.
OTHER=husk-sbo-$$
if useradd -M -d /nonexistent -c "$MARKER" -s /bin/sh "$OTHER"; then
  as_other=(setpriv --reuid "$(id -u "$OTHER")" --regid "$(id -g "$OTHER")" --clear-groups
    env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin XDG_RUNTIME_DIR="$HOME_DIR/run")
  o1=$(cd / && "${as_other[@]}" "$husk" sandbox --session "$SESS" -- id 2>&1); r1=$?
  o2=$(cd / && "${as_other[@]}" "$husk" sandbox --session "$SESS" --stop 2>&1); r2=$?
  o3=$(cd / && "${as_other[@]}" kill -TERM "$keeper" 2>&1); r3=$?
  if [ "$r1" != 0 ] && [ "$r2" != 0 ] && [ "$r3" != 0 ] && kill -0 "$keeper" 2>/dev/null; then
    pass "session: another user can neither join, stop nor signal it"
  else
    fail "session: another user" "join, stop and kill refused, the keeper alive" "$r1 $o1 / $r2 $o2 / $r3 $o3"
  fi
  userdel "$OTHER" 2>/dev/null
  rm -rf "/tmp/husk-$(id -u "$OTHER" 2>/dev/null || echo none)"
else
  fail "session: make a second user" "useradd works" "failed"
fi

run_sb -- --session "$SESS" --status
expect "session: --status says it runs" 0 running
run_sb -- --session "$SESS" --start
expect "session: a second --start of the same name is refused" 1 "runs already"
run_sb -- --session "bad$SESS" --start --rw /nonexistent-$$
[ "$RC" = 1 ] && [[ "$OUT" == *"--rw /nonexistent-$$: no such file"* ]] && [ ! -e "$HOME_DIR/run/husk-sessions/bad$SESS" ] &&
  pass "session: a --start that fails says why and leaves no session" ||
  fail "session: a failed --start" "exit 1, the flag's error, no session directory" "exit $RC: $OUT"
run_sb -- --session ../x --start
expect "session: a name with '/' or '..' is refused" 1 "a name is"
# The session's processes: the keeper, its children (the guardian, pid 1)
# and everything in the sandbox's pid namespace.
join=$(jq -r .join "$SESS_DIR/state" 2>/dev/null)
sess_ns=$(readlink "/proc/$join/ns/pid" 2>/dev/null)
sess_procs="$keeper $(pgrep -P "$keeper" | tr '\n' ' ')"
for p in /proc/[0-9]*; do
  [ -n "$sess_ns" ] && [ "$(readlink "$p/ns/pid" 2>/dev/null)" = "$sess_ns" ] && sess_procs+=" ${p#/proc/}"
done
run_sb -- --session "$SESS" --stop
stop_rc=$RC
# A zombie is not left: the keeper, detached, is reaped by the host's init.
# One still exiting on a loaded machine gets 5 s; one left running stays.
for _ in $(seq 50); do
  left_procs=""
  for p in $sess_procs; do
    st=$(awk '{ print $3 }' "/proc/$p/stat" 2>/dev/null)
    [ -n "$st" ] && [ "$st" != Z ] && left_procs+=" $p($(cat "/proc/$p/comm" 2>/dev/null))"
  done
  [ -z "$left_procs" ] && break
  sleep 0.1
done
left_mounts=$(grep -c husk-sandbox- /proc/self/mountinfo)
left_files=$(find "$HOME_DIR/run/husk-sessions" -mindepth 1 2>/dev/null; ls -d "$HOME_DIR"/run/husk-sandbox-* 2>/dev/null)
[ "$(ls -A "$HOME_DIR/proj")" = "$PROJ_BEFORE" ] || left_files+=" project: $(ls -A "$HOME_DIR/proj" | tr '\n' ' ') (was: $PROJ_BEFORE)"
if [ "$stop_rc" = 0 ] && [ -z "$left_procs" ] && [ "$left_mounts" = 0 ] && [ -z "$left_files" ] && [ -n "$join" ]; then
  pass "session: --stop leaves nothing (none of its $(echo $sess_procs | wc -w) processes, no mount, no state, no placeholder)"
else
  fail "session: --stop leaves nothing" "exit 0, nothing left" \
    "exit $stop_rc: $OUT; processes '$left_procs', mounts $left_mounts, files '$left_files'"
fi
run_sb -- --session "$SESS" -- true
expect "session: a stopped session runs nothing" 1 "session $SESS"

# Root runs a session for the user: its state is root's, the user cannot
# reach it; its cgroup (--pids) goes with --stop.
RSESS=r$$
(cd "$HOME_DIR/proj" && "$husk" sandbox --user "$U:$G" --pids 30 --session "$RSESS" --start) >"$WORK/rsess.out" 2>&1
rstart=$?
rkeeper=$(jq -r .keeper "/run/husk-sessions/$RSESS/state" 2>/dev/null)
rid=$(cd "$HOME_DIR/proj" && "$husk" sandbox --session "$RSESS" -- id -u 2>&1)
# Root's harness led (by a symlink the command planted, say) into a
# directory closed to the user: exec enters it before it becomes the user.
closed=$(mktemp -d /srv/husk-closed.XXXXXX)
mkdir "$closed/pub" && echo "closed-$$" >"$closed/pub/f" && chmod 755 "$closed/pub" && chmod 644 "$closed/pub/f"
OUT=$(cd "$closed/pub" && "$husk" sandbox --session "$RSESS" -- cat ./f 2>&1); RC=$?
rm -rf "$closed"
expect "session as root for a user: a working directory closed to the user is refused, not entered as root" 1 \
  "is not uid $U's to enter" "closed-$$"
run_sb -- --session "$RSESS" -- true
user_rc=$RC
rcg=$(ls -d /sys/fs/cgroup/pids/husk/sandbox-"$rkeeper" /sys/fs/cgroup/husk/sandbox-"$rkeeper" 2>/dev/null | head -1)
(cd / && "$husk" sandbox --session "$RSESS" --stop) >>"$WORK/rsess.out" 2>&1
rstop=$?
if [ "$rstart" = 0 ] && [ "$rid" = "$U" ] && [ "$user_rc" != 0 ] && [ "$rstop" = 0 ] && [ -n "$rcg" ] && [ ! -d "$rcg" ] &&
   [ "$(stat -c %U:%a /run/husk-sessions)" = root:700 ] && [ ! -e "/run/husk-sessions/$RSESS" ]; then
  pass "session as root for a user: commands run as the user, the user cannot reach it, --stop removes its cgroup"
else
  fail "session as root for a user" "start 0, uid $U, user refused, cgroup made then removed, stop 0" \
    "start $rstart, uid '$rid', user exit $user_rc, cgroup '$rcg', stop $rstop: $(head -c 300 "$WORK/rsess.out")"
fi

# --allow-nested at --start holds for each command: no Landlock file rules
# (the kernel would refuse every mount under them).
NSESS=n$$
run_sb -- --session "$NSESS" --start --allow-nested
run_sb -- --session "$NSESS" -- unshare -Urm sh -c 'mount -t tmpfs none /mnt && echo nested-mount-ok'
nested_rc=$RC nested_out=$OUT
run_sb -- --session "$NSESS" --stop
RC=$nested_rc OUT=$nested_out
expect "session: --allow-nested at --start lets each command make mounts in a namespace of its own" 0 nested-mount-ok
