# The parents of hidden, --deny-write and protected paths inside a writable
# directory are pinned: renaming one away would take the mount with it and
# leave the host's file at the new name, shown by the next sandbox (red team
# F5). Sourced by tests/sandbox/test-sandbox (its user, helpers and $husk);
# every check looks from outside, at the host's files or at a second run.

P=$HOME_DIR/proj
pin_secret="pin-secret-$$"
as_user -- sh -c "mkdir -p pin-conf pin-a/b pin-sub pin-other pin-deep/x pin-real .vscode/pin &&
  echo $pin_secret >pin-conf/secret.txt && echo $pin_secret >pin-a/b/secret.txt && echo 'echo good' >pin-sub/build.sh &&
  echo $pin_secret >pin-deep/x/key.pem && echo $pin_secret >pin-real/secret.txt && ln -sfn pin-real pin-link &&
  echo $pin_secret >.vscode/pin/secret.txt"

# --hide FILE: its directory, and a grandparent, cannot be renamed away and
# rebuilt with a decoy; what else is there stays writable, other directories movable.
run_sb -- --hide pin-conf/secret.txt --hide pin-a/b/secret.txt -- sh -c '
  mv pin-conf pin-conf.x 2>/dev/null && echo MOVED-conf; (mkdir -p pin-conf && : >pin-conf/secret.txt) 2>/dev/null
  mv pin-a pin-a.x 2>/dev/null && echo MOVED-a; mv pin-a/b pin-a/b.x 2>/dev/null && echo MOVED-b
  echo ok >pin-conf/beside && mv pin-other pin-other.x && echo others-ok'
first=$OUT
run_sb -- --hide pin-conf/secret.txt --hide pin-a/b/secret.txt -- \
  sh -c 'cat pin-conf.x/secret.txt pin-a.x/b/secret.txt pin-a/b.x/secret.txt pin-conf/secret.txt pin-a/b/secret.txt; true'
if [ "$(cat "$P/pin-conf/secret.txt" "$P/pin-a/b/secret.txt")" = "$(printf '%s\n%s' "$pin_secret" "$pin_secret")" ] &&
   [ ! -e "$P/pin-conf.x" ] && [ ! -e "$P/pin-a.x" ] && [ ! -e "$P/pin-a/b.x" ] && [ -e "$P/pin-conf/beside" ] &&
   [ -e "$P/pin-other.x" ] && [[ "$first" == *others-ok* ]] && [[ "$first" != *MOVED* ]] &&
   [[ "$OUT" != *"$pin_secret"* ]]; then
  pass "pins: a --hide file's directory and its parent cannot be renamed away; the next run shows no secret"
else
  fail "pins: --hide's parents renamed" "pin-conf, pin-a/b in place, nothing shown at a second run" \
    "$(ls "$P"); $first; $OUT"
fi
mv "$P/pin-other.x" "$P/pin-other" 2>/dev/null

# --hide through a symlink: the directory it lands in is pinned; a pattern's
# match two levels down too.
run_sb -- --hide pin-link/secret.txt --hide '**/*.pem' -- sh -c '
  mv pin-real pin-real.x 2>/dev/null && echo MOVED-real; mv pin-deep pin-deep.x 2>/dev/null && echo MOVED-deep
  mv pin-deep/x pin-deep/x.y 2>/dev/null && echo MOVED-x; true'
if [ "$RC" = 0 ] && [[ "$OUT" != *MOVED* ]] && [ -e "$P/pin-real/secret.txt" ] && [ -e "$P/pin-deep/x/key.pem" ]; then
  pass "pins: the target of a --hide through a symlink, and a pattern's match's parents, cannot be renamed away"
else
  fail "pins: --hide through a symlink, --hide '**/*.pem'" "nothing moved" "exit $RC: $OUT; $(ls "$P")"
fi

