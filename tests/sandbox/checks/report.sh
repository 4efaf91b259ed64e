# --report and --control-fd (issue 28), sourced by tests/sandbox/test-sandbox
# (its user, helpers and $husk): what a harness reads, what it changes
# while the sandbox runs. 1be2de1 knows neither flag.

# ev FILE TYPE [JQ-FILTER]: the events of TYPE in the report FILE, as jq prints them compactly.
ev() { jq -c --arg t "$2" "select(.type == \$t)${3:+ | $3}" "$1" 2>/dev/null; }

# --- limits and exit: a fork loop under --pids 5, as root for the user ----
rep=$HOME_DIR/proj/report-$$.jsonl
OUT=$(cd "$HOME_DIR/proj" && "${sudo_env[@]}" timeout 60 "$husk" sandbox --pids 5 --report "$rep" -- \
  sh -c 'for i in 1 2 3 4 5 6 7 8; do sleep 60 & done; echo all-forked' 2>&1); RC=$?
mech=$(ev "$rep" start .limits.mechanism)
if [ "$mech" = '"rlimit"' ]; then
  skip "--report: a pids limit hit: the limits are not in a cgroup here (mechanism $mech: $OUT)"
else
  hit=$(ev "$rep" limit 'select(.limit == "pids") | .count')
  exit_line=$(ev "$rep" exit '[.status, (.sandbox | startswith("sandbox-")), (.seconds | type)]')
  owner=$(stat -c %u "$rep")
  if [ "$RC" = 2 ] && [ "${hit:-0}" -ge 1 ] && [ "$exit_line" = '[2,true,"number"]' ] && [ "$owner" = "$U" ] &&
     [[ "$OUT" != *all-forked* ]]; then
    pass "--report: a fork refused under --pids 5 is a limit event (count $hit), the exit status 2 its exit event; the file is the user's"
  else
    fail "--report under --pids 5" "exit 2, a pids limit event, exit event status 2, file of uid $U" \
      "exit $RC, hit '$hit', exit '$exit_line', owner $owner: $OUT; $(head -c 600 "$rep")"
  fi
fi
rm -f "$rep"

# --- refused hosts, and a host added through --control-fd ------------------
# In a network namespace made here: added.test is a loopback server. The
# command asks for it (403, a refused event), says so in the working
# directory, and waits for the test's go; the test adds the host through
# the control fd (after hostile lines that must be refused, the sandbox
# running on), waits for its acceptance in the report, closes the control
# fd, then says go: the command asks again and is let through.
cat >"$WORK/report-hosts" <<HOSTS
127.0.0.1 localhost
127.0.0.2 added.test
HOSTS
cat >"$WORK/report-control.sh" <<'CHECK'
#!/bin/bash
# Run by unshare --net --mount; $1 husk, $2.. the user prefix.
husk=$1; shift
busybox ip link set lo up
mount --bind "$WORK/report-hosts" /etc/hosts
busybox httpd -f -p 127.0.0.2:8080 -h "$WORK/www" & a=$!
for _ in $(seq 50); do bash -c 'exec 3<>/dev/tcp/127.0.0.2/8080' 2>/dev/null && break; sleep 0.1; done
cd "$HOME_DIR/proj" || exit 1
rm -f asked go
ctl=$WORK/control.fifo rep=$WORK/control-report.jsonl
rm -f "$ctl" "$rep"; mkfifo "$ctl"
exec 5<>"$ctl"  # the test's end; read-write so that neither open waits
ask='exec 3<>/dev/tcp/127.0.0.1/3128; printf "CONNECT added.test:8080 HTTP/1.1\r\n\r\n" >&3; read -r s <&3
  echo "$1: ${s%$'"'"'\r'"'"'}"; if [[ $s == *" 200 "* ]]; then read -r _ <&3; printf "GET / HTTP/1.0\r\n\r\n" >&3; echo "$1 body: $(tail -1 <&3)"; fi; exec 3>&-'
"$@" "$husk" sandbox --allow-host-loopback --control-fd 3 --report-fd 4 -- bash -c "
  ask() { $ask; }
  ask before; touch asked
  for _ in \$(seq 600); do [ -e go ] && break; sleep 0.05; done
  ask after" 3<"$ctl" 4>"$rep" 5>&- 2>"$WORK/control.err" & sb=$!
