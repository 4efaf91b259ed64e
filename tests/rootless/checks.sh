# The runtime-alone checks of tests/rootless/test-rootless (sourced; needs its
# helpers, WORK, ROOTFS, RT_BIN, LABEL, RL_UID, RL_GID, SUB_START).

# run_as_user RT BUNDLE [PREFIX-CMD...]: `RT run` of BUNDLE as the user
# (after PREFIX-CMD, run as root), output in OUT, rc in RC; LEFT_STATE=1 when
# `state` still knew the container afterwards; it is force-deleted then.
# Numbered ids: an id naming the check (idmap, bogus) would match the
# expected error messages.
RUN_N=0
run_as_user() {
  local rt=$1 b=$2 id
  RUN_N=$((RUN_N + 1)); id=rl$RUN_N-$1
  shift 2
  capture "$@" "${U[@]}" "${RT_BIN[$rt]}" run --bundle "$b" "$id"
  LEFT_STATE=0
  as_user "${RT_BIN[$rt]}" state "$id" >/dev/null 2>&1 && LEFT_STATE=1
  as_user "${RT_BIN[$rt]}" delete --force "$id" >/dev/null 2>&1
}

# What the issue asks of `husk spec --rootless`; for a baseline the
# differences are notes.
spec_checks() {
  local rt=$1 cfg=$2 got want what
  local -a items=(
    "spec --rootless: a user namespace|$(jq -r '[.linux.namespaces[].type] | index("user") != null' "$cfg")|true"
    "spec --rootless: a network namespace|$(jq -r '[.linux.namespaces[].type] | index("network") != null' "$cfg")|true"
    "spec --rootless: uidMappings map the caller to 0|$(jq -c '.linux.uidMappings' "$cfg")|[{\"containerID\":0,\"hostID\":$RL_UID,\"size\":1}]"
    "spec --rootless: gidMappings map the caller to 0|$(jq -c '.linux.gidMappings' "$cfg")|[{\"containerID\":0,\"hostID\":$RL_GID,\"size\":1}]"
    "spec --rootless: no cgroup filesystem mount|$(jq -c '[.mounts[] | select(.type == "cgroup" or .type == "cgroup2") | .destination]' "$cfg")|[]"
    "spec --rootless: no cgroupsPath|$(jq -c '.linux.cgroupsPath' "$cfg")|null"
  )
  for item in "${items[@]}"; do
    IFS='|' read -r what got want <<<"$item"
    if [ "$rt" = husk ]; then expect_eq "$LABEL: $what" "$rt spec --rootless (as the user)" "$want" "$got"
    elif [ "$got" != "$want" ]; then note "$LABEL differs from the issue: $what: has $got, the issue asks $want"; fi
  done
}