# A pin never opens what is read-only: .vscode (protected) stays so around
# the directory holding a hidden file.
run_sb -- --hide .vscode/pin/secret.txt -- sh -c '(echo x >.vscode/pin/planted) 2>/dev/null && echo wrote
  mv .vscode/pin .vscode/pin.x 2>/dev/null && echo MOVED; cat .vscode/pin/secret.txt; true'
if [[ "$OUT" != *wrote* ]] && [[ "$OUT" != *MOVED* ]] && [[ "$OUT" != *"$pin_secret"* ]] && [ ! -e "$P/.vscode/pin/planted" ]; then
  pass "pins: a hidden file's directory inside a read-only .vscode stays read-only"
else
  fail "pins: inside a read-only .vscode" "neither written nor moved" "exit $RC: $OUT"
fi

# --deny-write FILE: its directory cannot be swapped for one with another file.
run_sb -- --deny-write pin-sub/build.sh -- sh -c '
  mv pin-sub pin-sub.old 2>/dev/null && echo MOVED; mkdir -p pin-sub; (echo "echo EVIL" >pin-sub/build.sh) 2>/dev/null; true'
if [ "$(cat "$P/pin-sub/build.sh")" = "echo good" ] && [ ! -e "$P/pin-sub.old" ] && [[ "$OUT" != *MOVED* ]]; then
  pass "pins: a --deny-write file's directory cannot be renamed away and rebuilt (the host's file unchanged)"
else
  fail "pins: --deny-write's directory renamed" "pin-sub/build.sh 'echo good'" "$(cat "$P/pin-sub/build.sh"); $OUT"
fi

# The default credentials with the home as working directory: ~/.codex
# cannot be renamed away, ~/.codex/auth.json stays hidden at the next run.
mkdir -p "$HOME_DIR/.codex" && echo "codex-token-$$" >"$HOME_DIR/.codex/auth.json" && echo x >"$HOME_DIR/.codex/config.toml"
chown -R "$U:$G" "$HOME_DIR/.codex"
run_sb "$HOME_DIR" -- -- sh -c 'mv .codex .codex-moved 2>/dev/null && echo MOVED; echo y >.codex/config.toml && echo config-ok'
first=$OUT
run_sb "$HOME_DIR" -- -- sh -c 'cat .codex-moved/auth.json .codex/auth.json; true'
if [ -e "$HOME_DIR/.codex/auth.json" ] && [ ! -e "$HOME_DIR/.codex-moved" ] && [[ "$first" == *config-ok* ]] &&
   [[ "$first$OUT" != *MOVED* ]] && [[ "$OUT" != *"codex-token-$$"* ]]; then
  pass "pins: ~/.codex (cwd = home) cannot be renamed away; auth.json stays hidden at the next run, config.toml writable"
else
  fail "pins: ~/.codex renamed with the home as working directory" "~/.codex in place, the token unread" \
    "$(ls -A "$HOME_DIR"); $first; $OUT"
fi
rm -rf "$HOME_DIR/.codex" "$HOME_DIR/.codex-moved"

# Without a user namespace (checks/nouserns.sh's outer bwrap): Landlock gives
# the directories on the way to a hidden path no right to remove or make an
# entry, so the rename is refused there too.
if declare -F nu_sb >/dev/null && as_user -- "${nu_bwrap[@]}" true 2>/dev/null; then
  as_user -- sh -c "mkdir -p pin-nu && echo $pin_secret >pin-nu/secret.txt"
  nu_sb -- --hide pin-nu/secret.txt -- sh -c 'mv pin-nu pin-nu.x 2>/dev/null && echo MOVED; true'
  if [[ "$OUT" != *MOVED* ]] && [ ! -e "$P/pin-nu.x" ] && [ -e "$P/pin-nu/secret.txt" ]; then
    pass "pins: no user namespace: Landlock refuses to rename a --hide file's directory"
  else
    fail "pins: no user namespace: a --hide file's directory renamed" "refused" "$OUT; $(ls "$P")"
  fi
fi
rm -rf "$P"/pin-* "$P/.vscode/pin"
rmdir "$P/.vscode" 2>/dev/null
