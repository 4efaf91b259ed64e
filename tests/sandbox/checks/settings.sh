# Settings files and glob hides (issue 28): husk's keys and srt's format,
# the user's default file, a project file that may only narrow,
# --print-settings, --hide '**/.env'. Sourced by tests/sandbox/test-sandbox
# (its user, helpers and $husk). 1be2de1 has none of these flags.

st_dir=$(mktemp -d "$WORK/settings.XXXXXX")
chmod 755 "$st_dir"
st_secret="settings-secret-$$"
echo "$st_secret" >"$HOME_DIR/proj/secret.txt"
chown "$U:$G" "$HOME_DIR/proj/secret.txt"

# --- an srt file gives what the equivalent flags give ---------------------------
# In a network namespace made here (as proxy.sh does): allowed.test and
# denied.test on loopback, both allowed by name, denied.test denied again;
# a missing denyRead path is passed over, as srt does.
cat >"$st_dir/hosts" <<HOSTS
127.0.0.1 localhost
127.0.0.2 allowed.test
127.0.0.3 denied.test
HOSTS
cat >"$st_dir/srt.json" <<JSON
{"network": {"allowedDomains": ["allowed.test", "denied.test"], "deniedDomains": ["denied.test"]},
 "filesystem": {"denyRead": ["secret.txt", "~/.not-there"], "allowWrite": [".", "$SRV_DIR"], "denyWrite": []}}
JSON
cat >"$st_dir/check.sh" <<'CHECK'
#!/bin/bash
husk=$1; shift
busybox ip link set lo up
mount --bind "$ST_DIR/hosts" /etc/hosts
busybox httpd -f -p 127.0.0.2:8080 -h "$WORK/www" & a=$!
busybox httpd -f -p 127.0.0.3:8080 -h "$WORK/www" & b=$!
for _ in $(seq 50); do bash -c 'exec 3<>/dev/tcp/127.0.0.2/8080' 2>/dev/null && bash -c 'exec 3<>/dev/tcp/127.0.0.3/8080' 2>/dev/null && break; sleep 0.1; done
cd "$HOME_DIR/proj" || exit 1
probe='echo "read: $(cat secret.txt 2>&1)"
rm -f "$1/w"; (echo x >"$1/w") 2>/dev/null && echo "write $1: ok" || echo "write $1: refused"
for h in allowed.test denied.test; do
  exec 3<>/dev/tcp/127.0.0.1/3128 || { echo "$h: no proxy"; continue; }
  printf "CONNECT $h:8080 HTTP/1.1\r\n\r\n" >&3; read -r s <&3; echo "$h: ${s%$'"'"'\r'"'"'}"; exec 3>&-
done'
echo "== flags"
"$@" "$husk" sandbox --hide secret.txt --rw "$SRV_DIR" --allow-host allowed.test \
  --allow-host denied.test --deny-host denied.test --allow-host-loopback -- bash -c "$probe" probe "$SRV_DIR" 2>&1
echo "== srt"
"$@" "$husk" sandbox --settings "$ST_DIR/srt.json" --allow-host-loopback -- bash -c "$probe" probe "$SRV_DIR" 2>&1
kill $a $b
CHECK
chmod +x "$st_dir/check.sh"
mkdir -p "$WORK/www" && echo served >"$WORK/www/index.html"
OUT=$(WORK=$WORK HOME_DIR=$HOME_DIR ST_DIR=$st_dir SRV_DIR=$SRV_DIR unshare --net --mount "$st_dir/check.sh" "$husk" "${AS_USER[@]}" 2>&1)
st_one="read: 
write $SRV_DIR: ok
allowed.test: HTTP/1.1 200 Connection established
denied.test: HTTP/1.1 403 Forbidden
husk sandbox: --allow-host refused: denied.test:8080 (1)"
st_want="== flags
$st_one
== srt
$st_one"
[ "$OUT" = "$st_want" ] &&
  pass "settings: an srt file (denyRead, allowWrite, allowedDomains, deniedDomains) gives what the flags give: hidden, writable, reached, refused" ||
  fail "settings: srt file as the flags" "$st_want" "$OUT"
