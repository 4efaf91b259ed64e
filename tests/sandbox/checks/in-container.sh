# Sourced by tests/sandbox/test-sandbox: a harness that itself runs in a
# container (issue 28). The container is husk's own with `husk spec`'s
# defaults, which refuse what Docker's and containerd's default profiles
# refuse to a process without capabilities: clone3 answers ENOSYS (its flags
# are out of a filter's reach) and clone(CLONE_NEWUSER) EPERM. Its root is the
# host's, read-only; the test user's directories are bound in.

ic_bundle=$(mktemp -d "$WORK/ic-bundle.XXXXXX")
ic_id=husk-sbt-ic-$$
# ic_run CMD...: `husk run` of the container, whose process is CMD as the
# test user in its project; OUT, RC.
ic_run() {
  (cd "$ic_bundle" && "$husk" spec >/dev/null &&
    jq --arg w "$WORK" --arg home "$HOME_DIR" --argjson u "$U" --argjson g "$G" '
      .root = {path: "/", readonly: true} | .process.terminal = false |
      .process.user = {uid: $u, gid: $g} | .process.cwd = ($home + "/proj") |
      .process.env += ["HOME=" + $home] | .process.args = $ARGS.positional |
      .mounts += [{destination: $w, type: "bind", source: $w, options: ["rbind", "rw"]}]' \
      config.json --args "$@" >config.json.new && mv config.json.new config.json) ||
    { OUT="writing the container's config failed"; RC=99; return; }
  OUT=$(cd "$ic_bundle" && timeout 60 "$husk" run "$ic_id" 2>&1 </dev/null); RC=$?
}

ic_run "$husk" sandbox -- sh -c "cat $HOME_DIR/.ssh/id_rsa; echo made >ic-made; exit 5"
expect "in a container (clone3 ENOSYS, user namespaces refused): the sandbox runs behind Landlock, says so, status passes" \
  5 "no user namespace here (clone(CLONE_NEWUSER) is refused" "$secret"
if [ "$(cat "$HOME_DIR/proj/ic-made" 2>&1)" = made ]; then
  pass "in a container: the command writes its working directory"
else
  fail "in a container: the command writes its working directory" "proj/ic-made" "$(ls "$HOME_DIR/proj")"
fi
rm -f "$HOME_DIR/proj/ic-made"
"$husk" delete -f "$ic_id" >/dev/null 2>&1
rm -rf "$ic_bundle"