# 1. `run` of a spec --rootless bundle: root inside is the user outside.
check_run() {
  local rt=$1 b
  b=$(new_bundle "$rt" run 'id -u; awk "{ print \"map\", \$1, \$2, \$3 }" /proc/self/uid_map /proc/self/gid_map
    echo x >/dev/null && test -c /dev/null && head -c 4 /dev/zero | wc -c | sed "s/^/zero-bytes /"
    echo "netns $(readlink /proc/self/ns/net)"')
  spec_checks "$rt" "$b/config.json"
  run_as_user "$rt" "$b"
  expect_out "$LABEL: run as the user: uid 0 inside, uid_map and gid_map map the user to 0, /dev/null and /dev/zero work" \
    "$rt run (bundle of spec --rootless, as $RL_USER)" \
    "0"$'\n'"map 0 $RL_UID 1"$'\n'"map 0 $RL_GID 1" "zero-bytes 4"
  local host_net inside_net
  host_net=$(as_user readlink /proc/self/ns/net)
  inside_net=$(sed -n 's/^netns //p' <<<"$OUT")
  if [ "$rt" = husk ]; then
    if [ -n "$inside_net" ] && [ "$inside_net" != "$host_net" ]; then pass "$LABEL: run: the container has its own network namespace"
    else fail "$LABEL: run: the container has its own network namespace" "readlink /proc/self/ns/net inside and on the host" \
      "different" "inside '$inside_net', host '$host_net'"; fi
  elif [ "$inside_net" = "$host_net" ]; then
    note "$LABEL differs from the issue: the container shares the host's network namespace"
  fi
}

# 2. A file made in a rw bind mount belongs to the user on the host.
check_bind() {
  local rt=$1 b share=$WORK/s/$1-rw
  mkdir -p "$share" && chown "$RL_UID:$RL_GID" "$share"
  b=$(new_bundle "$rt" bind 'touch /mnt/rw/made-inside && mkdir /mnt/rw/dir-inside && echo made' "$BIND" \
    --arg dst /mnt/rw --arg src "$share" --arg mode rw)
  run_as_user "$rt" "$b"
  expect_out "$LABEL: bind mount rw: making a file inside works" "$rt run (touch, mkdir in /mnt/rw)" made || return
  expect_eq "$LABEL: bind mount rw: the file made inside belongs to the user on the host" \
    "stat -c %u:%g $share/made-inside" "$RL_UID:$RL_GID" "$(host_owner "$share/made-inside")"
  expect_eq "$LABEL: bind mount rw: the dir made inside belongs to the user on the host" \
    "stat -c %u:%g $share/dir-inside" "$RL_UID:$RL_GID" "$(host_owner "$share/dir-inside")"
}

# 3. CAP_SYS_ADMIN (and DAC_OVERRIDE, FOWNER, CHOWN) inside, a read-only
# bind of a root-owned host dir and a root-owned file in the rw bind: the
# writes fail, mounts inside stay inside; checked on the host afterwards.
check_admin() {
  local rt=$1 b ro=$WORK/s/$1-ro rw=$WORK/s/$1-adm
  mkdir -p "$ro" "$rw" && chown "$RL_UID:$RL_GID" "$rw"
  echo host-original >"$ro/root-file"; echo host-original >"$rw/root-owned"
  chmod 644 "$ro/root-file" "$rw/root-owned"
  local script='
    w() { f=$1; shift; sh -c "$*" 2>/dev/null && echo "WROTE $f"; }
    w ro-file "echo pwn >/mnt/ro/root-file"; w rw-root-file "echo pwn >/mnt/rw/root-owned"
    w ro-new "touch /mnt/ro/new"; w chown "chown 0:0 /mnt/rw/root-owned; echo pwn >/mnt/rw/root-owned"
    mount -o remount,rw,bind /mnt/ro 2>/dev/null && echo "note: remount rw of the ro bind succeeded"
    w ro-file-after-remount "echo pwn >/mnt/ro/root-file"
    mount -o bind /mnt/rw /mnt/ro 2>/dev/null && echo "note: mount --bind over /mnt/ro succeeded" && umount /mnt/ro
    mount -t tmpfs tmpfs /mnt/ro 2>/dev/null && echo "note: mount -t tmpfs over /mnt/ro succeeded" && touch /mnt/ro/over
    grep CapEff /proc/self/status'
  b=$(new_bundle "$rt" admin "$script" '.mounts += [
      {destination: "/mnt/ro", type: "bind", source: $ro, options: ["bind", "ro"]},
      {destination: "/mnt/rw", type: "bind", source: $rw, options: ["bind", "rw"]}] | '"$ADMIN_CAPS" \
    --arg ro "$ro" --arg rw "$rw")
  run_as_user "$rt" "$b"
  # The host checks below would pass vacuously when nothing ran.
  expect_out "$LABEL: CAP_SYS_ADMIN inside: the container ran with it" "$rt run (caps + SYS_ADMIN)" "CapEff:" || return
  grep '^note: ' <<<"$OUT" | sed "s/^note: /note: $LABEL: inside, /"
  if grep -q '^WROTE ' <<<"$OUT"; then
    fail "$LABEL: CAP_SYS_ADMIN inside: root-owned host files cannot be written" "$rt run (echo pwn >...)" \
      "every write refused" "$(grep '^WROTE ' <<<"$OUT")"
  else pass "$LABEL: CAP_SYS_ADMIN inside: root-owned host files cannot be written"; fi
  expect_eq "$LABEL: CAP_SYS_ADMIN inside: the host files are unchanged" \
    "cat $ro/root-file $rw/root-owned; ls -A $ro; stat" \
    "host-original host-original root-file 0:0 0:0" \
    "$(cat "$ro/root-file" "$rw/root-owned" | tr '\n' ' ')$(ls -A "$ro" | tr '\n' ' ')$(host_owner "$ro/root-file") $(host_owner "$rw/root-owned")"
  local leaked
  leaked=$(grep -F "$WORK/s/" /proc/self/mountinfo)
  expect_eq "$LABEL: CAP_SYS_ADMIN inside: no mount reached the host's mount namespace" \
    "grep $WORK/s/ /proc/self/mountinfo (on the host)" "" "$leaked"
}

# 4. /sys/fs/cgroup is read-only inside (CVE-2023-25809 class): the runtime
# starts in a cgroup v2 directory delegated to the user (owned by it, as
# systemd's Delegate=yes does), the worst case; with CAP_SYS_ADMIN the
# container tries to make cgroups, also after lazily unmounting what covers
# /sys/fs/cgroup. No new directory may appear on the host's cgroupfs.
check_cgroup() {
  local rt=$1 base deleg="" b f
  base=$(cg2_base)
  if [ -n "$base" ]; then
    deleg=$base/husk-test/rootless-$$-$rt
    mkdir -p "$deleg" && DELEG_DIRS+=("$deleg")
    for f in "$deleg" "$deleg/cgroup.procs" "$deleg/cgroup.subtree_control" "$deleg/cgroup.threads"; do
      [ -e "$f" ] && chown "$RL_UID:$RL_GID" "$f"
    done
  else
    skip "$LABEL: no cgroup v2 hierarchy: /sys/fs/cgroup checked without a delegated cgroup"
  fi
  # The v1 memory hierarchy is not probed: the caller's cgroup there is the
  # machine's process_api, which no test may touch.
  local script='
    own=$(sed -n "s/^0:://p" /proc/self/cgroup)
    probe() { for d in /sys/fs/cgroup /sys/fs/cgroup/* /sys/fs/cgroup/unified$own /sys/fs/cgroup$own "$DELEG"; do
      case $d in *memory*) continue ;; esac
      [ -d "$d" ] && mkdir "$d/rl-probe-$1" 2>/dev/null && echo "made $d/rl-probe-$1"; done; }
    probe plain
    touch /sys/fs/cgroup/rl-probe-plain-file 2>/dev/null && echo "made /sys/fs/cgroup/rl-probe-plain-file"
    i=0; while [ $i -lt 4 ] && umount -l /sys/fs/cgroup 2>/dev/null; do i=$((i + 1)); done
    echo "umount -l /sys/fs/cgroup succeeded $i times"
    probe umount; echo probed'
  b=$(new_bundle "$rt" cgroup "$script" ".process.env += [\"DELEG=$deleg\"] | $ADMIN_CAPS")
  if [ -n "$deleg" ]; then
    run_as_user "$rt" "$b" sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$deleg"
  else
    run_as_user "$rt" "$b"
  fi
  expect_out "$LABEL: /sys/fs/cgroup probe ran (CAP_SYS_ADMIN, started in a delegated cgroup)" "$rt run" probed || return
  grep -E '^(made|umount)' <<<"$OUT" | sed "s/^/note: $LABEL: inside, /"
  local made kind what
  for kind in plain umount; do
    what="$LABEL: /sys/fs/cgroup is read-only inside: mkdir makes no cgroup on the host"
    [ $kind = umount ] && what="$LABEL: /sys/fs/cgroup is read-only inside, even after umount -l /sys/fs/cgroup with CAP_SYS_ADMIN"
    made=$( { [ -n "$deleg" ] && find "$deleg" -name "rl-probe-$kind*"
              ls -d /sys/fs/cgroup/rl-probe-$kind* /sys/fs/cgroup/*/rl-probe-$kind* "$base"/rl-probe-$kind*; } 2>/dev/null)
    expect_eq "$what" "find ${deleg:-/sys/fs/cgroup} /sys/fs/cgroup/* -name 'rl-probe-$kind*' (on the host)" "" "$made"
    # Only our probes: the runtime may have made cgroups of its own below.
    [ -n "$made" ] && rmdir $made 2>/dev/null
  done
}