rm -f "$SRV_DIR/w"

# --- unknown keys and wrong types are errors naming the key and the file ---------
printf 'rw: []\nbogus-key: 1\n' >"$st_dir/unknown.yaml"
run_sb -- --settings "$st_dir/unknown.yaml" -- true
expect "settings: an unknown key is an error naming it and the file" 1 "$st_dir/unknown.yaml: unknown key bogus-key"
printf '{"filesystem": {"allowWrite": ["."], "denyReed": ["x"]}}\n' >"$st_dir/unknown-srt.json"
run_sb -- --settings "$st_dir/unknown-srt.json" -- true
expect "settings: an unknown srt key is an error naming it" 1 "filesystem.denyReed"
printf '{"filesystem": {"allowWrite": ["."]}, "network": {"httpProxyPort": 8080}}\n' >"$st_dir/proxyport.json"
run_sb -- --settings "$st_dir/proxyport.json" -- true
expect "settings: an srt key without a husk meaning is an error, not dropped" 1 "network.httpProxyPort"
printf 'pids: [1]\n' >"$st_dir/type.yaml"
run_sb -- --settings "$st_dir/type.yaml" -- true
expect "settings: a wrong type is an error naming the key" 1 "$st_dir/type.yaml: pids: must be a string"

# --- a project file may only narrow ----------------------------------------------
printf 'rw: [%s]\n' "$SRV_DIR" >"$HOME_DIR/proj/widen.yaml"
printf '{"filesystem": {"allowWrite": ["."]}, "network": {"allowedDomains": ["example.com"]}}\n' >"$HOME_DIR/proj/widen-net.json"
printf 'hide: [secret.txt]\npids: 50\n' >"$HOME_DIR/proj/narrow.yaml"
chown "$U:$G" "$HOME_DIR"/proj/{widen.yaml,widen-net.json,narrow.yaml}
run_sb -- --project-settings widen.yaml -- sh -c "echo x >$SRV_DIR/w"
expect "settings: a project file cannot add a writable directory" 1 "widen.yaml: rw: a project file may only narrow"
[ -e "$SRV_DIR/w" ] && fail "settings: project rw" "nothing written" "$SRV_DIR/w written"
run_sb -- --project-settings widen-net.json -- true
expect "settings: a project file cannot allow a host" 1 "widen-net.json: network.allowedDomains: a project file may only narrow"
run_sb -- --project-settings narrow.yaml -- cat secret.txt
expect "settings: a project file hides more" 0 "" "$st_secret"
# Written by the sandboxed code: never followed as a symlink, a FIFO does not block.
ln -sf narrow.yaml "$HOME_DIR/proj/link.yaml"; mkfifo "$HOME_DIR/proj/fifo.yaml"
chown -h "$U:$G" "$HOME_DIR/proj/link.yaml" "$HOME_DIR/proj/fifo.yaml"
run_sb -- --project-settings link.yaml -- true
expect "settings: a project file that is a symlink is refused" 1 "link.yaml: is a symlink"
run_sb -- --project-settings fifo.yaml -- true
expect "settings: a project file that is a FIFO is refused without blocking" 1 "fifo.yaml: not a regular file"
rm -f "$HOME_DIR"/proj/{widen.yaml,widen-net.json,narrow.yaml,link.yaml,fifo.yaml}

