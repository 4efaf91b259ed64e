# Sourced by tests/sandbox/test-sandbox: the sandbox where no user namespace
# can be made (issue 27), shown inside bwrap --disable-userns (the host's
# user.max_user_namespaces is not ours to change). The outer bwrap shares the
# host's network; its / is read-only and its /tmp a tmpfs, so the test
# user's directories are bound in.

nu_bwrap=(bwrap --unshare-user --disable-userns --ro-bind / / --dev /dev --proc /proc --tmpfs /tmp
  --bind "$WORK" "$WORK" --bind "$SRV_DIR" "$SRV_DIR")
# nu_sb [DIR] -- ARGS...: `husk sandbox ARGS` as the user inside the outer bwrap; OUT, RC.
nu_sb() {
  local dir=$HOME_DIR/proj
  if [ "$1" != -- ]; then dir=$1; shift; fi
  OUT=$(as_user "$dir" -- timeout 60 "${nu_bwrap[@]}" --chdir "$dir" "$husk" sandbox "${@:2}" 2>&1); RC=$?
}

if ! as_user -- "${nu_bwrap[@]}" true 2>/dev/null; then
  skip "no user namespace: bwrap --disable-userns does not run here"
else
  OUT=$(as_user -- "${nu_bwrap[@]}" unshare --user true 2>&1); RC=$?
  expect "no user namespace: control: none can be made inside the outer bwrap" 1

  nu_sb -- -- sh -c 'id -u; exit 7'
  expect "no user namespace: the sandbox runs the command, its exit status passes through" 7 "$(printf '%s' "$U")"
  if [ "$(grep -c 'no user namespace here' <<<"$OUT")" = 1 ] && [[ "$OUT" == *"running with Landlock ABI"* ]]; then
    pass "no user namespace: says once which walls it has"
  else
    fail "no user namespace: says once which walls it has" "one 'no user namespace here (...): running with Landlock ABI N' line" "$OUT"
  fi

  nu_sb -- -- sh -c "cat $HOME_DIR/.ssh/id_rsa; cat keys/id_rsa; cat /etc/shadow; true"
  expect "no user namespace: ~/.ssh/id_rsa (by name, through a symlink in the project) and /etc/shadow unreadable" 0 \
    "" "$secret"
  nu_sb "$HOME_DIR" -- -- sh -c "cat .ssh/id_rsa; echo x >.ssh/planted; cat run/bus; echo y >proj/nu-deep && echo deep"
  expect "no user namespace: the home as working directory: ~/.ssh neither readable nor writable, XDG_RUNTIME_DIR hidden" \
    0 "deep" "$secret"
  [[ "$OUT" == *stand-in* ]] && fail "no user namespace: XDG_RUNTIME_DIR hidden" "run/bus unreadable" "$OUT"
  [ -e "$HOME_DIR/.ssh/planted" ] && fail "no user namespace: ~/.ssh not writable" "no $HOME_DIR/.ssh/planted" "it exists"
  rm -f "$HOME_DIR/.ssh/planted" "$HOME_DIR/proj/nu-deep"

  # --hide inside the (writable) project: no mount hides it, Landlock alone.
  # Beside it, what exists stays writable; nothing new at the top (said).
  as_user -- sh -c 'mkdir -p nu-hidden && echo hidden-$$ >nu-hidden/f && touch nu-ok'
  nu_sb -- --hide nu-hidden -- sh -c 'cat nu-hidden/f; echo x >nu-hidden/g; mv nu-hidden nu-shown; echo y >nu-ok && echo ok'
  expect "no user namespace: --hide inside the project: neither read, written nor moved away; the rest writable" 0 \
    "holds hidden paths" "hidden-"
  [ -e "$HOME_DIR/proj/nu-hidden/g" ] || [ -e "$HOME_DIR/proj/nu-shown" ] &&
    fail "no user namespace: --hide inside the project" "nu-hidden unchanged" "$(ls "$HOME_DIR/proj")"
  rm -rf "$HOME_DIR/proj/nu-hidden" "$HOME_DIR/proj/nu-shown" "$HOME_DIR/proj/nu-ok"

  # A home its user may enter but not list: Landlock cannot walk around
  # .ssh there, and without a mount view nothing grants it whole.
  chmod 0311 "$HOME_DIR"
  nu_sb "$HOME_DIR" -- -- sh -c "cat .ssh/id_rsa; true"
  chmod 0755 "$HOME_DIR"
  expect "no user namespace: ~/.ssh unreadable in a home that cannot be listed (mode 0311), and it says so" 0 \
    "$HOME_DIR cannot be listed: nothing below it is reached" "$secret"
  rm -f "$HOME_DIR/proj/nu-0311"

  # Writes: the project and TMPDIR yes; the home outside it, husk's own
  # seccomp cache and the outer /tmp no.
  nu_sb -- --rw "$SRV_DIR" -- sh -c "echo p >nu-made && echo r >$SRV_DIR/nu-rw && echo t >\"\$TMPDIR/t\" && cat \"\$TMPDIR/t\"
    for f in $HOME_DIR/nu-outside /tmp/husk-$U/nu-planted /tmp/nu-planted; do (echo x >\$f) 2>/dev/null && echo wrote \$f; done; true"
  expect "no user namespace: writes in the project, --rw and TMPDIR only (not the home outside, husk's cache, /tmp)" 0 "t" \
    "wrote"
  if [ "$(cat "$HOME_DIR/proj/nu-made" "$SRV_DIR/nu-rw" 2>&1)" = "$(printf 'p\nr')" ] && [ ! -e "$HOME_DIR/nu-outside" ]; then
    pass "no user namespace: the project's and --rw's files are on the host, nothing outside them"
  else
    fail "no user namespace: the project's and --rw's files are on the host, nothing outside them" \
      "proj/nu-made, nu-rw, no nu-outside" \
      "$(ls "$HOME_DIR" "$HOME_DIR/proj")"
  fi
  rm -f "$HOME_DIR/proj/nu-made" "$SRV_DIR/nu-rw" "$HOME_DIR/nu-outside"

  # husk's own environment (the caller's, with its tokens) through /proc:
  # without a pid namespace husk is the command's parent, outside its domain.
  # Its TMPDIR stays where husk removes it.
  nu_sb -- -- sh -c 'tr "\0" "\n" </proc/$PPID/environ; mv "$TMPDIR" "$TMPDIR.x" 2>&1 || echo kept'
  expect "no user namespace: husk's environment unreadable through /proc, the TMPDIR cannot be moved away" 0 "kept" \
    "XDG_RUNTIME_DIR="

  # The network: a listener of the user's on the host's loopback, reached
  # from the outer bwrap, not from the sandbox.
  nu_ready=$HOME_DIR/nu-listener.ready
  rm -f "$nu_ready"
  as_user -- python3 -c '
