# The lists (issue 27, red team items 5-7): more credentials hidden in
# every home, more persistence files protected, placeholders the command made
# un-removable said or removed, names the command chose printed escaped.
# Sourced by tests/sandbox/test-sandbox (its user, helpers and $husk).

# --- credentials: agents' tokens, databases', browsers', histories --------------
lists_secret="lists-secret-$$"
lists_creds=(.claude/.credentials.json .codex/auth.json .gemini/oauth_creds.json .config/github-copilot/hosts.json
  .pgpass .my.cnf .s3cfg .boto .config/rclone/rclone.conf .config/op/config .config/hcloud/cli.toml
  .config/pip/pip.conf .m2/settings.xml .gradle/gradle.properties .mozilla/firefox/p.default/logins.json
  .config/google-chrome/Default/Cookies .config/Code/User/globalStorage/state.vscdb .bash_history
  .python_history .psql_history .mysql_history)
for f in "${lists_creds[@]}"; do
  mkdir -p "$HOME_DIR/$(dirname "$f")" && echo "$lists_secret $f" >"$HOME_DIR/$f"
  chown -R "$U:$G" "$HOME_DIR/${f%%/*}"
done
run_sb "$HOME_DIR" -- -- sh -c 'for f in "$@"; do cat "$f" 2>/dev/null; done; true' sh "${lists_creds[@]}"
lists_read=$(grep -o "$lists_secret [^ ]*" <<<"$OUT" | cut -d" " -f2 | tr '\n' ' ')
[ "$RC" = 0 ] && [ -z "$lists_read" ] &&
  pass "credentials: agents' tokens, .pgpass, .my.cnf, .s3cfg, rclone, pip, maven, gradle, browser profiles, VS Code's state, histories: none readable with the home as the working directory" ||
  fail "more credentials hidden" "exit 0, none read" "exit $RC, read: $lists_read $(head -c 300 <<<"$OUT")"
for f in "${lists_creds[@]}"; do rm -f "$HOME_DIR/$f"; done
rm -rf "$HOME_DIR"/{.codex,.gemini,.m2,.gradle,.mozilla,.config,.claude}

# --- persistence: the home's and agents' ----------------------------------------
mkdir -p "$HOME_DIR/.local/share/applications" "$HOME_DIR/.config" "$HOME_DIR/.claude" "$HOME_DIR/proj/sub/.claude"
echo '{}' >"$HOME_DIR/proj/sub/.claude/settings.json"
chown -R "$U:$G" "$HOME_DIR/.local" "$HOME_DIR/.config" "$HOME_DIR/.claude" "$HOME_DIR/proj/sub"
lists_write='w() { (mkdir -p "$(dirname "$1")" && echo x >>"$1") 2>/dev/null && echo "wrote $1"; }; for f; do w "$f"; done'
lists_home_before=$(cd "$HOME_DIR" && ls -A . .local .local/share .config .claude proj proj/sub/.claude; cat proj/sub/.claude/settings.json)
run_sb "$HOME_DIR" -- -- sh -c "$lists_write"'
  mv .local .local-old 2>/dev/null && echo "wrote: moved .local"
  mv .local/share .local/sh 2>/dev/null && echo "wrote: moved .local/share"
  echo note >.claude/notes.md && rm .claude/notes.md && echo claude-dir-writable; true' sh \
  .local/share/systemd/user/x.service .config/environment.d/x.conf .pam_environment .xprofile .xsessionrc \
  .claude/settings.json .claude/settings.local.json .cursor/mcp.json .gemini/settings.json
lists_out=$OUT lists_rc=$RC
run_sb -- -- sh -c "$lists_write"'; true' sh .claude/settings.local.json .cursor/hooks.json .gemini/settings.json \
  sub/.claude/settings.json
OUT="$lists_out $OUT"
lists_home_after=$(cd "$HOME_DIR" && ls -A . .local .local/share .config .claude proj proj/sub/.claude; cat proj/sub/.claude/settings.json)
if [ "$lists_rc" = 0 ] && [ "$RC" = 0 ] && [[ "$OUT" != *wrote* ]] && [[ "$OUT" == *claude-dir-writable* ]] &&
   [ "$lists_home_before" = "$lists_home_after" ]; then
  pass "persistence: systemd units in ~/.local/share, environment.d, .pam_environment, .xprofile, .xsessionrc, Claude Code's settings (home, project, sub-project), .cursor, .gemini neither written nor made; the rest of .claude writable; nothing left"