# --- the default file, precedence, --print-settings ------------------------------
mkdir -p "$HOME_DIR/.config/husk"
printf 'pids: 100\nhide: [secret.txt]\nmemory: 1g\nrw: [%s]\n' "$SRV_DIR" >"$HOME_DIR/.config/husk/sandbox.yaml"
printf 'pids: 50\ntimeout: 30\n' >"$st_dir/named.yaml"
printf 'pids: 60\n' >"$st_dir/later.yaml"
chown -R "$U:$G" "$HOME_DIR/.config"
run_sb -- --settings "$st_dir/named.yaml" --settings "$st_dir/later.yaml" --timeout 5 --print-settings -- true
st_cfg=$HOME_DIR/.config/husk/sandbox.yaml
if [ "$RC" = 0 ] && grep -qxF "pids: 60	($st_dir/later.yaml: pids)" <<<"$OUT" && ! grep -q "^pids: [15]0" <<<"$OUT" &&
   grep -qxF "timeout: 5	(--timeout)" <<<"$OUT" && grep -qxF "memory: 1g	($st_cfg: memory)" <<<"$OUT" &&
   grep -qxF "hide: secret.txt	($st_cfg: hide)" <<<"$OUT" && grep -qxF "net: none	(default)" <<<"$OUT"; then
  pass "settings: --print-settings names each value's origin (the flag, then the last --settings, then the default file), exit 0"
else
  fail "settings: --print-settings" "pids from later.yaml, timeout from --timeout, memory and hide from the default file, net default" "exit $RC: $OUT"
fi
# A list item given twice (here and on the command line) counts once.
run_sb -- --rw "$SRV_DIR" -- sh -c "cat secret.txt; echo x >$SRV_DIR/w && echo wrote"
expect "settings: the user's default file applies (its rw given again as a flag too)" 0 "wrote" "$st_secret"
rm -f "$SRV_DIR/w"
# --no-user-settings: a harness's opt-out of the default file.
run_sb -- --no-user-settings -- cat secret.txt
expect "settings: --no-user-settings skips the default file (its hide does not apply)" 0 "$st_secret"
run_sb -- --no-user-settings --print-settings -- true
expect "settings: --no-user-settings: --print-settings names nothing of the default file" 0 "net: none" "$st_cfg"
# As root for the user (F8, F9): root never reads the user's file, even
# where sudo kept HOME and XDG_CONFIG_HOME: it would pass root's variables
# (env: [K]) and show, as root, what the user cannot reach (/run is fresh).
st_priv=$(mktemp -d /run/husk-settings-priv.XXXXXX); chmod 700 "$st_priv"
mkdir "$st_priv/pub"; echo "root-only-$$" >"$st_priv/pub/f"; chmod 755 "$st_priv/pub"; chmod 644 "$st_priv/pub/f"
printf 'env: [HARNESS_KEY_%s]\nro: [%s/pub]\n' "$$" "$st_priv" >"$st_cfg"
OUT=$(cd "$HOME_DIR/proj" && env "HARNESS_KEY_$$=harness-secret-$$" HOME="$HOME_DIR" XDG_CONFIG_HOME="$HOME_DIR/.config" \
  timeout 60 "$husk" sandbox --user "$U:$G" -- sh -c "env; cat $st_priv/pub/f; cat secret.txt" 2>&1); RC=$?
expect "settings: as root for a user, the user's default file is not read (no root variable passed, no root-only path shown)" \
  0 "$st_secret" "harness-secret-$$"
[[ "$OUT" == *"root-only-$$"* ]] && fail "settings: as root, the user's ro" "$st_priv/pub/f not shown" "$OUT"
# F7: a numeric `user:` settles the user before any default file is read:
# under sudo's variables, user 0 never gets the sudo user's file.
printf 'user: 0\n' >"$st_dir/user0.yaml"
st_root=$(mktemp -d /srv/husk-settings-root.XXXXXX)
OUT=$(cd "$st_root" && env "HARNESS_KEY_$$=harness-secret-$$" SUDO_USER="$SB_USER" SUDO_UID="$U" SUDO_GID="$G" \
  timeout 60 "$husk" sandbox --settings "$st_dir/user0.yaml" -- sh -c 'echo "uid=$(id -u)"; env' 2>&1); RC=$?