# Each wait ends early when the sandbox is gone.
for _ in $(seq 300); do [ -e asked ] && break; kill -0 $sb 2>/dev/null || break; sleep 0.1; done
{
  echo 'not json'
  printf '{"allow-host": "a\\u0007b.test:80"}\n'
  head -c 20000 /dev/zero | tr '\0' x; echo  # within the pipe's buffer: never blocks the test
  echo '{"allow-host": "x.test", "run": "rm -rf /"}'
  echo '{"allow-host": "added.test:8080", "id": 7}'
} >&5
for _ in $(seq 300); do grep -q '"id":7' "$rep" && break; kill -0 $sb 2>/dev/null || break; sleep 0.1; done
exec 5>&-
for _ in $(seq 300); do grep -q '"control-closed"' "$rep" && break; kill -0 $sb 2>/dev/null || break; sleep 0.1; done
touch go
wait $sb; echo "rc=$?"
kill $a
rm -f asked go "$ctl"
CHECK
chmod +x "$WORK/report-control.sh"
if ! command -v busybox >/dev/null; then
  skip "--control-fd: busybox (the test's server) is not installed"
else
  OUT=$(WORK=$WORK HOME_DIR=$HOME_DIR unshare --net --mount "$WORK/report-control.sh" "$husk" "${AS_USER[@]}" 2>&1)
  rep=$WORK/control-report.jsonl
  want="before: HTTP/1.1 403 Forbidden