# 5. A multi-range mapping through newuidmap/newgidmap: the user's own id
# to 0 and its /etc/subuid range to 1..65536; uid 1000 inside is
# SUB_START+999 on the host.
check_ranges() {
  local rt=$1 b share=$WORK/s/$1-ranges want=$((SUB_START + 999))
  mkdir -p "$share" && chown "$RL_UID:$RL_GID" "$share" && chmod 1777 "$share"
  b=$(new_bundle "$rt" ranges 'awk "{ print \"map\", \$1, \$2, \$3 }" /proc/self/uid_map /proc/self/gid_map
      echo "uid $(id -u) gid $(id -g)"; touch /mnt/rw/by-1000 && echo made' \
    "$(two_ranges "$SUB_START" uidMappings "$RL_UID") | $(two_ranges "$SUB_START" gidMappings "$RL_GID") |
     .process.user = {uid: 1000, gid: 1000} | $BIND" --arg dst /mnt/rw --arg src "$share" --arg mode rw)
  run_as_user "$rt" "$b"
  expect_out "$LABEL: multi-range mapping: uid_map/gid_map have both ranges, the process is 1000:1000" \
    "$rt run (uidMappings/gidMappings [{0,$RL_UID,1},{1,$SUB_START,65536}], user 1000)" \
    "map 0 $RL_UID 1"$'\n'"map 1 $SUB_START 65536"$'\n'"map 0 $RL_GID 1"$'\n'"map 1 $SUB_START 65536" \
    "uid 1000 gid 1000" made || return
  expect_eq "$LABEL: multi-range mapping: a file of uid 1000 inside is $want:$want on the host" \
    "stat -c %u:%g $share/by-1000" "$want:$want" "$(host_owner "$share/by-1000")"
}

# 5b. Root inside from the /etc/subuid range, not the user: the init changes
# its host uid when it becomes root (the kernel makes it non-dumpable, its
# /proc/<pid>/ns closed to the user) and a bind mount still works, as husk
# opened its namespaces before; root's file is SUB_START on the host. The
# tmpfs with 100000 options keeps husk busy after releasing the init, so an
# init that is root by then is not a race lost now and then.
check_subroot() {
  local rt=$1 b share=$WORK/s/$1-subroot
  mkdir -p "$share" && chmod 1777 "$share"
  b=$(new_bundle "$rt" subroot 'awk "{ print \"map\", \$1, \$2, \$3 }" /proc/self/uid_map
      touch /mnt/rw/by-root && echo made' \
    ".linux.uidMappings = [{containerID: 0, hostID: $SUB_START, size: 65536}] |
     .linux.gidMappings = [{containerID: 0, hostID: $SUB_START, size: 65536}] | $BIND |
     .mounts += [{destination: \"/mnt/ro\", type: \"tmpfs\", source: \"tmpfs\", options: [range(100000) | \"nosuid\"]}]" \
    --arg dst /mnt/rw --arg src "$share" --arg mode rw)
  run_as_user "$rt" "$b"
  expect_out "$LABEL: root from the subuid range: a bind mount works, uid_map maps 0 to $SUB_START" \
    "$rt run (uidMappings/gidMappings [{0,$SUB_START,65536}], a bind mount)" "map 0 $SUB_START 65536" made || return
  expect_eq "$LABEL: root from the subuid range: root's file inside is $SUB_START:$SUB_START on the host" \
    "stat -c %u:%g $share/by-root" "$SUB_START:$SUB_START" "$(host_owner "$share/by-root")"
  # A source only the user can reach (below its 0700 directory): that root
  # cannot open it, the runtime (the user itself) opens it for the init.
  local private=$WORK/s/$rt-private
  mkdir -p "$private/data" && touch "$private/data/seen" && chown -R "$RL_UID:$RL_GID" "$private" && chmod 700 "$private"
  b=$(new_bundle "$rt" subroot-private 'ls /mnt/priv' \
    ".linux.uidMappings = [{containerID: 0, hostID: $SUB_START, size: 65536}] |
     .linux.gidMappings = [{containerID: 0, hostID: $SUB_START, size: 65536}] | $BIND" \
    --arg dst /mnt/priv --arg src "$private/data" --arg mode ro)
  run_as_user "$rt" "$b"
  if [ "$rt" = husk ]; then
    expect_out "$LABEL: root from the subuid range: a bind source in the user's 0700 directory is mounted" \
      "$rt run (uidMappings [{0,$SUB_START,65536}], bind of $private/data)" seen
  elif [[ "$OUT" != *seen* ]]; then
    note "$LABEL: a bind source the subuid root cannot reach fails: exit $RC: $(head -c 200 <<<"$OUT")"
  fi
}

# 6. Mappings the user does not own are refused, naming the range. (The
# container ids must not contain the field names.)
check_foreign() {
  local rt=$1 b foreign=$((SUB_START + 64 * 65536)) field own what
  for field in uidMappings gidMappings; do
    own=$RL_UID; [ $field = gidMappings ] && own=$RL_GID
    what="$LABEL: $field with a range not in /etc/sub${field:0:3} is refused, naming it"
    b=$(new_bundle "$rt" foreign-${field:0:1} 'echo ran' "$(two_ranges "$foreign" $field "$own" 1000)")
    run_as_user "$rt" "$b"
    if [ "$RC" -ne 0 ] && [ "$LEFT_STATE" = 0 ] && grep -qE "$foreign|$field" <<<"$OUT" && ! grep -q '^ran$' <<<"$OUT"; then
      pass "$what"; note "$LABEL: its message: $(head -c 400 <<<"$OUT" | tr '\n' ' ')"
    else
      fail "$what" "$rt run ($field [{0,$own,1},{1,$foreign,1000}])" \
        "non-zero exit, output naming $foreign or $field, no state left" "exit $RC, state left: $LEFT_STATE, output: $OUT"
    fi
  done
  # Host root as the only id: runc's error does not name the field, husk's must.
  what="$LABEL: uidMappings of host root (0) is refused"
  b=$(new_bundle "$rt" foreign-0 'echo ran' '.linux.uidMappings = [{containerID: 0, hostID: 0, size: 1}]')
  run_as_user "$rt" "$b"
  if [ "$RC" -ne 0 ] && [ "$LEFT_STATE" = 0 ] && ! grep -q '^ran$' <<<"$OUT" &&
     { [ "$rt" != husk ] || grep -q uidMappings <<<"$OUT"; }; then
    pass "$what"; note "$LABEL: its message: $(head -c 400 <<<"$OUT" | tr '\n' ' ')"
  else
    local named=""; [ "$rt" = husk ] && named=", output naming uidMappings"
    fail "$what" "$rt run (uidMappings [{0,0,1}])" "non-zero exit$named, no state left" \
      "exit $RC, state left: $LEFT_STATE, output: $OUT"
  fi
}

# wait_status RT ID STATUS: until `state` says STATUS (5 s).
wait_status() {
  local i
  for i in $(seq 25); do
    as_user "${RT_BIN[$1]}" state "$2" 2>/dev/null | grep -q "\"status\": *\"$3\"" && return 0
    sleep 0.2
  done
  return 1
}

# counted_or_note RT WHAT CMD WANT-DESC OK: husk's result is a check (OK: 0
# or 1), a baseline's is a note with the last capture.
counted_or_note() {
  if [ "$1" != husk ]; then note "$LABEL: $2: exit $RC: $(head -c 300 <<<"$OUT" | tr '\n' ' ')"
  elif [ "$5" = 1 ]; then pass "$LABEL: $2"
  else fail "$LABEL: $2" "$3" "$4" "exit $RC, output: $OUT"; fi
}

# The issue: ps works for the user's own container; update, pause and
# events --stats fail clearly (naming the missing cgroup) without one.
no_cgroup_commands() {
  local rt=$1 id=$2 bin=${RT_BIN[$1]} pid ok
  pid=$(as_user "$bin" state "$id" | jq -r .pid)
  capture "${U[@]}" "$bin" ps "$id"
  ok=0; [ "$RC" = 0 ] && grep -qw "$pid" <<<"$OUT" && ok=1
  counted_or_note "$rt" "ps lists the init (pid $pid) of the user's container" "$rt ps $id" "exit 0, output with $pid" $ok
  # Without a cgroup husk lists the init's pid namespace: a process exec'd
  # into it (not the init's child) is in, one of the user's outside is not.
  local pidfile=$WORK/home/ps-exec-$rt.pid outside json
  as_user sleep 60 & outside=$!
  as_user "$bin" exec -d --pid-file "$pidfile" "$id" sleep 60 >/dev/null 2>&1
  capture "${U[@]}" "$bin" ps --format json "$id"
  json=$OUT
  ok=0
  if [ -s "$pidfile" ] && jq -e --argjson e "$(cat "$pidfile")" --argjson i "$pid" --argjson o "$outside" \
      'index($e) != null and index($i) != null and index($o) == null' <<<"$json" >/dev/null 2>&1; then ok=1; fi
  counted_or_note "$rt" "ps --format json: the init and an exec'd process, not the user's other processes" \
    "$rt exec -d $id sleep 60; $rt ps --format json $id" "[... $pid ... exec'd pid ...] without $outside" $ok
  kill "$outside" 2>/dev/null; wait "$outside" 2>/dev/null
  local cmd
  for cmd in "pause" "update --memory 64m" "events --stats"; do
    capture "${U[@]}" "$bin" $cmd "$id"
    ok=0; [ "$RC" != 0 ] && grep -qi cgroup <<<"$OUT" && ok=1
    counted_or_note "$rt" "$cmd without a cgroup: a clear error" "$rt $cmd $id" "non-zero exit, output naming the cgroup" $ok
    [ "$cmd" = pause ] && [ "$RC" = 0 ] && as_user "$bin" resume "$id" >/dev/null 2>&1
  done
}

# 7. The user's own container through create/start/exec/kill/delete with
# the default state root $XDG_RUNTIME_DIR/<rt>.
check_state() {
  local rt=$1 bin=${RT_BIN[$1]} id=rl-state-$1 b
  b=$(new_bundle "$rt" state 'trap "exit 0" TERM; while :; do sleep 1; done')
  check "$LABEL: create (default state root)" 0 "" "${U[@]}" "$bin" create --bundle "$b" "$id" || return
  check "$LABEL: state: created" 0 '"created"' "${U[@]}" "$bin" state "$id"
  expect_eq "$LABEL: the state root is \$XDG_RUNTIME_DIR/$rt, the user's" "stat -c %u:%g $WORK/xdg/$rt" \
    "$RL_UID:$RL_GID" "$(host_owner "$WORK/xdg/$rt")"
  check "$LABEL: list shows the container" 0 "$id" "${U[@]}" "$bin" list
  expect_eq "$LABEL: list: the OWNER is the user (runc: the state dir's owner)" "$rt list" "$RL_USER" \
    "$(as_user "$bin" list | awk -v id="$id" '$1 == id { print $NF }')"
  check "$LABEL: start" 0 "" "${U[@]}" "$bin" start "$id"
  check "$LABEL: state: running" 0 '"running"' "${U[@]}" "$bin" state "$id"
  check "$LABEL: exec echo hi" 0 hi "${U[@]}" "$bin" exec "$id" echo hi &&
    expect_eq "$LABEL: exec: stdout is exactly the process's" "$rt exec $id echo hi" hi "$OUT"
  no_cgroup_commands "$rt" "$id"
  check "$LABEL: kill TERM" 0 "" "${U[@]}" "$bin" kill "$id" TERM
  if wait_status "$rt" "$id" stopped; then pass "$LABEL: kill: the container stops"
  else fail "$LABEL: kill: the container stops" "$rt state $id" '"stopped" within 5 s' "$(as_user "$bin" state "$id" 2>&1)"; fi
  check "$LABEL: delete" 0 "" "${U[@]}" "$bin" delete "$id"
  check "$LABEL: state after delete: unknown" nz "" "${U[@]}" "$bin" state "$id"
  as_user "$bin" delete --force "$id" >/dev/null 2>&1
}

# husk's own binary (CVE-2019-5736). Installed (root's, written by no one
# else) it is run as it is: no process of the user's containers can write it
# (check_admin: root-owned files stay unwritable with every capability
# inside), so no copy is made at each start. A husk the user owns could be
# written from inside: the init runs a sealed memfd copy of it.
check_binary() {
  local rt=$1 b own=$WORK/bin/husk-own bin id pid exe want
  [ "$rt" = husk ] || return 0
  cp "${RT_BIN[$rt]}" "$own" && chown "$RL_UID:$RL_GID" "$own"
  b=$(new_bundle "$rt" binary 'sleep 30')
  for bin in "${RT_BIN[$rt]}" "$own"; do
    id=rl-binary-$RANDOM
    check "$LABEL: create with $bin" 0 "" "${U[@]}" "$bin" create --bundle "$b" "$id" || continue
    pid=$(as_user "$bin" state "$id" | jq -r .pid)
    exe=$(readlink "/proc/$pid/exe")
    if [ "$bin" = "$own" ]; then want="/memfd:husk (deleted)"; else want=$bin; fi
    expect_eq "$LABEL: the created init runs $([ "$bin" = "$own" ] && echo "a sealed copy of a husk the user owns" ||
      echo "the installed (root's) husk itself")" "readlink /proc/$pid/exe (on the host)" "$want" "$exe"
    as_user "$bin" delete --force "$id" >/dev/null 2>&1
  done
  rm -f "$own"
}

# No XDG_RUNTIME_DIR and no --root: husk must say so (a baseline's
# behaviour is recorded); another user's state root is refused.
check_roots() {
  local rt=$1 bin=${RT_BIN[$1]} id=rl-roots-$1 b
  b=$(new_bundle "$rt" roots 'echo ran')
  local cmd ok
  for cmd in list create; do
    if [ $cmd = list ]; then capture "${U_NOXDG[@]}" "$bin" list
    else
      capture "${U_NOXDG[@]}" "$bin" create --bundle "$b" "$id-noxdg"
      as_user_noxdg "$bin" delete --force "$id-noxdg" >/dev/null 2>&1
    fi
    ok=0; [ "$RC" -ne 0 ] && [[ "$OUT" == *XDG_RUNTIME_DIR* ]] && ok=1
    counted_or_note "$rt" "$cmd without XDG_RUNTIME_DIR or --root: a clear error" "env -u XDG_RUNTIME_DIR $rt $cmd" "non-zero exit, output naming XDG_RUNTIME_DIR" $ok
  done

  # Another user's state root: root's, 0700.
  local other=$WORK/root-state-$rt
  mkdir -p "$other" && chmod 700 "$other"
  check "$LABEL: --root of another user (root, 0700): list refused" nz "" "${U[@]}" "$bin" --root "$other" list
  check "$LABEL: --root of another user (root, 0700): create refused" nz "" "${U[@]}" "$bin" --root "$other" create --bundle "$b" "$id-other"
  expect_eq "$LABEL: --root of another user: nothing made in it" "ls -A $other" "" "$(ls -A "$other")"
  as_user "$bin" --root "$other" delete --force "$id-other" >/dev/null 2>&1
  # One the kernel lets the user write (root's, its group the user's, 0770):
  # only the runtime's own check can refuse it.
  local shared=$WORK/root-state-group-$rt
  mkdir -p "$shared" && chgrp "$RL_GID" "$shared" && chmod 770 "$shared"
  check "$LABEL: --root of another user the user may write (root's, group $RL_GID, 0770): create refused" nz "" \
    "${U[@]}" "$bin" --root "$shared" create --bundle "$b" "$id-group"
  expect_eq "$LABEL: --root of another user the user may write: nothing made in it" "ls -A $shared" "" "$(ls -A "$shared")"
  as_user "$bin" --root "$shared" delete --force "$id-group" >/dev/null 2>&1
}

# 8. Resources that cannot be applied (no writable cgroup) are a clear
# error, never dropped; idmapped binds of a host filesystem (refused to an
# unprivileged user by the kernel) are a clear error; --rootless.
check_limits() {
  local rt=$1 b ok
  b=$(new_bundle "$rt" limits 'echo ran' '.linux.resources = {memory: {limit: 67108864}, pids: {limit: 20}}')
  run_as_user "$rt" "$b"
  ok=0; [ "$RC" != 0 ] && grep -qiE 'memory|pids|resources' <<<"$OUT" && ok=1
  counted_or_note "$rt" "linux.resources memory+pids without a cgroup: a clear error" \
    "$rt run (linux.resources {memory: {limit: 64M}, pids: {limit: 20}})" "non-zero exit naming the resource" $ok
  local share=$WORK/s/$rt-idmap
  mkdir -p "$share" && chown "$RL_UID:$RL_GID" "$share"
  b=$(new_bundle "$rt" idmap 'touch /mnt/rw/idmapped && echo ran' \
    '.mounts += [{destination: "/mnt/rw", type: "bind", source: $src, options: ["bind", "idmap"],
                  uidMappings: [{containerID: 0, hostID: $uid, size: 1}], gidMappings: [{containerID: 0, hostID: $uid, size: 1}]}]' \
    --arg src "$share" --argjson uid "$RL_UID")
  run_as_user "$rt" "$b"
  ok=0; { [ "$RC" = 0 ] && [ "$(host_owner "$share/idmapped")" = "$RL_UID:$RL_GID" ]; } ||
        { [ "$RC" != 0 ] && grep -qiE 'idmap|mounts\[' <<<"$OUT"; } && ok=1
  counted_or_note "$rt" "an idmap bind as the user: works (owner $RL_UID on the host) or a clear error" \
    "$rt run (mount /mnt/rw bind,idmap, mount uid/gidMappings [{0,$RL_UID,1}])" \
    "exit 0 and the file $RL_UID:$RL_GID, or non-zero naming idmap/mounts[]" $ok
  [ "$rt" = husk ] && note "$LABEL: idmap bind as the user: exit $RC: $(head -c 300 <<<"$OUT" | tr '\n' ' ')"
  b=$(new_bundle "$rt" flag 'echo ran')
  capture "${U[@]}" "${RT_BIN[$rt]}" --rootless true run --bundle "$b" rl-f1-"$rt"
  as_user "${RT_BIN[$rt]}" delete --force rl-f1-"$rt" >/dev/null 2>&1
  expect_out "$LABEL: --rootless true run" "$rt --rootless true run" ran
  # run, not list: runc checks the value only where it uses it.
  check "$LABEL: --rootless bogus is refused, naming the value" nz "bogus" \
    "${U[@]}" "${RT_BIN[$rt]}" --rootless bogus run --bundle "$b" rl-f2-"$rt"
  as_user "${RT_BIN[$rt]}" delete --force rl-f2-"$rt" >/dev/null 2>&1
}

# 9. A cgroup v2 subtree delegated to the user (as systemd's Delegate=yes:
# the directory and its cgroup.procs, cgroup.subtree_control and
# cgroup.threads chowned; memory and pids enabled; the user's processes in
# a leaf "init" below it): a container with cgroupsPath inside it gets its
# memory and pids limits, checked on the host and by hitting them.
check_delegated() {
  local rt=$1 bin=${RT_BIN[$1]}
  if [ "$(stat -f -c %T /sys/fs/cgroup 2>/dev/null)" != cgroup2fs ]; then
    skip "$LABEL: delegated cgroup v2 limits: the host is not pure cgroup v2 (tests/rootless/test-rootless-v2 runs this in a VM)"
    return
  fi
  local rel=/husk-test/rootless-$$-$rt-lim
  local deleg=/sys/fs/cgroup$rel f
  mkdir -p "$deleg/init" && DELEG_DIRS+=("$deleg")
  echo "+memory +pids" >/sys/fs/cgroup/husk-test/cgroup.subtree_control &&
    echo "+memory +pids" >"$deleg/cgroup.subtree_control" ||
    { fail "$LABEL: delegated cgroup: enable memory and pids" "echo +memory +pids >$deleg/cgroup.subtree_control" "ok" "refused"; return; }
  for f in "$deleg" "$deleg/cgroup.procs" "$deleg/cgroup.subtree_control" "$deleg/cgroup.threads" "$deleg/init" "$deleg/init/cgroup.procs"; do
    chown "$RL_UID:$RL_GID" "$f"
  done
  # Every command of the user starts in the leaf, as in a systemd session:
  # moving an exec'd process into the container's cgroup needs write access
  # to the common ancestor's cgroup.procs (runc 1.1.5 outside it silently
  # leaves the exec'd process in the caller's cgroup, without limits).
  local in_deleg=(sh -c 'echo $$ >"$0/init/cgroup.procs" && exec "$@"' "$deleg" "${U[@]}")
  local id=rl-lim-$rt b
  b=$(new_bundle "$rt" lim 'trap "exit 0" TERM; while :; do sleep 1; done' \
    '.linux.cgroupsPath = $cg | .linux.resources = {memory: {limit: 33554432, swap: 33554432}, pids: {limit: 20}}' \
    --arg cg "$rel/ctr")
  check "$LABEL: delegated cgroup: create with cgroupsPath $rel/ctr and limits" 0 "" \
    "${in_deleg[@]}" "$bin" create --bundle "$b" "$id" || return
  "${in_deleg[@]}" "$bin" start "$id"
  local pid cg
  pid=$(as_user "$bin" state "$id" | jq -r .pid)
  cg=$(sed -n 's/^0:://p' "/proc/$pid/cgroup" 2>/dev/null)
  expect_eq "$LABEL: delegated cgroup: the container's cgroup" "cat /proc/$pid/cgroup" "$rel/ctr" "$cg"
  expect_eq "$LABEL: delegated cgroup: memory.max on the host" "cat /sys/fs/cgroup$cg/memory.max" 33554432 \
    "$(cat "/sys/fs/cgroup$cg/memory.max" 2>&1)"
  expect_eq "$LABEL: delegated cgroup: pids.max on the host" "cat /sys/fs/cgroup$cg/pids.max" 20 "$(cat "/sys/fs/cgroup$cg/pids.max" 2>&1)"
  check "$LABEL: delegated cgroup: allocating 100M in 32M is OOM-killed" 137 "" \
    "${in_deleg[@]}" "$bin" exec "$id" dd if=/dev/zero of=/dev/null bs=100M count=1
  check "$LABEL: delegated cgroup: the pids limit stops a fork of 40 sleeps" nz "can't fork" \
    "${in_deleg[@]}" "$bin" exec "$id" sh -c 'for i in $(seq 40); do sleep 2 & done; echo all forked'
  "${in_deleg[@]}" "$bin" kill "$id" KILL >/dev/null 2>&1
  wait_status "$rt" "$id" stopped
  check "$LABEL: delegated cgroup: delete" 0 "" "${in_deleg[@]}" "$bin" delete --force "$id"
  if [ -d "/sys/fs/cgroup$rel/ctr" ]; then fail "$LABEL: delegated cgroup: delete removes the container's cgroup" \
    "test -d /sys/fs/cgroup$rel/ctr" absent present; else pass "$LABEL: delegated cgroup: delete removes the container's cgroup"; fi
}

# No /proc mount: the init reaches exec.fifo through a procfs of its own,
# which the kernel grants in a user namespace only before the pivot.
check_noproc() {
  local rt=$1 b
  b=$(new_bundle "$rt" noproc 'test -e /proc/self || echo no-procfs' '.mounts |= map(select(.destination != "/proc"))')
  run_as_user "$rt" "$b"
  if [ "$rt" = husk ]; then
    expect_out "$LABEL: run without a /proc mount (as the user)" "$rt run (as the user)" "no-procfs"
  elif [ "$RC" != 0 ]; then
    note "$LABEL: $rt refuses a container without /proc (exit $RC)"
  fi
}

# A cgroup mount (podman --privileged) in a container without a cgroup of its
# own: no tree of the caller's (other tenants' cgroup names) under it; runc
# binds the caller's v1 trees.
check_cgroup_mount() {
  local rt=$1 b log=$WORK/s/cgmount-$1.log
  mkdir -p "$WORK/s" && : >"$log" && chown "$RL_UID:$RL_GID" "$log"
  b=$(new_bundle "$rt" cgmount 'echo "entries $(ls -A /sys/fs/cgroup | wc -l)"; touch /sys/fs/cgroup/x 2>/dev/null || echo read-only' \
    '.mounts += [{destination: "/sys/fs/cgroup", type: "cgroup", source: "cgroup", options: ["nosuid", "noexec", "nodev", "relatime", "rw"]}]')
  RUN_N=$((RUN_N + 1))
  capture "${U[@]}" "${RT_BIN[$rt]}" --log "$log" run --bundle "$b" "rl$RUN_N-$rt"
  if [ "$rt" != husk ]; then
    note "$LABEL: a rw cgroup mount without a cgroup of its own: $(tr '\n' ' ' <<<"$OUT")"
  elif ! grep -q "has no cgroup" "$log"; then
    skip "$LABEL: cgroup mount without a cgroup: the user has a cgroup here (exit $RC, log: $(head -c 200 "$log"))"
  else
    expect_out "$LABEL: a rw cgroup mount without a cgroup of its own is empty and read-only" "$rt run (as the user)" \
      "entries 0" "read-only"
  fi
}

# HUSK_RL_CHECKS: the checks to run (default all), e.g. "delegated" in the VM.
RL_CHECKS=${HUSK_RL_CHECKS:-run noproc bind admin binary cgroup nocgroup_note cgroup_mount ranges subroot foreign state roots limits delegated podman}
# Rootless podman passes --log only to the runtimes named in its
# runtime_supports_json; without it husk's stderr is the container's. The
# note that a container has no cgroup goes into --log, and to stderr only
# with --debug or a terminal, never into every container's output.
check_nocgroup_note() {
  local rt=$1 b log=$WORK/s/nocgroup.log
  [ "$rt" = husk ] || return 0
  mkdir -p "$WORK/s" && : >"$log" && chown "$RL_UID:$RL_GID" "$log"
  b=$(new_bundle "$rt" nocgroup 'echo ran')
  RUN_N=$((RUN_N + 1))
  capture "${U[@]}" "${RT_BIN[$rt]}" --log "$log" run --bundle "$b" "rl$RUN_N-$rt"
  if ! grep -q "has no cgroup" "$log"; then
    skip "$LABEL: no-cgroup note: the user has a cgroup here (exit $RC, log: $(head -c 200 "$log"))"
    return
  fi
  expect_eq "$LABEL: no-cgroup note in --log only, not in the container's output" "$rt --log F run (as the user)" \
    "ran" "$OUT"
  RUN_N=$((RUN_N + 1))
  capture "${U[@]}" "${RT_BIN[$rt]}" run --bundle "$b" "rl$RUN_N-$rt"
  expect_eq "$LABEL: no-cgroup note: without --log, stderr (not a terminal) stays the container's" \
    "$rt run (as the user)" "ran" "$OUT"
  RUN_N=$((RUN_N + 1))
  check "$LABEL: no-cgroup note: --debug shows it on stderr" 0 "has no cgroup" \
    "${U[@]}" "${RT_BIN[$rt]}" --debug run --bundle "$b" "rl$RUN_N-$rt"
}

runtime_checks() {
  local c
  for c in $RL_CHECKS; do
    case $c in podman) podman_checks "$1" ;; *) "check_$c" "$1" ;; esac
  done
}
