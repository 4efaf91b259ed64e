# Nested sandboxes (issue 28), sourced by tests/sandbox/test-sandbox: under
# --allow-nested husk, bwrap (plain and as srt runs it) and a user namespace
# of the command's own run inside, while the outer walls hold there: the
# hidden credentials cannot be unmounted, moved or bound out from below, the
# read-only host stays read-only, the network stays closed, Landlock's
# network rules stay. Without --allow-nested none of it may start.

# --- husk in husk ------------------------------------------------------------
run_sb -- --allow-nested -- "$husk" sandbox -- sh -c 'echo inner-ran; exit 7'
expect "nested: husk in husk runs the command, its exit status passes through" 7 inner-ran
run_sb -- --allow-nested -- "$husk" sandbox --allow-nested -- "$husk" sandbox -- sh -c 'echo deepest; exit 5'
expect "nested: husk in husk in husk" 5 deepest
OUT=$(cd "$HOME_DIR/proj" && timeout 60 "$husk" sandbox --user "$U:$G" --allow-nested -- \
  "$husk" sandbox -- sh -c 'id -u; exit 4' 2>&1); RC=$?
expect "nested: husk in husk when root runs the outer one for the user" 4 "$U"

# --- bwrap in husk -----------------------------------------------------------
if ! command -v bwrap >/dev/null; then
  skip "nested: bwrap is not installed"
else
  run_sb -- --allow-nested -- bwrap --unshare-all --ro-bind / / --proc /proc --dev /dev -- sh -c 'echo bwrap-ran; exit 6'
  expect "nested: bwrap --unshare-all --proc /proc in husk" 6 bwrap-ran
  # As srt runs it: its own pid and network namespaces, a fresh /tmp, the
  # writable directory bound in, a denied file under /dev/null.
  echo srt-denied >"$HOME_DIR/proj/nested-denied"; chown "$U:$G" "$HOME_DIR/proj/nested-denied"
  rm -f "$HOME_DIR/proj/nested-srt"
  run_sb -- --allow-nested -- bwrap --new-session --die-with-parent --unshare-net --unshare-pid --ro-bind / / \
    --tmpfs /tmp --bind "$HOME_DIR/proj" "$HOME_DIR/proj" --ro-bind /dev/null "$HOME_DIR/proj/nested-denied" \
    --dev /dev --proc /proc -- sh -c 'cat nested-denied; echo srt-wrote >nested-srt && echo pid=$$'
  if [ "$RC" = 0 ] && [[ "$OUT" == *pid=* ]] && [[ "$OUT" != *srt-denied* ]] &&
     [ "$(cat "$HOME_DIR/proj/nested-srt" 2>/dev/null)" = srt-wrote ]; then
    pass "nested: bwrap as srt runs it, in husk (its write reaches the host, its denied file is empty)"
  else
    fail "nested: bwrap as srt runs it" "exit 0, pid=, no srt-denied, proj/nested-srt = srt-wrote" "exit $RC: $OUT"
  fi
  rm -f "$HOME_DIR/proj/nested-denied" "$HOME_DIR/proj/nested-srt"
  OUT=$(cd "$HOME_DIR/proj" && timeout 60 "$husk" sandbox --user "$U:$G" --allow-nested -- \
    bwrap --unshare-all --ro-bind / / --proc /proc --dev /dev -- sh -c 'id -u; exit 6' 2>&1); RC=$?
  expect "nested: bwrap in husk when root runs husk for the user" 6 "$U"
fi