else
  fail "persistence: the home's and agents' files" "no write, .claude/notes.md writable, the home as before" \
    "exit $lists_rc/$RC: $OUT; home: $(diff <(echo "$lists_home_before") <(echo "$lists_home_after") | tr '\n' ' ')"
fi
rm -rf "$HOME_DIR/.local" "$HOME_DIR/.config" "$HOME_DIR/.claude" "$HOME_DIR/proj/sub"

# --- placeholders the command made un-removable ------------------------------------
lists_dir=$WORK/lists-ro
mkdir "$lists_dir" && chown "$U:$G" "$lists_dir"
run_sb "$lists_dir" -- -- chmod 555 .
lists_left=$(ls -A "$lists_dir" | tr '\n' ' ')
lists_mode=$(stat -c %a "$lists_dir")
[ "$RC" = 0 ] && [ -z "$lists_left" ] && [ "$lists_mode" = 555 ] &&
  pass "placeholders: after the command's chmod 555 of the working directory, none is left (its mode put back)" ||
  fail "placeholders after chmod 555 ." "exit 0, none left, mode 555" "exit $RC, left: $lists_left, mode $lists_mode: $OUT"
chmod 755 "$lists_dir"
if command -v git >/dev/null; then
  as_user "$lists_dir" -- sh -c 'git init -q . && rm -rf .git/hooks'
  run_sb "$lists_dir" -- -- chmod 0 .git
  lists_left=$(cd "$lists_dir" && ls -A . .git | tr '\n' ' ')
  [ "$RC" = 0 ] && [[ "$lists_left" != *hooks* ]] && [[ "$lists_left" != *.vscode* ]] &&
    [ "$(stat -c %a "$lists_dir/.git")" = 0 ] &&
    pass "placeholders: after chmod 0 .git, .git/hooks is removed (its mode put back)" ||
    fail "placeholders after chmod 0 .git" "exit 0, no hooks, no .vscode, mode 0" "exit $RC, left: $lists_left: $OUT"
  chmod 755 "$lists_dir" "$lists_dir/.git"
fi
rm -rf "$lists_dir"

# A directory of root's the user may write (group): the command cannot chmod
# it, root makes it read-only meanwhile: what is left is said, named escaped.
lists_dir=$WORK/$(printf 'lists\033[2Kgroup')
mkdir -m 775 "$lists_dir" && chgrp "$G" "$lists_dir"
(cd "$lists_dir" && exec "${AS_USER[@]}" "$husk" sandbox -- sh -c \
  'while [ ! -e go ]; do sleep 0.05; done' >"$WORK/lists-left.out" 2>&1) &
lists_sb=$!
for _ in $(seq 100); do [ -d "$lists_dir/.vscode" ] && break; sleep 0.05; done
chmod 555 "$lists_dir" && touch "$lists_dir/go"
wait "$lists_sb"; RC=$?
OUT=$(cat "$WORK/lists-left.out")
expect "placeholders: those that cannot be removed are said on one line, the path escaped" 0 \
  "left on the host, what stood in for protected names: $WORK/lists\\x1b[2Kgroup/" $'\033'
chmod 755 "$lists_dir"; rm -rf "$lists_dir"

# A placeholder that cannot be made (no inode left): not started unprotected.
lists_dir=$WORK/lists-full
mkdir "$lists_dir"
if mount -t tmpfs -o size=1m,nr_inodes=4,mode=755,uid="$U",gid="$G" tmpfs "$lists_dir" 2>/dev/null; then
  as_user "$lists_dir" -- sh -c 'for i in 1 2 3 4 5; do (: >f$i) 2>/dev/null; done'
  run_sb "$lists_dir" -- -- sh -c 'rm f1 && mkdir .envrc && echo envrc-made'
  expect "placeholders: one that cannot be made (ENOSPC) refuses the start, naming it" 1 \
    "cannot make the empty directory or file that keeps a protected name from being made: $lists_dir/" envrc-made
  umount "$lists_dir"
else
  skip "placeholders that cannot be made: no tmpfs could be mounted"
fi
rmdir "$lists_dir"

# --- names the command chose, escaped --------------------------------------------
run_sb -- -- sh -c 'touch "$HOME/$(printf "\033[2K\033]0;x\007")" "$HOME/$(printf "bad\377")"; sleep 0.3'
expect "the scratch home's summary escapes control bytes and invalid UTF-8 in names" 0 '\x1b[2K\x1b]0;x\x07' $'\033'
[[ "$OUT" == *'bad\xff'* ]] || fail "the scratch home's summary: invalid UTF-8" "bad\\xff" "$OUT"
