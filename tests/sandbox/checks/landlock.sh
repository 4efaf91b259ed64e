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
