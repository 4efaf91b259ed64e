# Persistence files (issue 27): what a host program runs later from a
# writable directory is read-only, the missing ones cannot be made, and
# nothing is left on the host. Hidden paths look read-only. Sourced by
# tests/sandbox/test-sandbox (its user, helpers and $husk).

# --- persistence files ---------------------------------------------------------
if ! command -v git >/dev/null; then
  skip "persistence files: git is not installed"
else
REPO=$HOME_DIR/repo
mkdir -p "$REPO/sub"
chown -R "$U:$G" "$REPO"
as_user "$REPO" -- sh -c 'git init -q . && git config user.email t@t && git config user.name t &&
  echo a >f && git add f && git commit -qm one && git init -q sub' || fail "persistence: make a repository" "ok" "failed"
REPO_BEFORE=$(cd "$REPO" && ls -A; ls -A .git/hooks sub/.git/hooks; md5sum .git/config)

run_sb "$REPO" -- -- sh -c '
  for f in .git/hooks/post-checkout sub/.git/hooks/post-checkout; do
    (echo "#!/bin/sh" >"$f") 2>/dev/null && echo "wrote $f"; done
  (echo "[core] fsmonitor = x" >>.git/config) 2>/dev/null && echo "wrote .git/config"
  for d in .vscode .idea .envrc .mcp.json; do mkdir "$d/x" 2>/dev/null && echo "made $d/x"; done
  for f in .envrc .mcp.json; do rmdir "$f" 2>/dev/null; (echo x >"$f") 2>/dev/null && echo "wrote $f"; done
  mv .git .git-old 2>/dev/null && echo "moved .git"
  mv sub/.git/hooks sub/hooks-old 2>/dev/null && echo "moved sub/.git/hooks"
  echo b >f && git add f && git commit -qm two && git checkout -q -b x && echo c >f && git checkout f &&
    [ "$(cat f)" = b ] && echo git-ok'
REPO_AFTER=$(cd "$REPO" && ls -A; ls -A .git/hooks sub/.git/hooks; md5sum .git/config)
if [ "$RC" = 0 ] && [[ "$OUT" == *git-ok* ]] && [[ "$OUT" != *wrote* ]] && [[ "$OUT" != *made* ]] &&
   [[ "$OUT" != *moved* ]] && [ "$REPO_BEFORE" = "$REPO_AFTER" ]; then
  pass "persistence: hooks, .git/config, .vscode, .envrc ... neither written nor made (nested repo too); git add/commit/checkout work; nothing left"
else
  fail "persistence files in the working directory" "no write, git-ok, the host's repo as before" \
    "exit $RC: $OUT; host: $(diff <(echo "$REPO_BEFORE") <(echo "$REPO_AFTER") | tr '\n' ' ')"
fi
[ "$(as_user "$REPO" -- git log --format=%s | head -1)" = two ] &&
  pass "persistence: the commit made in the sandbox is the host's" ||
  fail "persistence: the sandbox's commit" "two" "$(as_user "$REPO" -- git log --format=%s 2>&1 | head -3)"

# An empty .git (bwrap leaves its mount points behind): the command must not
# make it a repository whose config runs at the user's next `git status`.
EMPTY_GIT=$HOME_DIR/empty-git
mkdir -p "$EMPTY_GIT/.git" && chown -R "$U:$G" "$EMPTY_GIT"
run_sb "$EMPTY_GIT" -- -- sh -c 'printf "ref: refs/heads/main\n" >.git/HEAD; mkdir -p .git/objects .git/refs
  (printf "[core]\n\tfsmonitor = touch $HOME/fsmonitor-ran; false\n" >.git/config) 2>/dev/null && echo "wrote .git/config"
  git status >/dev/null && echo git-ok; true'
as_user "$EMPTY_GIT" -- git status >/dev/null 2>&1
if [ "$RC" = 0 ] && [[ "$OUT" != *wrote* ]] && [[ "$OUT" == *git-ok* ]] && [ ! -e "$HOME_DIR/fsmonitor-ran" ] &&
   [ ! -e "$EMPTY_GIT/.git/config" ]; then
  pass "persistence: an empty .git: its missing config is not made (an empty read-only file stands in, git reads it), so git outside runs nothing"