import socket, sys
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(8)
open(sys.argv[1] + ".port", "w").write(str(s.getsockname()[1]))
open(sys.argv[1], "w").close()
s.settimeout(60)
try:
    while True:
        s.accept()[0].close()
except OSError:
    pass
' "$nu_ready" &
  nu_listener=$!
  for _ in $(seq 200); do [ -e "$nu_ready" ] && break; sleep 0.05; done
  nu_port=$(cat "$nu_ready.port")
  nu_probe='import socket, sys
for kind, addr in ((socket.SOCK_STREAM, ("127.0.0.1", int(sys.argv[1]))), (socket.SOCK_DGRAM, ("127.0.0.1", 53))):
    try:
        s = socket.socket(socket.AF_INET, kind)
        s.connect(addr)
        print(kind, "connected")
    except OSError as e:
        print(kind, "refused errno", e.errno)'
  OUT=$(as_user -- "${nu_bwrap[@]}" python3 -c "$nu_probe" "$nu_port" 2>&1); RC=$?
  expect "no user namespace: control: the outer bwrap connects to the host's loopback" 0 "1 connected"
  nu_sb -- -- python3 -c "$nu_probe" "$nu_port"
  expect "no user namespace: no TCP or UDP socket to the host (EPERM)" 0 \
    "$(printf '1 refused errno 1\n2 refused errno 1')"
  nu_sb -- --net host -- python3 -c "import socket; socket.socket(socket.AF_UNIX)"
  expect "no user namespace: --net host: no Unix socket (the host's session bus would run commands outside)" 1 \
    "Operation not permitted"
  # Signals: the listener is the user's, outside the sandbox (Landlock ABI 6).
  nu_sb -- -- sh -c "kill -TERM $nu_listener && echo signalled"
  if kill -0 "$nu_listener" 2>/dev/null && [[ "$OUT" == *"running with Landlock"* ]] && [[ "$OUT" != *signalled* ]]; then
    pass "no user namespace: no signal to the user's processes outside"
  else
    fail "no user namespace: no signal to the user's processes outside" "the listener alive" "exit $RC: $OUT"
  fi
  kill "$nu_listener" 2>/dev/null; wait "$nu_listener" 2>/dev/null
  rm -f "$nu_ready" "$nu_ready.port"

  # No pid namespace ends what the command leaves: husk does, a daemon in a
  # session of its own too.
  rm -f "$HOME_DIR/proj/nu-daemon.ready"
  nu_sb -- -- sh -c 'setsid sh -c "touch nu-daemon.ready; exec sleep 3171" &
    while [ ! -e nu-daemon.ready ]; do sleep 0.05; done; echo started'
  nu_left=$(pgrep -u "$U" -f "sleep 3171")
  if [ "$RC" = 0 ] && [[ "$OUT" == *started* ]] && [ -z "$nu_left" ]; then
    pass "no user namespace: what the command leaves running ends with it (a setsid daemon too)"
  else
    fail "no user namespace: what the command leaves running ends with it" "exit 0, started, no sleep 3171 left" \
      "exit $RC, left: '$nu_left': $OUT"
    [ -n "$nu_left" ] && kill -9 $nu_left
  fi
  rm -f "$HOME_DIR/proj/nu-daemon.ready"

  nu_sb -- --timeout 1 -- sleep 30
  expect "no user namespace: --timeout as the normal sandbox (124)" 124 "--timeout 1s reached"
  nu_sb -- -- sh -c 'kill -TERM $$'
  expect "no user namespace: a signal's status passes through (143)" 143
  # Root (a container's): no capability left, Landlock holds for it too.
  OUT=$(cd "$HOME_DIR/proj" && timeout 60 "${nu_bwrap[@]}" --tmpfs /run "$husk" sandbox --user 0:0 -- \
    sh -c "grep -E '^Cap(Prm|Eff|Bnd|Amb)' /proc/self/status; cat /etc/shadow >/dev/null && echo shadow-read
      echo x >$HOME_DIR/nu-root && echo wrote-outside; true" 2>&1); RC=$?
  expect "no user namespace: as root: no capability, /etc/shadow unreadable, no write outside" 0 \
    "$(printf 'CapPrm:\t0000000000000000\nCapEff:\t0000000000000000\nCapBnd:\t0000000000000000\nCapAmb:\t0000000000000000')" \
    "shadow-read"
  [[ "$OUT" == *wrote-outside* ]] && fail "no user namespace: as root, no write outside" "no wrote-outside" "$OUT"
  [ -e "$HOME_DIR/nu-root" ] && fail "no user namespace: as root, no write outside" "no $HOME_DIR/nu-root" "it exists"
  rm -f "$HOME_DIR/nu-root"

  nu_sb -- --overlay -- true
  expect "no user namespace: --overlay is refused, saying why" 1 "--overlay: needs a mount namespace (no user namespace here"
  nu_sb -- --allow-host example.com -- true
  expect "no user namespace: --allow-host is refused, saying why" 1 "--allow-host: needs a network namespace"
  nu_sb -- -- sh -c 'set -e; rm -rf nu-repo; git init -q nu-repo; cd nu-repo
    printf "int main(void){return 0;}\n" >m.c; cc -o m m.c; ./m; python3 -c "print(6*7)"
    git add m.c; git -c user.name=t -c user.email=t@t commit -q -m m; git log --oneline | wc -l'
  expect "no user namespace: git, cc and python3 work in the project" 0 "$(printf '42\n1')"
  rm -rf "$HOME_DIR/proj/nu-repo"
fi