expect "settings: a numeric user: 0 under sudo's variables takes root's default file, never the sudo user's" 0 "uid=0" \
  "harness-secret-$$"
rm -rf "$st_priv" "$st_root"
rm -rf "$HOME_DIR/.config"

# --- glob hides ------------------------------------------------------------------
mkdir -p "$HOME_DIR/proj/a/b" "$HOME_DIR/proj/s/secrets/deep"
echo "env-top-$$" >"$HOME_DIR/proj/.env"
echo "env-deep-$$" >"$HOME_DIR/proj/a/b/.env"
echo "envrc-$$" >"$HOME_DIR/proj/a/.envrc"
echo "keep-$$" >"$HOME_DIR/proj/a/b/keep.txt"
echo "pem-$$" >"$HOME_DIR/proj/k.pem"
echo "sec-$$" >"$HOME_DIR/proj/s/secrets/deep/x"
chown -R "$U:$G" "$HOME_DIR/proj/a" "$HOME_DIR/proj/s" "$HOME_DIR/proj/.env" "$HOME_DIR/proj/k.pem"
st_cat='for f in .env a/b/.env a/.envrc a/b/keep.txt k.pem s/secrets/deep/x; do echo "$f: $(cat $f 2>/dev/null)"; done'
st_globbed=".env: 
a/b/.env: 
a/.envrc: envrc-$$
a/b/keep.txt: keep-$$
k.pem: 
s/secrets/deep/x: "
run_sb -- --hide '**/.env' --hide '*.pem' --hide '**/secrets/**' -- sh -c "$st_cat"
[ "$RC" = 0 ] && [ "$OUT" = "$st_globbed" ] &&
  pass "glob hides: '**/.env' (depth 2 too), '*.pem', '**/secrets/**' unreadable, the others readable" ||
  fail "glob hides" "exit 0: $st_globbed" "exit $RC: $OUT"
printf '{"filesystem": {"allowWrite": ["."], "denyRead": ["**/.env", "*.pem", "**/secrets/**"]}}\n' >"$st_dir/globs.json"
run_sb -- --settings "$st_dir/globs.json" -- sh -c "$st_cat"
[ "$RC" = 0 ] && [ "$OUT" = "$st_globbed" ] &&
  pass "glob hides: srt's denyRead takes the same patterns" ||
  fail "glob hides from denyRead" "exit 0: $st_globbed" "exit $RC: $OUT"
# srt's denyWrite takes them too: read-only where they are, the rest writable.
printf '{"filesystem": {"allowWrite": ["."], "denyWrite": ["**/.env"]}}\n' >"$st_dir/denywrite.json"
run_sb -- --settings "$st_dir/denywrite.json" -- sh -c \
  'for f in .env a/b/.env a/b/keep.txt; do (echo w >>$f) 2>/dev/null && echo "$f: written" || echo "$f: refused"; done'
st_dw=".env: refused
a/b/.env: refused
a/b/keep.txt: written"
[ "$RC" = 0 ] && [ "$OUT" = "$st_dw" ] && [ "$(cat "$HOME_DIR/proj/a/b/.env")" = "env-deep-$$" ] &&
  pass "glob: srt's denyWrite '**/.env' makes each .env read-only (depth 2 too), the rest stays writable" ||
  fail "glob in denyWrite" "exit 0: $st_dw" "exit $RC: $OUT"