else
  fail "persistence: an empty .git" "no .git/config made, git-ok inside, nothing run by git outside" \
    "exit $RC: $OUT; $(ls -A "$EMPTY_GIT/.git" "$HOME_DIR/fsmonitor-ran" 2>&1 | tr '\n' ' ')"
fi
rm -rf "$EMPTY_GIT" "$HOME_DIR/fsmonitor-ran"

run_sb "$REPO" -- --allow-write .envrc -- sh -c 'echo ok >.envrc && cat .envrc'
[ "$RC" = 0 ] && [ "$(cat "$REPO/.envrc" 2>/dev/null)" = ok ] &&
  pass "persistence: --allow-write .envrc makes it again" ||
  fail "--allow-write .envrc" "exit 0, .envrc written" "exit $RC: $OUT"
rm -f "$REPO/.envrc"

# As root for the user, with a directory of root's (0700) the user cannot
# enter: the walk passes it over as the user would (its .envrc's mount
# would fail in the sandbox); the hooks are read-only as well.
mkdir -m 700 "$REPO/locked" && touch "$REPO/locked/.envrc"
OUT=$(cd "$REPO" && env SUDO_UID="$U" SUDO_GID="$G" timeout 60 "$husk" sandbox -- \
  sh -c '(echo x >.git/hooks/pre-commit) 2>/dev/null && echo wrote; echo ran' 2>&1); RC=$?
rm -rf "$REPO/locked"
expect "persistence, as root for a user: a directory only root may enter is passed over; hooks read-only" 0 ran wrote

# husk killed: the guardian removes the placeholders, and only those.
(cd "$REPO" && exec "${AS_USER[@]}" "$husk" sandbox -- sh -c \
  'mkdir .vscode/x 2>/dev/null && echo made >made; while [ ! -e go ]; do sleep 0.05; done; sleep 30' \
  >"$WORK/persist.out" 2>&1) &
sb=$!
for _ in $(seq 100); do [ -d "$REPO/.idea" ] && [ -d "$REPO/.vscode" ] && break; sleep 0.05; done
# The user replaces one placeholder while the sandbox runs: theirs stays.
as_user "$REPO" -- sh -c 'rmdir .idea && mkdir .idea && touch .idea/mine && touch go'
for _ in $(seq 100); do
  ps -e -o ruid= -o comm= | awk -v u="$U" '$1 == u && $2 == "sleep"' | grep -q . && break; sleep 0.05
done
sleep 0.2
kill -9 "$sb"; wait "$sb" 2>/dev/null
# The guardian removes them one after the other: all are waited for.
for _ in $(seq 50); do
  left=$(cd "$REPO" && ls -A | grep -v -x -e .git -e f -e sub -e go -e .idea | tr '\n' ' ')
  [ -z "$left" ] && break; sleep 0.1
done
if [ -z "$left" ] && [ -e "$REPO/.idea/mine" ] && [ ! -e "$REPO/made" ]; then
  pass "persistence: husk killed with SIGKILL: the placeholders go, the one the user replaced stays"
else
  fail "persistence: placeholders after SIGKILL" "none left, .idea/mine kept, .vscode/x not made" \
    "left: $left; .idea: $(ls -A "$REPO/.idea" 2>&1); made: $(cat "$REPO/made" 2>&1)"
