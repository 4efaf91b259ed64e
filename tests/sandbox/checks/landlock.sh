# Sourced by tests/sandbox/test-sandbox: Landlock, the sandbox's second wall
# (issue 27). What it denies alone, below the mounts, is shown by
# tests/unit/landlock (a ruleset enforced on a real tree); here the walls as
# the command meets them.

# --- Landlock: abstract sockets ----------------------------------------------
# A host program's abstract socket (an X server's, a D-Bus bus's): under
# --net host the sandbox shares the host's network namespace, where those live.
ll_name="husk-sbt-abstract-$$"
ll_ready=$HOME_DIR/ll-listener.ready
rm -f "$ll_ready"
as_user -- python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.bind(b"\0" + sys.argv[1].encode())
s.listen(8)
open(sys.argv[2], "w").close()
s.settimeout(60)
try:
    while True:
        s.accept()[0].close()
except OSError:
    pass
' "$ll_name" "$ll_ready" &
ll_listener=$!
for _ in $(seq 200); do [ -e "$ll_ready" ] && break; sleep 0.05; done
ll_probe='import socket, sys
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(b"\0" + sys.argv[1].encode())
    print("connected")
except OSError as e:
    print("refused errno", e.errno)'
OUT=$(as_user -- python3 -c "$ll_probe" "$ll_name" 2>&1); RC=$?
expect "control: the user connects to its abstract socket outside the sandbox" 0 "connected"
run_sb -- --net host -- python3 -c "$ll_probe" "$ll_name"
expect "landlock: --net host: the host's abstract socket is out of reach (EPERM)" 0 "refused errno 1" "connected"
kill "$ll_listener" 2>/dev/null; wait "$ll_listener" 2>/dev/null
rm -f "$ll_ready"

# --- Landlock: writes confined -----------------------------------------------
# The fresh /run, /home and /root and /dev are the user's tmpfs in the mount
# view; nothing is meant to be kept there.
run_sb -- -- sh -c 'for f in /run/x /home/x /root/x /dev/x; do (echo x >$f) 2>/dev/null && echo "wrote $f"; done; true'
expect "landlock: no write in the fresh /run, /home, /root or /dev" 0 "" "wrote"
run_sb -- -- sh -c 'echo a >/tmp/a && echo b >/var/tmp/b && echo c >/dev/shm/c && echo d >/dev/null && echo e >ll-made &&
  cat /tmp/a /var/tmp/b /dev/shm/c ll-made && echo f >"$HOME/f" && cat "$HOME/f"'
expect "landlock: writes where the sandbox allows them (/tmp, /var/tmp, /dev/shm, /dev/null, the project, the home)" 0 \
  "$(printf 'a\nb\nc\ne\nf')"
rm -f "$HOME_DIR/proj/ll-made"

# --- Landlock: TCP only to the proxy -----------------------------------------
ll_tcp='import socket
for port in (3128, 9):
    s = socket.socket()
    try:
        s.connect(("127.0.0.1", port))
        print(port, "connected")
    except OSError as e:
        print(port, "errno", e.errno)'
run_sb -- --allow-host example.invalid -- python3 -c "$ll_tcp"
expect "landlock: --allow-host: TCP connect to the proxy's port only (EACCES elsewhere)" 0 \
  "$(printf '3128 connected\n9 errno 13')"

# --- Landlock: hidden stays hidden, normal use unaffected (regression guards) --
run_sb "$HOME_DIR" -- -- sh -c "cat $HOME_DIR/.ssh/id_rsa; cat /etc/shadow; true"
expect "landlock: hidden paths stay hidden (~/.ssh with the home as working directory, /etc/shadow)" 0 "" "$secret"
run_sb -- -- sh -c 'set -e; rm -rf ll-repo; git init -q ll-repo; cd ll-repo
  printf "int main(void){return 0;}\n" >m.c; cc -o m m.c; ./m
  python3 -c "import json, sqlite3; print(json.dumps(sqlite3.sqlite_version_info[0] > 2))"
  git add m.c; git -c user.name=t -c user.email=t@t commit -q -m m; git log --oneline | wc -l'
expect "landlock: git init/add/commit, cc and python3 work in the project" 0 "$(printf 'true\n1')"
rm -rf "$HOME_DIR/proj/ll-repo"

# --- Where no user namespace can be made --------------------------------------
# Inside bwrap --disable-userns (as in an unprivileged container) the sandbox
# runs without namespaces: Landlock, seccomp, no_new_privs, rlimits.
# run_bare_sb [DIR] -- ARGS...: run_sb there.
run_bare_sb() {
  local dir=$HOME_DIR/proj
  if [ "$1" != -- ]; then dir=$1; shift; fi
  OUT=$(cd "$dir" && "${AS_USER[@]}" timeout 60 bwrap --unshare-user --disable-userns --bind / / --dev /dev \
    --proc /proc -- "$husk" sandbox "${@:2}" 2>&1); RC=$?
}
if ! command -v bwrap >/dev/null; then
  skip "no user namespaces: bwrap is not installed"