# --- the outer walls, inside a user and mount namespace of the command's own --
# Each way to uncover what a mount hides: the kernel locks the mounts a less
# privileged namespace inherits. "in-ns" says the namespace was entered.
hostile="echo in-ns
mkdir -p /tmp/mv /tmp/b /tmp/u /tmp/w /tmp/o
umount $HOME_DIR/.ssh; umount -l $HOME_DIR/.ssh; cat $HOME_DIR/.ssh/id_rsa
mount --move $HOME_DIR/.ssh /tmp/mv; cat /tmp/mv/id_rsa
mount --bind $HOME_DIR /tmp/b && cat /tmp/b/.ssh/id_rsa
mount -t overlay overlay -o lowerdir=$HOME_DIR,upperdir=/tmp/u,workdir=/tmp/w /tmp/o && cat /tmp/o/.ssh/id_rsa
umount -l $HOME_DIR; cat $HOME_DIR/.ssh/id_rsa
umount /etc/shadow; test -s /etc/shadow && echo shadow-shows
mount -o remount,bind,rw /usr; touch /usr/husk-nested-$$ && echo usr-written
true"
run_sb "$HOME_DIR" -- --allow-nested -- unshare -Urm sh -c "$hostile"
if [ "$RC" = 0 ] && [[ "$OUT" == in-ns* ]] && [[ "$OUT" != *"$secret"* ]] && [[ "$OUT" != *shadow-shows* ]] &&
   [[ "$OUT" != *usr-written* ]] && [ ! -e "/usr/husk-nested-$$" ]; then
  pass "nested: inside its own user namespace the command cannot unmount, move, bind or overlay ~/.ssh out of hiding, nor show /etc/shadow or write /usr"
else
  fail "nested: the hidden stays hidden inside a nested user namespace" "in-ns, no secret, no shadow-shows, no usr-written" "exit $RC: $OUT"
fi
rm -f "/usr/husk-nested-$$"

# Persistence files: read-only mounts over them, locked inside too.
if command -v git >/dev/null; then
  nested_repo=$(mktemp -d "$HOME_DIR/nested-repo.XXXXXX")
  chown "$U:$G" "$nested_repo"
  as_user "$nested_repo" -- git init -q . || fail "nested: make a repository" "ok" "failed"
  nested_before=$(cd "$nested_repo" && ls -A .git/hooks; md5sum .git/config)
  run_sb "$nested_repo" -- --allow-nested -- unshare -Urm sh -c 'echo in-ns
    umount .git/hooks; umount -l .git/config; mount -o remount,bind,rw .git/hooks
    mkdir -p /tmp/g; mount --bind . /tmp/g && ls /tmp/g/.git
    (echo "#!/bin/sh" >.git/hooks/post-checkout) 2>/dev/null && echo wrote-hook
    (echo "[core] fsmonitor = x" >>.git/config) 2>/dev/null && echo wrote-config; true'
  nested_after=$(cd "$nested_repo" && ls -A .git/hooks; md5sum .git/config)
  if [[ "$OUT" == in-ns* ]] && [[ "$OUT" != *wrote-* ]] && [ "$nested_before" = "$nested_after" ]; then
    pass "nested: .git/hooks and .git/config stay read-only inside a nested user namespace"
  else
    fail "nested: persistence files inside a nested user namespace" "in-ns, no wrote-, the repo as before" "exit $RC: $OUT"
  fi
  rm -rf "$nested_repo"
fi

# The network: closed inside too, whatever namespace the inner one keeps.
nested_port_file=$(mktemp "$WORK/nested-port.XXXXXX")
python3 -c 'import socket, sys
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(16)
print(s.getsockname()[1], flush=True)
while True:
    c, _ = s.accept(); c.sendall(b"nested-net-open\n"); c.close()' >"$nested_port_file" &
nested_server=$!
for _ in $(seq 50); do [ -s "$nested_port_file" ] && break; sleep 0.1; done
nport=$(cat "$nested_port_file")
reach="exec 3<>/dev/tcp/127.0.0.1/$nport && cat <&3"
OUT=$(as_user -- bash -c "$reach" 2>&1)
if [[ "$OUT" == *nested-net-open* ]]; then
  pass "nested: control: the user reaches a host port outside the sandbox"
  run_sb -- --allow-nested -- sh -c "$husk sandbox --net host -- bash -c 'echo in-husk; $reach';
    bwrap --ro-bind / / --dev /dev --proc /proc -- bash -c 'echo in-bwrap; $reach';
    unshare -Ur bash -c 'echo in-userns; $reach'; true"
  if [ "$RC" = 0 ] && [[ "$OUT" == *in-husk*in-bwrap*in-userns* ]] && [[ "$OUT" != *nested-net-open* ]]; then
    pass "nested: the host's network stays out of reach (inner husk --net host, bwrap sharing the network, unshare -U)"
  else
    fail "nested: the host's network stays out of reach" "in-husk, in-bwrap, in-userns, no nested-net-open" "exit $RC: $OUT"
  fi