# --- the red team's holes (redteam28.md) -------------------------------------------
# F1: the default file is a persistence file: with the home writable the
# command neither writes it nor makes it (no .config, no husk/, or there),
# nor renames .config away; elsewhere ($XDG_CONFIG_HOME) it is read-only, and
# missing inside a writable tree the start is refused.
st_plant='mkdir -p .config/husk 2>/dev/null; (echo "net: host" >>.config/husk/sandbox.yaml) 2>/dev/null && echo wrote
(echo "net: host" >.config/husk/sandbox.json) 2>/dev/null && echo wrote-json; mv .config .config-moved 2>/dev/null && echo moved; true'
st_f1=""
rm -rf "$HOME_DIR/.config"
run_sb "$HOME_DIR" -- -- sh -c "$st_plant"
st_f1+="no .config: $RC $OUT $(ls -A "$HOME_DIR" | grep -c config)
"
mkdir "$HOME_DIR/.config"; chown "$U:$G" "$HOME_DIR/.config"
run_sb "$HOME_DIR" -- -- sh -c "$st_plant"
st_f1+="no husk/: $RC $OUT $(ls -A "$HOME_DIR/.config")
"
mkdir "$HOME_DIR/.config/husk"; echo "net: none" >"$HOME_DIR/.config/husk/sandbox.yaml"; chown -R "$U:$G" "$HOME_DIR/.config"
run_sb "$HOME_DIR" -- -- sh -c "$st_plant"
st_f1+="there: $RC $OUT $(ls -A "$HOME_DIR/.config/husk") $(cat "$HOME_DIR/.config/husk/sandbox.yaml")
"
mkdir -p "$HOME_DIR/proj/cfg/husk"; chown -R "$U:$G" "$HOME_DIR/proj/cfg"
OUT=$(as_user -- env XDG_CONFIG_HOME="$HOME_DIR/proj/cfg" timeout 60 "$husk" sandbox -- \
  sh -c '(echo "net: host" >cfg/husk/sandbox.yaml) 2>/dev/null && echo wrote; true' 2>&1); RC=$?