else
  run_bare_sb -- -- true
  expect "no user namespaces: the sandbox runs and says which walls it has" 0 "no user namespace can be made here"
  run_bare_sb -- -- sh -c "cat $HOME_DIR/.ssh/id_rsa; ls $HOME_DIR/.ssh; cat /etc/shadow"
  expect "no user namespaces: ~/.ssh and /etc/shadow are not readable" 1 "Permission denied" "$secret"
  rm -f "$HOME_DIR/proj/made" "$SRV_DIR/made" "$HOME_DIR/made"
  run_bare_sb -- -- sh -c "echo in >made; touch $SRV_DIR/made $HOME_DIR/made /var/tmp/husk-bare-$$ 2>/dev/null; \
    echo t >\"\$TMPDIR/t\" && echo h >\"\$HOME/h\" && cat \"\$TMPDIR/t\" \"\$HOME/h\""
  if [ "$RC" = 0 ] && [ "$(cat "$HOME_DIR/proj/made" 2>/dev/null)" = in ] && [ ! -e "$SRV_DIR/made" ] &&
     [ ! -e "$HOME_DIR/made" ] && [ ! -e "/var/tmp/husk-bare-$$" ] && [[ "$OUT" == *"$(printf 't\nh')"* ]]; then
    pass "no user namespaces: writes only in the project, TMPDIR and the scratch HOME"
  else
    fail "no user namespaces: writes confined" "exit 0, proj/made only, TMPDIR and HOME writable" "exit $RC: $OUT"
  fi
  rm -f "$HOME_DIR/proj/made" "$SRV_DIR/made" "$HOME_DIR/made" "/var/tmp/husk-bare-$$"
  # The scratch directory is removed after, whatever the command left there,
  # without following what it planted.
  echo keep >"$HOME_DIR/proj/ll-keep"
  run_bare_sb -- -- sh -c 'ln -s "$PWD/ll-keep" "$HOME/link"; ln -s "$PWD" "$TMPDIR/dir"; mkdir -p "$HOME/d/e";
    touch "$HOME/d/e/f"; chmod 000 "$HOME/d/e" "$HOME/d"; echo "$TMPDIR"'
  ll_scratch=$(printf '%s\n' "$OUT" | grep '^/tmp/husk-sandbox-' | head -1)
  if [ "$RC" = 0 ] && [ -n "$ll_scratch" ] && [ ! -e "$(dirname "$ll_scratch")" ] &&
     [ "$(cat "$HOME_DIR/proj/ll-keep" 2>/dev/null)" = keep ]; then
    pass "no user namespaces: the scratch HOME and TMPDIR are removed, planted symlinks not followed"
  else
    fail "no user namespaces: scratch removed" "exit 0, $ll_scratch gone, proj/ll-keep kept" "exit $RC: $OUT"
  fi
  rm -f "$HOME_DIR/proj/ll-keep"
  run_bare_sb -- -- python3 -c "$ll_tcp"
  expect "no user namespaces: the network is cut (socket refused)" 1 "PermissionError" "connected"
  # A process of the user outside: the sandbox shares its pid namespace.
  as_user -- sleep 60 &
  ll_outside=$!
  run_bare_sb -- -- sh -c "kill -0 $ll_outside && echo reached; sleep 300 & echo started"
  expect "no user namespaces: a signal to a process outside is refused" 0 "started" "reached"
  kill "$ll_outside" 2>/dev/null; wait "$ll_outside" 2>/dev/null
  if pgrep -u "$U" -f "sleep 300" >/dev/null; then
    fail "no user namespaces: what the command left running" "killed with it" "$(pgrep -a -u "$U" -f 'sleep 300')"
    pkill -9 -u "$U" -f "sleep 300"
  else
    pass "no user namespaces: what the command left running ends with it"
  fi
  run_bare_sb "$HOME_DIR" -- -- true
  expect "no user namespaces: the home as working directory is refused (~/.ssh could not be hidden)" 1 \
    "where Landlock cannot hide it"
  run_bare_sb -- -- sh -c 'set -e; rm -rf ll-repo; git init -q ll-repo; cd ll-repo
    printf "int main(void){return 0;}\n" >m.c; cc -o m m.c; ./m; python3 -c "print(6*7)"
    git add m.c; git -c user.name=t -c user.email=t@t commit -q -m m; git log --oneline | wc -l'
  expect "no user namespaces: git, cc and python3 work in the project" 0 "$(printf '42\n1')"
  rm -rf "$HOME_DIR/proj/ll-repo"
fi