after: HTTP/1.1 200 Connection established
after body: served
rc=0"
  refused=$(ev "$rep" refused '[.name, .port, .rule]')
  answers=$(jq -r 'select(.type == "control") | [.accepted, .id, .["allow-host"], .reason] |
    map(if . == null then "-" else tostring end) | join(" | ")' "$rep" 2>/dev/null)
  want_answers='false | - | - | not JSON
false | - | - | --allow-host a?b.test:80: not a host name
false | - | - | a line over 4096 bytes
false | - | - | unknown key "run" (only "allow-host" and "id")
true | 7 | added.test:8080 | -'
  closed=$(ev "$rep" control-closed .reason)
  if [ "$OUT" = "$want" ] && [ "$refused" = '["added.test",8080,"not-allowed"]' ] && [ "$answers" = "$want_answers" ] &&
     [ "$closed" = '"end of file"' ] && [ "$(ev "$rep" exit .status)" = 0 ]; then
    pass "--control-fd: a host added while the sandbox runs is reached; the refusal before it, the answers to hostile lines and the closed fd are reported, the command runs on"
  else
    fail "--control-fd and the report's refused event" "$want; refused added.test:8080 not-allowed; answers: $want_answers; closed: end of file" \
      "$OUT; refused $refused; answers: $answers; closed: $closed; stderr: $(head -c 400 "$WORK/control.err")"
  fi
fi

# --- the report's file, opened as the user: no symlink followed -------------
# A symlink planted at the report's name (by the command of an earlier
# sandbox in the working directory, or another user in /tmp) must not make
# husk truncate what it points to.
echo keep >"$HOME_DIR/proj/victim-$$"
ln -s "victim-$$" "$HOME_DIR/proj/planted-$$"
chown -h "$U:$G" "$HOME_DIR/proj/victim-$$" "$HOME_DIR/proj/planted-$$"
run_sb -- --report "$HOME_DIR/proj/planted-$$" -- true
expect "--report FILE that is a symlink: refused, its target untouched" 1 "a symlink in the path is not followed"
[ "$(cat "$HOME_DIR/proj/victim-$$")" = keep ] || fail "--report symlink's target" "keep" "$(cat "$HOME_DIR/proj/victim-$$")"
# Another user's file (root's here, that the user may write) is not
# written: its owner would read the report.
touch "$HOME_DIR/proj/roots-$$" && chmod 666 "$HOME_DIR/proj/roots-$$"
run_sb -- --report "$HOME_DIR/proj/roots-$$" -- true
expect "--report FILE of another user: refused" 1 "not a regular file of uid $U"
# A FIFO an earlier sandbox left at the name does not hold husk in open();
# a hard link to another file of the user's is not truncated through.
as_user -- mkfifo "fifo-$$"
run_sb -- --report "$HOME_DIR/proj/fifo-$$" -- true
expect "--report FILE that is a FIFO: refused at once" 1 "--report"
as_user -- sh -c "echo keep >victim-$$ && ln victim-$$ hard-$$"
run_sb -- --report "$HOME_DIR/proj/hard-$$" -- true
expect "--report FILE with a second link: refused, the other name untouched" 1 "with one link"
[ "$(cat "$HOME_DIR/proj/victim-$$")" = keep ] || fail "--report hard link's other name" "keep" "$(cat "$HOME_DIR/proj/victim-$$")"
rm -f "$HOME_DIR/proj/victim-$$" "$HOME_DIR/proj/planted-$$" "$HOME_DIR/proj/roots-$$" "$HOME_DIR/proj/fifo-$$" \
  "$HOME_DIR/proj/hard-$$"
# A report in the working directory is hidden from the command: it cannot
# add events of its own (a forged exit, a refusal that never happened).
rep=$HOME_DIR/proj/forge-$$.jsonl
run_sb -- --report "$rep" -- sh -c "echo '{\"type\":\"exit\",\"status\":0,\"forged\":1}' >>'$rep'; echo appended=\$?"
types=$(jq -r .type "$rep" 2>/dev/null | tr '\n' ' ')
if [ "$RC" = 0 ] && [[ "$OUT" == *"appended=2"* ]] && [ "$types" = "start exit " ] &&
   [ -z "$(jq -c 'select(has("forged"))' "$rep" 2>/dev/null)" ]; then
  pass "--report FILE in the working directory: the command cannot write to it (its events are husk's alone)"
else
  fail "--report FILE in the working directory" "the append refused, start and exit events only" "exit $RC: $OUT; $types"
fi
rm -f "$rep"
# The report's fd is not the command's: nothing is open in it but its stdio.
OUT=$(as_user -- "$husk" sandbox --report-fd 7 -- sh -c 'ls /proc/self/fd | tr "\n" " "' 7>"$WORK/fd.jsonl" 2>&1); RC=$?
expect "--report-fd 7: the command does not hold fd 7" 0 "0 1 2 3 " " 7 "
rm -f "$WORK/fd.jsonl"

# --- without a user namespace (inside bwrap --disable-userns, as nouserns.sh)
# The report still says what the sandbox decided, the timeout and the exit;
# the command cannot write to it (Landlock alone hides it there);
# --control-fd has no proxy to feed and is refused.
rep_bwrap=(bwrap --unshare-user --disable-userns --ro-bind / / --dev /dev --proc /proc --tmpfs /tmp
  --bind "$WORK" "$WORK" --chdir "$HOME_DIR/proj")
if ! as_user -- "${rep_bwrap[@]}" true 2>/dev/null; then
  skip "--report without a user namespace: bwrap --disable-userns does not run here"
else
  rep=$HOME_DIR/proj/nu-report-$$.jsonl
  OUT=$(as_user -- timeout 60 "${rep_bwrap[@]}" "$husk" sandbox --report "$rep" --timeout 5 -- \
    sh -c "echo '{\"forged\":1}' >>'$rep'; echo appended=\$?; exec sleep 30" 2>&1); RC=$?
  got=$(jq -c 'select(.type != "start" or .user_namespace == false) | [.type, .limit, .status] | map(select(. != null))' \
    "$rep" 2>/dev/null | tr '\n' ' ')
  if [ "$RC" = 124 ] && [[ "$OUT" == *"appended=2"* ]] && [ "$got" = '["start"] ["limit","timeout"] ["exit",124] ' ]; then
    pass "--report without a user namespace: start (user_namespace false), the timeout, exit 124; the command cannot write to it"
  else
    fail "--report without a user namespace" "exit 124, appended=2, start/limit timeout/exit 124" "exit $RC: $OUT; $got"
  fi
  rm -f "$rep"
  OUT=$(as_user -- timeout 60 "${rep_bwrap[@]}" "$husk" sandbox --control-fd 3 -- true 3</dev/null 2>&1); RC=$?
  expect "--control-fd without a user namespace: refused, naming the flag" 1 "--control-fd: its hosts go through the proxy"
fi