st_f1+="xdg: $RC $OUT $(ls -A "$HOME_DIR/proj/cfg/husk")
"
rmdir "$HOME_DIR/proj/cfg/husk"
OUT=$(as_user -- env XDG_CONFIG_HOME="$HOME_DIR/proj/cfg" timeout 60 "$husk" sandbox -- true 2>&1); RC=$?
st_f1+="xdg missing: $RC $OUT"
rm -rf "$HOME_DIR/proj/cfg" "$HOME_DIR/.config" "$HOME_DIR/.config-moved"
st_want_f1="no .config: 0  0
no husk/: 0  
there: 0  sandbox.yaml net: none
xdg: 0  
xdg missing: 1 husk sandbox: $HOME_DIR/proj/cfg/husk (the default settings' directory) is missing in $HOME_DIR/proj/cfg, which the command may write: it would set the next sandbox's walls; make the directory"
[ "$st_f1" = "$st_want_f1" ] &&
  pass "settings (F1): the default settings file cannot be written, made or renamed away from a writable home, nor in \$XDG_CONFIG_HOME" ||
  fail "settings (F1): the default file protected" "$st_want_f1" "$st_f1"

# F2: a --cpus that rounds under the kernel's least quota would be no limit.
run_sb -- --cpus 0.000001 -- true
expect "settings (F2): --cpus 0.000001 is refused, not applied as no limit" 1 "--cpus 0.000001: below 0.01 CPU"
printf 'cpus: 0.000001\n' >"$HOME_DIR/proj/cpus.yaml"; chown "$U:$G" "$HOME_DIR/proj/cpus.yaml"
run_sb -- --cpus 0.5 --project-settings cpus.yaml --print-settings -- true
expect "settings (F2): a project file's cpus: 0.000001 does not pass as narrower than 0.5" 1 "below 0.01 CPU"
rm -f "$HOME_DIR/proj/cpus.yaml"

# F3: a pattern's walk that runs out of names stops the start: the command
# filled the tree to put the secret past the bound.
mkdir -p "$HOME_DIR/proj/app" "$HOME_DIR/proj/fill"
echo "env-app-$$" >"$HOME_DIR/proj/app/.env"
(cd "$HOME_DIR/proj/fill" && seq 20001 | xargs touch)
chown -R "$U:$G" "$HOME_DIR/proj/app" "$HOME_DIR/proj/fill"
run_sb -- --hide '**/.env' -- cat app/.env
expect "glob (F3): a walk stopped at its bound stops the start, naming the pattern and the tree" 1 \
  "--hide **/.env: the walk of $HOME_DIR/proj stopped at its bound" "env-app-$$"
rm -rf "$HOME_DIR/proj/fill"

# F4: pattern characters in a path that exists as written: that path.
echo "key-$$" >"$HOME_DIR/proj/key[prod].pem"; echo 'echo good' >"$HOME_DIR/proj/run[ci].sh"
chown "$U:$G" "$HOME_DIR/proj/key[prod].pem" "$HOME_DIR/proj/run[ci].sh"
run_sb -- --hide 'key[prod].pem' --deny-write 'run[ci].sh' -- sh -c \
  'cat "key[prod].pem"; (echo "echo EVIL" >"run[ci].sh") 2>/dev/null && echo wrote; true'
[ "$RC" = 0 ] && [ -z "$OUT" ] && [ "$(cat "$HOME_DIR/proj/run[ci].sh")" = "echo good" ] &&
  pass "glob (F4): --hide 'key[prod].pem' and --deny-write 'run[ci].sh' take the paths so named" ||
  fail "glob (F4): literal paths with [ ]" "exit 0, nothing read or written" "exit $RC: $OUT"
rm -f "$HOME_DIR/proj/key[prod].pem" "$HOME_DIR/proj/run[ci].sh"

# F13: ~/ in husk's own format is the home, for patterns too.
mkdir -p "$HOME_DIR/.config/husk"; printf 'hide: ["~/**/.env"]\n' >"$HOME_DIR/.config/husk/sandbox.yaml"
chown -R "$U:$G" "$HOME_DIR/.config"
run_sb -- -- sh -c 'cat app/.env; true'
expect "settings (F13): hide: [\"~/**/.env\"] in the default file hides app/.env" 0 "" "env-app-$$"
rm -rf "$HOME_DIR/.config" "$HOME_DIR/proj/app"

# F10: a directory symlink named by "**/NAME/**" is hidden as the directory
# would be. F11: a match that is a link to nothing is not mounted on (the
# mount would make its target, here in a --rw tree).
mkdir -p "$SRV_DIR/st-secrets" "$HOME_DIR/proj/config"; echo "db-pw-$$" >"$SRV_DIR/st-secrets/db.pw"
ln -s "$SRV_DIR/st-secrets" "$HOME_DIR/proj/config/secrets"; ln -s "$SRV_DIR/st-made-by-hide" "$HOME_DIR/proj/p.env"
chown -R "$U:$G" "$SRV_DIR/st-secrets" "$HOME_DIR/proj/config"; chown -h "$U:$G" "$HOME_DIR/proj/p.env"
run_sb -- --hide '**/secrets/**' -- sh -c 'cat config/secrets/db.pw; true'
expect "glob (F10): '**/secrets/**' hides config/secrets, a symlink to a directory out of the tree" 0 "" "db-pw-$$"
run_sb -- --rw "$SRV_DIR" --hide '*.env' -- true
[ "$RC" = 0 ] && [ ! -e "$SRV_DIR/st-made-by-hide" ] &&
  pass "glob (F11): a match that is a dangling symlink makes nothing where it points" ||
  fail "glob (F11): dangling symlink match" "exit 0, $SRV_DIR/st-made-by-hide not made" "exit $RC: $OUT"
rm -rf "$SRV_DIR/st-secrets" "$SRV_DIR/st-made-by-hide" "$HOME_DIR/proj/config" "$HOME_DIR/proj/p.env"
rm -rf "$HOME_DIR/proj/a" "$HOME_DIR/proj/s" "$HOME_DIR/proj/.env" "$HOME_DIR/proj/k.pem" "$HOME_DIR/proj/secret.txt" "$st_dir"