else
  fail "nested: control: the user reaches a host port" "nested-net-open" "$OUT"
fi
kill "$nested_server" 2>/dev/null; wait "$nested_server" 2>/dev/null
rm -f "$nested_port_file"

# Landlock's network rules stay: with --allow-host, no TCP bind, even in a
# network namespace of the command's own.
run_sb -- --allow-nested --allow-host example.invalid -- unshare -Urn python3 -c '
import socket
print("in-ns", flush=True)
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(); print("bound")'
if [[ "$OUT" == in-ns* ]] && [[ "$OUT" == *PermissionError* ]] && [[ "$OUT" != *bound* ]]; then
  pass "nested: Landlock's TCP rules (--allow-host) hold inside a nested network namespace"
else
  fail "nested: Landlock's TCP rules hold inside" "in-ns, PermissionError, not bound" "exit $RC: $OUT"
fi

# --pids holds across the user namespaces made inside: 45 processes asked of
# 20, once the three forkers run (a file says go); each counts the processes
# of the sandbox after its forks.
nested_forker='print "in-ns\n"; select(undef, undef, undef, 0.01) until -e "/tmp/go";
my $refused = 0;
for (1 .. 15) { my $p = fork; if (!defined $p) { $refused++ } elsif (!$p) { sleep 2; exit 0 } }
opendir(my $d, "/proc"); my $n = grep { /^[0-9]+$/ } readdir $d;
print "count=$n refused=$refused\n"; 1 while wait != -1;'
run_sb -- --allow-nested --pids 20 -- sh -c 'for i in 1 2 3; do unshare -Ur perl -e "$0" & done; : >/tmp/go; wait' \
  "$nested_forker"
count=$(sed -n 's/^count=\([0-9]*\).*/\1/p' <<<"$OUT" | sort -n | tail -1)
if [ "$(grep -c '^count=' <<<"$OUT")" = 3 ] && [[ "$OUT" == *"refused="[1-9]* ]] && [ "$count" -le 20 ]; then
  pass "nested: --pids 20 holds for the processes of the user namespaces made inside"
else
  fail "nested: --pids holds inside" "three counts, a refused fork, at most 20 processes" "exit $RC: $OUT"
fi

# The kernel keyring stays out of reach (not namespaced: the keys of the
# user's uid), refused as ENOSYS so that a runtime inside skips its own.
keyring='import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
nr = {"x86_64": 250, "aarch64": 219}[os.uname().machine]
r = libc.syscall(nr, 0, -3, 0, 0, 0)  # keyctl(KEYCTL_GET_KEYRING_ID, the session keyring)
print("keyctl", r, ctypes.get_errno())'
run_sb -- --allow-nested -- python3 -c "$keyring"
expect "nested: keyctl stays refused under --allow-nested, as ENOSYS" 0 "keyctl -1 38"
run_sb -- -- python3 -c "$keyring"
expect "nested: keyctl refused without --allow-nested (EPERM)" 0 "keyctl -1 1"

# --- without --allow-nested --------------------------------------------------
run_sb -- -- sh -c 'unshare -Ur true && echo userns-made; unshare -m true && echo mountns-made;
  '"$husk"' sandbox -- true && echo husk-ran; bwrap --ro-bind / / -- true && echo bwrap-ran; true'
expect "nested: without --allow-nested no user namespace or mount namespace inside" 0 "" "-made"
# husk inside falls back to its mode without user namespaces: its walls
# (Landlock, seccomp) stack on the outer ones.
if [[ "$OUT" == *bwrap-ran* ]] || { [[ "$OUT" == *husk-ran* ]] && [[ "$OUT" != *"no user namespace here"* ]]; }; then
  fail "nested: without --allow-nested no sandbox inside but husk's own without user namespaces" \
    "no bwrap-ran; husk-ran only with 'no user namespace here'" "$OUT"
fi
run_sb -- -- sh -c 'mount -t tmpfs none /tmp 2>&1 || echo mount-refused'
expect "nested: without --allow-nested mounts stay refused" 0 mount-refused
OUT=$(cd "$HOME_DIR/proj" && timeout 60 "$husk" sandbox --user 0 --allow-nested -- true 2>&1); RC=$?
expect "nested: --allow-nested for a command run as root is refused" 1 "--allow-nested: the command would run as root"