fi
# Two sandboxes in the same directory: the second mounts over the first's
# placeholders; the first, ending, must not take them (and the second's
# protection with them) away.
rm -rf "$REPO/.idea" "$REPO/go" "$REPO"/*-up
wait_for() { for _ in $(seq 100); do [ -e "$1" ] && return; sleep 0.05; done; }
(cd "$REPO" && exec "${AS_USER[@]}" "$husk" sandbox -- sh -c \
  'touch a-up; while [ ! -e go-a ]; do sleep 0.05; done' >"$WORK/persist-a.out" 2>&1) &
sb_a=$!
wait_for "$REPO/a-up"
(cd "$REPO" && exec "${AS_USER[@]}" "$husk" sandbox -- sh -c \
  'touch b-up; while [ ! -e go-b ]; do sleep 0.05; done; mkdir -p .vscode/x 2>/dev/null && echo made
   (echo x >.mcp.json) 2>/dev/null && echo made; true' \
  >"$WORK/persist-b.out" 2>&1) &
sb_b=$!
wait_for "$REPO/b-up"
touch "$REPO/go-a"; wait "$sb_a"
touch "$REPO/go-b"; wait "$sb_b"; rc=$?
left=$(ls -d "$REPO"/.vscode "$REPO"/.mcp.json "$REPO"/.envrc 2>/dev/null | tr '\n' ' ')
if [ "$rc" = 0 ] && ! grep -q made "$WORK/persist-b.out" && [ ! -e "$REPO/.vscode/x" ] && [ -z "$left" ]; then
  pass "persistence: two sandboxes in one directory: the first leaves the placeholders (directories, files) the second holds, the second removes them"
else
  fail "persistence: two sandboxes in one directory" "exit 0, .vscode/x not made, no placeholder left" \
    "exit $rc: $(cat "$WORK/persist-b.out"); .vscode: $(ls -A "$REPO/.vscode" 2>&1); left: $left"
fi
rm -rf "$REPO"
fi

# --- a git directory a .git file or symlink names --------------------------------
# `git init --separate-git-dir` leaves a .git file ("gitdir: ..."); a .git
# symlink does the same: the git directory they name is protected as .git.
if command -v git >/dev/null; then
SEP=$HOME_DIR/sep
mkdir -p "$SEP" && chown "$U:$G" "$SEP"
as_user "$SEP" -- sh -c 'git init -q --separate-git-dir=.gitdata . && git config user.email t@t &&
  git config user.name t && echo a >f && git add f && git commit -qm one && git init -q lnk &&
  mv lnk/.git gd && ln -s ../gd lnk/.git' || fail "persistence: make the separated repositories" ok failed
run_sb "$SEP" -- -- sh -c '
  git config core.fsmonitor "touch /tmp/pwn; false" 2>/dev/null && echo "wrote .gitdata/config"
  (echo x >.gitdata/hooks/pre-commit) 2>/dev/null && echo "wrote .gitdata/hooks"
  (cd lnk && git config core.fsmonitor x) 2>/dev/null && echo "wrote gd/config"
  (echo x >gd/hooks/pre-commit) 2>/dev/null && echo "wrote gd/hooks"
  echo b >f && git commit -qam two && echo git-ok'
seen=$(as_user "$SEP" -- sh -c 'git config core.fsmonitor; git -C lnk config core.fsmonitor; ls .gitdata/hooks gd/hooks | grep -x pre-commit; git log --format=%s | head -1')
if [ "$RC" = 0 ] && [[ "$OUT" == *git-ok* ]] && [[ "$OUT" != *wrote* ]] && [ "$seen" = two ]; then
  pass "persistence: a .git file (--separate-git-dir) and a .git symlink: the git directory they name is protected, git commit works"
else
  fail "persistence: the git directory a .git file or symlink names" "nothing written, git-ok; host: two" \
    "exit $RC: $OUT; host: $seen"
fi
rm -rf "$SEP"
# A symlinked .git/config or .git/hooks: what it names in the tree is protected.
mkdir -p "$SEP" && chown "$U:$G" "$SEP"
as_user "$SEP" -- sh -c 'git init -q . && mv .git/config gitcfg && ln -s ../gitcfg .git/config &&
  mv .git/hooks myhooks && ln -s ../myhooks .git/hooks' || fail "persistence: make the symlinked config" ok failed
run_sb "$SEP" -- -- sh -c '(echo "[core] fsmonitor = x" >>gitcfg) 2>/dev/null && echo "wrote gitcfg"
  (echo x >myhooks/pre-commit) 2>/dev/null && echo "wrote myhooks"; git status >/dev/null && echo git-ok'
[ -e "$SEP/myhooks/pre-commit" ] && OUT="$OUT (pre-commit on the host)"
expect "persistence: a symlinked .git/config and .git/hooks: what they name is read-only" 0 git-ok wrote
rm -rf "$SEP"
fi

# --- paths the repository's config names ------------------------------------------
# core.hooksPath (husky's .husky) and include.path naming files of the work
# tree: read-only as the config is; a missing hooks directory not made.
if command -v git >/dev/null; then
NAMED=$HOME_DIR/named
mkdir -p "$NAMED" && chown "$U:$G" "$NAMED"
as_user "$NAMED" -- sh -c 'git init -q . && git config user.email t@t && git config user.name t && mkdir .husky &&
  touch .gitconfig.local && git config core.hooksPath .husky && git config --add include.path ../.gitconfig.local &&
  echo a >f && git add f && git commit -qm one && git init -q sub && git -C sub config core.hooksPath .githooks' ||
  fail "persistence: make the repositories with hooksPath and include.path" ok failed
run_sb "$NAMED" -- -- sh -c '
  (printf "#!/bin/sh\ntouch x\n" >.husky/pre-commit && chmod +x .husky/pre-commit) 2>/dev/null && echo "wrote .husky"
  (printf "[core]\n fsmonitor = x\n" >>.gitconfig.local) 2>/dev/null && echo "wrote .gitconfig.local"
  (mkdir -p sub/.githooks && echo x >sub/.githooks/pre-commit) 2>/dev/null && echo "made sub/.githooks"
  echo b >f && git commit -qam two && echo git-ok'
seen=$(as_user "$NAMED" -- sh -c 'ls -A .husky sub/; cat .gitconfig.local; git log -1 --format=%s' | tr '\n' ' ')
if [ "$RC" = 0 ] && [[ "$OUT" == *git-ok* ]] && [[ "$OUT" != *wrote* ]] && [[ "$OUT" != *made* ]] &&
   [ "$seen" = ".husky:  sub/: .git two " ]; then
  pass "persistence: core.hooksPath and include.path of the repository's config: read-only, a missing hooks directory not made; git commit works"
else
  fail "persistence: the paths the repository's config names" "nothing written, git-ok; host: .husky: sub/: .git two" \
    "exit $RC: $OUT; host: $seen"
fi
rm -rf "$NAMED"
fi

# --- names made in a protected git directory --------------------------------------
# A new .git/commondir makes git take config and hooks from the directory it
# names; config.worktree, gitdir and a missing included file are read as
# well. A placeholder cannot stand for them: moved aside at exit, and said.
if command -v git >/dev/null; then
NEW=$HOME_DIR/newfiles
mkdir -p "$NEW" && chown "$U:$G" "$NEW"
rm -f "$HOME_DIR/pwn" "$HOME_DIR/pwn2"
as_user "$NEW" -- sh -c 'git init -q . && git config user.email t@t && git config user.name t &&
  git config include.path ../.gitconfig.local && echo a >f && git add f && git commit -qm one' ||
  fail "persistence: make the repository for new names" ok failed
run_sb "$NEW" -- -- sh -c '
  mkdir .c && cp -r .git/objects .git/refs .git/HEAD .git/config .c/ &&
  git config -f .c/config core.fsmonitor "touch '"$HOME_DIR"'/pwn; false" && echo ../.c >.git/commondir &&
  echo "[core]" >.git/config.worktree && echo x >.git/gitdir &&
  printf "[core]\n fsmonitor = touch '"$HOME_DIR"'/pwn2; false\n" >.gitconfig.local && echo made'
as_user "$NEW" -- git status >/dev/null 2>&1
seen=$(cd "$NEW" && ls -A .git . | grep -E "^(commondir|config.worktree|gitdir|.gitconfig.local)" | sed 's/-[0-9]*$//' | sort | tr '\n' ' ')
if [ "$RC" = 0 ] && [[ "$OUT" == *made* ]] && [ ! -e "$HOME_DIR/pwn" ] && [ ! -e "$HOME_DIR/pwn2" ] &&
   [[ "$OUT" == *"husk sandbox: the command made $NEW/.git/commondir, which would give git another config and hooks: moved to commondir.husk-sandbox-"* ]] &&
   [ "$seen" = ".gitconfig.local.husk-sandbox commondir.husk-sandbox config.worktree.husk-sandbox gitdir.husk-sandbox " ]; then
  pass "persistence: a .git/commondir, config.worktree, gitdir or included config made by the command is moved aside at exit and said; git status runs nothing"
else
  fail "persistence: names made in a git directory" "moved aside, said; no pwn" \
    "exit $RC: $OUT; host: $seen; pwn: $(ls "$HOME_DIR"/pwn* 2>&1)"
fi
rm -rf "$NEW"/.git/*.husk-sandbox-* "$NEW"/.gitconfig.local* "$HOME_DIR/pwn" "$HOME_DIR/pwn2"
# husk killed: the guardian moves it aside.
(cd "$NEW" && exec "${AS_USER[@]}" "$husk" sandbox -- sh -c 'echo ../.c >.git/commondir; sleep 30' \
  >"$WORK/newfiles.out" 2>&1) &
sb=$!
for _ in $(seq 100); do [ -e "$NEW/.git/commondir" ] && break; sleep 0.05; done
kill -9 "$sb"; wait "$sb" 2>/dev/null
for _ in $(seq 100); do [ -e "$NEW/.git/commondir" ] || break; sleep 0.1; done
if [ ! -e "$NEW/.git/commondir" ] && ls "$NEW/.git" | grep -q "^commondir.husk-sandbox-" &&
   grep -q "made $NEW/.git/commondir" "$WORK/newfiles.out"; then
  pass "persistence: husk killed with SIGKILL: the guardian moves a new .git/commondir aside and says so"
else
  fail "persistence: a new commondir after SIGKILL" "moved aside by the guardian, said" \
    "$(ls -A "$NEW/.git" | tr '\n' ' '); $(cat "$WORK/newfiles.out")"
fi
rm -rf "$NEW"
fi

# --- repositories made during the run, the walk's bound ----------------------------
# A repository the command makes at the top of a writable directory or one
# level below is its own (config, hooks): said at exit. One there before is not.
if command -v git >/dev/null; then
MADE=$HOME_DIR/made
mkdir -p "$MADE" && chown "$U:$G" "$MADE"
as_user "$MADE" -- git init -q old || fail "persistence: make the old repository" ok failed
run_sb "$MADE" -- -- sh -c 'git init -q src && git -C src config core.fsmonitor x && mkdir bare &&
  git -C bare init -q --bare . && git init -q --bare . && git -C old status >/dev/null && echo ok'
said=$(printf '%s\n' "$OUT" | grep -o "made a git repository in [^:]*" | sort | tr '\n' ' ')
if [ "$RC" = 0 ] && [ "$said" = "made a git repository in $MADE made a git repository in $MADE/bare made a git repository in $MADE/src " ]; then
  pass "persistence: repositories made during the run (a .git, bare layouts) are said at exit, an old one is not"
else
  fail "persistence: repositories made during the run" "said: $MADE, $MADE/bare, $MADE/src" "exit $RC: $OUT"
fi
rm -rf "$MADE"
mkdir -p "$HOME_DIR/big" && (cd "$HOME_DIR/big" && seq 1100 | xargs touch) && chown -R "$U:$G" "$HOME_DIR/big"
as_user "$HOME_DIR/big" -- sh -c 'git init -q . && git remote add origin https://example.com/big.git'
# Its .git/config, past the bound: bound read-only on itself (not hidden by what stands in for a missing one).
run_sb "$HOME_DIR/big" -- -- sh -c 'git remote; git config core.fsmonitor x 2>/dev/null && echo wrote-config; true'
expect "persistence: a walk stopped at its bound of names says so at start; the top .git/config stays read-only, and shown" 0 \
  "persistence walk of $HOME_DIR/big reached its bound" wrote-config
[[ "$OUT" == *origin* ]] || fail "persistence: .git/config past the walk's bound" "origin listed" "$OUT"
rm -rf "$HOME_DIR/big"
fi

# --- the home as the working directory -----------------------------------------
mkdir -p "$HOME_DIR/.config/git" && echo "[user]" >"$HOME_DIR/.config/git/config" && chown -R "$U:$G" "$HOME_DIR/.config"
echo "machine x password netrc-secret" >"$HOME_DIR/.netrc" && chown "$U:$G" "$HOME_DIR/.netrc"
HOME_BEFORE=$(ls -A "$HOME_DIR" "$HOME_DIR/.config"; cat "$HOME_DIR/.config/git/config")
run_sb "$HOME_DIR" -- -- sh -c '
  for f in .bashrc .profile .zshenv .gitconfig .config/git/config; do (echo x >>"$f") 2>/dev/null && echo "wrote $f"; done
  mkdir -p .config/systemd/user 2>/dev/null && echo "wrote .config/systemd"
  mv .config .config-old 2>/dev/null && echo "wrote: moved .config"
  stat -c "ssh %a" .ssh; test -w .ssh && echo ssh-writable; touch .ssh/x 2>/dev/null && echo ssh-written
  test -w .netrc && echo netrc-writable; cat .netrc
  # What stands in for a missing rc file is read as one: git and bash go on.
  stat -c "rc: %F %s" .gitconfig .bashrc .mcp.json
  git init -q /tmp/rc-repo && git -C /tmp/rc-repo status >/dev/null && echo git-ok
  bash -ic true 2>&1 | grep bashrc; true'
HOME_AFTER=$(ls -A "$HOME_DIR" "$HOME_DIR/.config"; cat "$HOME_DIR/.config/git/config")
rm -rf "$HOME_DIR/.config" "$HOME_DIR/.netrc"
standins=$(printf '%s\n' "$OUT" | grep -c "^rc: regular empty file 0$")
if [ "$RC" = 0 ] && [[ "$OUT" == *"ssh 555"* ]] && [[ "$OUT" != *wrote* ]] && [[ "$OUT" != *ssh-writ* ]] &&
   [[ "$OUT" != *netrc-* ]] && [[ "$OUT" == *git-ok* ]] && [[ "$OUT" != *bashrc* ]] && [ "$standins" = 3 ] &&
   [ "$HOME_BEFORE" = "$HOME_AFTER" ]; then
  pass "the home as the working directory: rc files and ~/.config/git, systemd not made or written (a missing one is an empty file: git and bash -i run), ~/.ssh an empty read-only directory (mode 555, not writable), ~/.netrc empty and not writable"
else
  fail "the home as the working directory" "no rc file written, missing ones empty files (git-ok, no bashrc error), ~/.ssh mode 555 and not writable, ~/.netrc empty and not writable, the home as before" \
    "exit $RC: $OUT; home: $(diff <(echo "$HOME_BEFORE") <(echo "$HOME_AFTER") | tr '\n' ' ')"
fi

# --- the scratch home --------------------------------------------------------------
# Unprivileged husk can look into the sandbox only once the command runs: it
# waits a little for that. As root husk looks before the command starts.
run_sb -- -- sh -c 'mkdir -p ~/.ssh/k 2>/dev/null && echo ssh-made; stat -c "ssh %a" ~/.ssh; echo x >~/notes.txt; sleep 0.3'
if [ "$RC" = 0 ] && [[ "$OUT" == *"ssh 555"* ]] && [[ "$OUT" != *ssh-made* ]] &&
   [[ "$OUT" == *"husk sandbox: "*"scratch home"*"notes.txt"* ]]; then
  pass "the scratch home: ~/.ssh read-only, writes there said to be discarded at exit"
else
  fail "the scratch home" "~/.ssh mode 555, not made; a husk sandbox: line naming notes.txt" "exit $RC: $OUT"
fi
OUT=$(cd "$HOME_DIR/proj" && env SUDO_UID="$U" SUDO_GID="$G" timeout 60 "$husk" sandbox -- sh -c 'mkdir ~/new' 2>&1); RC=$?
expect "the scratch home, as root for a user: a write in the command's first moment is said" 0 "scratch home $HOME_DIR (a tmpfs: no flag shows the real one) is discarded: new"
run_sb -- -- true
expect "the scratch home: nothing said when nothing was written there" 0 "" "scratch home"
