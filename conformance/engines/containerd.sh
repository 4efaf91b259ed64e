# A private containerd (shim io.containerd.runc.v2) driving husk through
# `ctr --runc-binary`; sourced by run-engines (needs lib.sh, WORK, HUSK,
# IMAGE, IMAGE_TAR, CGROUP_PARENT).

# The shim sets cgroupsPath=/<namespace>/<id>: the namespace name makes the
# containers' cgroups land below $CGROUP_PARENT.
CTR_NS=${CGROUP_PARENT#/}
CONTAINERD_PID=""

# The shims make /run/containerd/{runc,s,fifo} whatever the daemon's own
# paths: those that were not there before our first daemon are removed at
# cleanup when empty (a host's containerd may have made them meanwhile).
RUN_DIRS_MADE=""
note_run_dirs() {
  [ -n "$RUN_DIRS_MADE" ] && return 0
  RUN_DIRS_MADE=" "
  local r
  for r in /run/containerd /run/containerd/runc /run/containerd/s /run/containerd/fifo; do
    [ -e "$r" ] || RUN_DIRS_MADE="$r $RUN_DIRS_MADE"  # deepest first
  done
}
remove_run_dirs_made() {
  local r
  for r in $RUN_DIRS_MADE; do rmdir "$r" 2>/dev/null; done
  return 0
}

containerd_start() {
  note_run_dirs
  local d=$WORK/containerd
  mkdir -p "$d"
  cat >"$d/config.toml" <<CONF
version = 2
root = "$d/root"
state = "$d/state"
disabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.snapshotter.v1.aufs",
  "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp",
  "io.containerd.internal.v1.tracing"]
[grpc]
  address = "$d/containerd.sock"
[ttrpc]
  address = "$d/containerd.sock.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""
CONF
  containerd --config "$d/config.toml" >"$d/containerd.log" 2>&1 &
  CONTAINERD_PID=$!
  CTR=(ctr --address "$d/containerd.sock" -n "$CTR_NS")
  wait_serving "$CONTAINERD_PID" 50 "${CTR[@]}" version && return 0
  fail "containerd starts" "containerd --config $d/config.toml" "a serving daemon" "$(tail -5 "$d/containerd.log")"
  return 1
}

# README's CRI snippet appended to Debian's stock config (a private root,
# state and socket put before and after it): the CRI plugin loads, which it
# does only while a runc handler stays beside husk's, and a pod runs with
# runtimeClassName husk as kubelet runs it, through the CRI API.
# The snippet is used as written but for three values: BinaryName is this
# build's husk, SystemdCgroup is README's cgroupfs variant (false): the
# suite's cgroups are cgroupfs paths below $CGROUP_PARENT, and this host
# may have no systemd; and each handler's Root is in the private directory,
# apart from the state of the host's own containerd and its pods. The pod sandbox image (pause) is a local image set
# in the stock file's CRI table: registry.k8s.io cannot be reached.
CRI_DIR=""
CRI_PID=""
CRI_HANDLER=""
CRI_PAUSE=localhost/husk-pause:test

containerd_readme_cri() {
  local d=$WORK/containerd-readme snippet plugins
  snippet=$(awk '/^### containerd and Kubernetes/ { s = 1 } s && /^```toml/ { f = 1; next } f && /^```/ { exit } f' \
    "$repo/README.md")
  [ -n "$snippet" ] || { fail "README's containerd snippet" "awk README.md" "a toml block under ### containerd and Kubernetes" ""; return 1; }
  CRI_DIR=$d
  mkdir -p "$d"
  # Without CAP_SYS_RESOURCE (a container as host) no runtime can give the
  # pause process the oom_score_adj -998 CRI asks for: CRI's own switch
  # keeps it at containerd's.
  local restrict=""
  (( (0x$(awk '/^CapEff/ { print $2 }' /proc/self/status) >> 24) & 1 )) || restrict=1
  { printf 'root = "%s/root"\nstate = "%s/state"\n' "$d" "$d"
    awk -v img="$CRI_PAUSE" -v oom="$restrict" '{ print }
      /^[ \t]*\[plugins\."io\.containerd\.grpc\.v1\.cri"\][ \t]*$/ { print "    sandbox_image = \"" img "\""; if (oom) print "    restrict_oom_score_adj = true" }' \
      /etc/containerd/config.toml
    printf '%s\n' "$snippet" | sed -e "s|/usr/local/bin/husk|$HUSK|" -e 's|SystemdCgroup = true|SystemdCgroup = false|' \
      -e "s|^\( *\)Root = .*|\1Root = \"$d/husk\"|" \
      -e "/runtimes\.runc\.options\]/a\\    Root = \"$d/runc\""
    printf '[grpc]\n  address = "%s/containerd.sock"\n[ttrpc]\n  address = "%s/containerd.sock.ttrpc"\n' "$d" "$d"
    printf '[debug]\n  address = ""\n[metrics]\n  address = ""\n'
  } >"$d/config.toml"
  note_run_dirs
  containerd --config "$d/config.toml" >"$d/containerd.log" 2>&1 &
  CRI_PID=$!
  if wait_serving "$CRI_PID" 50 ctr --address "$d/containerd.sock" version; then
    plugins=$(ctr --address "$d/containerd.sock" plugins ls 2>&1)
    if grep -Eq '^io\.containerd\.grpc\.v1[[:space:]]+cri[[:space:]].*[[:space:]]ok[[:space:]]*$' <<<"$plugins"; then
      pass "README's containerd snippet on Debian's stock config.toml: the CRI plugin loads"
      containerd_cri_pods
    else
      fail "README's containerd snippet on Debian's stock config.toml: the CRI plugin loads" \
        "containerd --config stock+README" "cri ... ok" "$(grep cri <<<"$plugins"; grep -i 'cri' "$d/containerd.log" | tail -3)"
    fi
  else
    fail "containerd starts with README's snippet on Debian's stock config" "containerd --config $d/config.toml" \
      "a serving daemon" "$(tail -5 "$d/containerd.log")"
  fi
  containerd_cri_cleanup
}

# The state root of a handler: its options' Root (the test puts both in
# $CRI_DIR, never the shim's default on the host); the shim adds the namespace.
cri_root() {  # HANDLER
  local r
  r=$(sed -n "/runtimes\\.$1\\.options\\]/,/^ *\\[/ s/^ *Root *= *\"\\(.*\\)\"/\\1/p" "$CRI_DIR/config.toml" | head -1)
  echo "${r:-$CRI_DIR/no-root-for-$1}/k8s.io"
}

containerd_cri_pods() {
  local d=$CRI_DIR i
  local CRI=(/usr/bin/python3 "$repo/conformance/engines/cri_client.py" "$d/containerd.sock")
  local CTRK=(ctr --address "$d/containerd.sock" -n k8s.io)
  check "CRI Version (runtime.v1)" 0 "containerd" "${CRI[@]}" version || return
  # The pause process: a sleep that outlives the test (StopPodSandbox
  # SIGKILLs it).
  [ -n "${CONTAINERS_CONF:-}" ] || podman_setup
  "${PODMAN[@]}" import --change 'CMD ["/bin/sleep", "31536000"]' "$ROOTFS_TAR" "$CRI_PAUSE" >/dev/null 2>&1
  check "podman save of the pause image" 0 "" \
    "${PODMAN[@]}" save --format docker-archive -o "$WORK/pause.tar" "$CRI_PAUSE" || return
  check "ctr -n k8s.io image import (busybox, pause)" 0 "" \
    sh -c "$(printf '%q ' "${CTRK[@]}") image import $IMAGE_TAR && $(printf '%q ' "${CTRK[@]}") image import $WORK/pause.tar" ||
    return
  # CRI learns of imported images from containerd's events.
  for i in $(seq 50); do
    "${CRI[@]}" image "$IMAGE" && "${CRI[@]}" image "$CRI_PAUSE" && break
    sleep 0.2
  done >/dev/null 2>&1
  check "CRI ImageStatus knows the imported images" 0 "" sh -c \
    "$(printf '%q ' "${CRI[@]}") image $IMAGE && $(printf '%q ' "${CRI[@]}") image $CRI_PAUSE"
  # The handler README's RuntimeClass names, as kubelet passes it.
  CRI_HANDLER=$(awk '/^### containerd and Kubernetes/ { s = 1 } s && /^```yaml/ { f = 1; next } f && /^```/ { exit } f' \
    "$repo/README.md" | sed -n 's/^handler: *//p')
  [ -n "$CRI_HANDLER" ] || { fail "README's RuntimeClass" "awk README.md" "a yaml block with handler: under ### containerd and Kubernetes" ""; return; }
  cri_pod "$CRI_HANDLER" "$HUSK"
  local runc
  runc=$(command -v runc) && cri_pod runc "$runc"
}

# A pod with one container through the CRI calls kubelet makes, with
# runtime_handler HANDLER; the runtime binary RT must hold both the pod's
# sandbox and the container in its state root while they run.
cri_pod() {  # HANDLER RT
  local h=$1 rt=$2 d=$CRI_DIR
  local CRI=(/usr/bin/python3 "$repo/conformance/engines/cri_client.py" "$d/containerd.sock")
  local cgp=$CGROUP_PARENT/cri-$h logs=$d/pods/$h root pod cid="" state pid i left
  root=$(cri_root "$h")
  mkdir -p "$logs"
  check "CRI RunPodSandbox (runtime_handler $h, host network)" 0 "" "${CRI[@]}" runp "$h" "pod-$h" "$cgp" "$logs" || return
  pod=$OUT
  check "CRI PodSandboxStatus: ready, handler $h" 0 "READY $h" "${CRI[@]}" podstatus "$pod"
  # SIGTERM (StopContainer) ends it with 3: the signal went through the runtime.
  check "CRI CreateContainer in the $h pod" 0 "" "${CRI[@]}" create "$pod" "pod-$h" "$cgp" "$logs" "$IMAGE" app app.log \
    /bin/sh -c 'echo hi from the pod; trap "exit 3" TERM; while :; do /bin/sleep 0.1; done' && cid=$OUT
  if [ -n "$cid" ] && check "CRI StartContainer ($h)" 0 "" "${CRI[@]}" start "$cid"; then
    check "CRI ContainerStatus ($h): running" 0 "RUNNING" "${CRI[@]}" status "$cid"
    capture "$rt" --root "$root" list
    if [ "$(awk '$3 == "running" { print $1 }' <<<"$OUT" | grep -cxE "$pod|$cid")" = 2 ]; then
      pass "$h's state root $root lists the pod's sandbox and container as running"
    else
      fail "$h's state root $root lists the pod's sandbox and container as running" "$rt --root $root list" \
        "$pod and $cid running" "$OUT"
    fi
    state=$("$rt" --root "$root" state "$cid" 2>/dev/null)
    pid=$(sed -n 's/^ *"pid": *\([0-9]*\).*/\1/p' <<<"$state" | head -1)
    if [ -n "$pid" ]; then check_cgroup_parent "CRI ($h): the container's cgroup is below the pod's cgroup_parent" "$pid" "$cgp"; else
      fail "CRI ($h): $h state gives the container's pid" "$rt --root $root state $cid" '"pid": N' "$state"; fi
    for i in $(seq 50); do grep -q 'stdout F hi from the pod' "$logs/app.log" 2>/dev/null && break; sleep 0.2; done
    check "CRI ($h): the container's output is in its CRI log file" 0 "stdout F hi from the pod" cat "$logs/app.log"
    check "CRI StopContainer ($h, SIGTERM)" 0 "" "${CRI[@]}" stop "$cid" 10
    check "CRI ContainerStatus ($h): exited with the process's code 3" 0 "EXITED 3" "${CRI[@]}" status "$cid"
    check "CRI RemoveContainer ($h)" 0 "" "${CRI[@]}" rm "$cid"
  fi
  check "CRI StopPodSandbox ($h)" 0 "" "${CRI[@]}" stopp "$pod"
  check "CRI RemovePodSandbox ($h)" 0 "" "${CRI[@]}" rmp "$pod"
  capture "$rt" --root "$root" list -q
  if ! grep -qxE "$pod${cid:+|$cid}" <<<"$OUT"; then pass "CRI ($h): $h's state root holds neither any more"; else
    fail "CRI ($h): $h's state root holds neither any more" "$rt --root $root list -q" "no $pod, $cid" "$OUT"; fi
  # The shim exits once the sandbox is gone.
  for i in $(seq 50); do [ -z "$(cri_shims)" ] && break; sleep 0.1; done
  expect_eq "CRI ($h): no shim left" "ps (containerd-shim -address $d/containerd.sock)" "" "$(cri_shims)"
  left=$(grep -o " $d/[^ ]*" /proc/self/mounts)
  expect_eq "CRI ($h): no mount left under the private root" "grep $d /proc/self/mounts" "" "$left"
  left=$(find /sys/fs/cgroup/*"$cgp" /sys/fs/cgroup"$cgp" -mindepth 1 -type d 2>/dev/null)
  expect_eq "CRI ($h): no container or sandbox cgroup left" "ls /sys/fs/cgroup/*$cgp" "" "$left"
  # The pod-level parent is kubelet's to remove.
  remove_cgroups "$cgp"
}

cri_shims() {
  ps -eo pid=,args= | awk -v a="-address $CRI_DIR/containerd.sock" '$2 ~ /containerd-shim/ && index($0 " ", a " ") { print $1 }'
}

# Stops the CRI containerd; after an interrupted run also its shims, the
# runtimes' state of its pods and its mounts.
containerd_cri_cleanup() {
  [ -n "$CRI_DIR" ] || return 0
  local s c
  if [ -n "$CRI_PID" ]; then
    kill "$CRI_PID" 2>/dev/null
    for c in $(seq 50); do kill -0 "$CRI_PID" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$CRI_PID" 2>/dev/null
    wait "$CRI_PID" 2>/dev/null
    CRI_PID=""
  fi
  s=$(cri_shims)
  [ -z "$s" ] || kill -9 $s 2>/dev/null
  # Containers of our pods: their ids are the directories CRI made for them.
  for c in "$CRI_DIR"/root/io.containerd.grpc.v1.cri/{sandboxes,containers}/*; do
    c=${c##*/}
    [[ "$c" =~ ^[0-9a-f]{64}$ ]] || continue
    [ -z "$CRI_HANDLER" ] || "$HUSK" --root "$(cri_root "$CRI_HANDLER")" delete --force "$c" >/dev/null 2>&1
    runc --root "$(cri_root runc)" delete --force "$c" >/dev/null 2>&1
  done
  # Both handlers' state roots are below $CRI_DIR: removed with it.
  grep -o " $CRI_DIR/[^ ]*" /proc/self/mounts | sort -r | while read -r c; do umount -l "$c"; done
  [ -z "${PODMAN+x}" ] || "${PODMAN[@]}" rmi "$CRI_PAUSE" >/dev/null 2>&1
  rm -rf "$CRI_DIR"
  CRI_DIR=""
}

containerd_cleanup() {
  containerd_cri_cleanup
  [ -n "$CONTAINERD_PID" ] || { remove_run_dirs_made; return 0; }
  local c
  if kill -0 "$CONTAINERD_PID" 2>/dev/null; then
    for c in $("${CTR[@]}" task ls -q 2>/dev/null); do
      "${CTR[@]}" task kill -s SIGKILL "$c" >/dev/null 2>&1
    done
    sleep 0.3
    for c in $("${CTR[@]}" task ls -q 2>/dev/null); do "${CTR[@]}" task delete -f "$c" >/dev/null 2>&1; done
    for c in $("${CTR[@]}" container ls -q 2>/dev/null); do "${CTR[@]}" container rm "$c" >/dev/null 2>&1; done
    "${CTR[@]}" image rm "$IMAGE" >/dev/null 2>&1
    kill "$CONTAINERD_PID" 2>/dev/null
    for c in $(seq 50); do kill -0 "$CONTAINERD_PID" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$CONTAINERD_PID" 2>/dev/null
  fi
  wait "$CONTAINERD_PID" 2>/dev/null
  CONTAINERD_PID=""
  # Shims of our daemon still alive (a test interrupted mid-way).
  local s
  s=$(our_shims "")
  [ -z "$s" ] || kill -9 $s 2>/dev/null
  # Snapshot mounts left by an interrupted run.
  grep -o " $WORK/containerd/[^ ]*" /proc/self/mounts | sort -r | while read -r m; do umount -l "$m"; done
  # The shim keeps the runtime's --root in /run/containerd/runc/<namespace>.
  rm -rf "/run/containerd/runc/$CTR_NS"
  # husk's own and the husk+runc shared roots of containerd_issue8_tests
  # are under $WORK/containerd, removed with $WORK.
  remove_run_dirs_made
}

# Pids of the shims our containerd started (for task ID, or all).
our_shims() {
  ps -eo pid=,args= | awk -v a="-address $WORK/containerd/containerd.sock" -v id="-id $1 " \
    '$2 ~ /containerd-shim/ && index($0 " ", a " ") && index($0, id) { print $1 }'
}

# A task that ends promptly on SIGTERM (PID 1 needs a handler).
CTR_SLEEPER=(sh -c 'trap "exit 0" TERM; while :; do sleep 1; done')

task_status() {  # ID -> RUNNING, PAUSED, STOPPED, ...
  "${CTR[@]}" task ls 2>/dev/null | awk -v id="$1" '$1 == id { print $3 }'
}
wait_status() {  # ID STATUS: wait up to 10 s
  local i
  for i in $(seq 50); do [ "$(task_status "$1")" = "$2" ] && return 0; sleep 0.2; done
  return 1
}

containerd_tests() {
  echo "=== containerd $(containerd --version | awk '{print $3}') (shim runc.v2), runtime $HUSK"
  containerd_readme_cri
  containerd_start || return
  check "ctr image import of the busybox archive" 0 "" "${CTR[@]}" image import "$IMAGE_TAR" || return
  local RUN=("${CTR[@]}" run --runc-binary "$HUSK")

  check "ctr run echo hi" 0 "hi" "${RUN[@]}" --rm "$IMAGE" husk-echo echo hi &&
    expect_eq "ctr run: stdout is exactly the container's" "ctr run --rm IMG ID echo hi" "hi" "$OUT"
  check "ctr run: exit code propagates" 3 "" "${RUN[@]}" --rm "$IMAGE" husk-exit sh -c 'exit 3'
  check "ctr run: missing command shows husk's create error" nz \
    'exec: "no-such-command": executable file not found' \
    "${RUN[@]}" --rm "$IMAGE" husk-missing no-such-command
  if [[ "$OUT" == *"OCI runtime create failed: "* ]]; then pass "ctr run: the error comes from the runtime's --log"; else
    fail "ctr run: the error comes from the runtime's --log" "ctr run ... no-such-command" \
      "OCI runtime create failed: <runtime message>" "$OUT"; fi
  check "ctr run: failed create leaves no runtime state" 0 "" \
    sh -c "$(printf '%q ' "$HUSK") --root /run/containerd/runc/$CTR_NS state husk-missing 2>&1 | grep -q 'does not exist'"
  # The program exists, its interpreter does not: execve fails after start.
  # As with runc, start succeeds and the task exits 1, which ctr run --rm
  # reports and cleans up after.
  mkdir -p "$WORK/late" && printf '#!/no/such/interpreter\n' >"$WORK/late/bad.sh" && chmod 755 "$WORK/late/bad.sh"
  check "ctr run --rm: an exec failing after start exits 1" 1 "" \
    "${RUN[@]}" --rm --mount "type=bind,src=$WORK/late,dst=/late,options=rbind:ro" "$IMAGE" husk-late /late/bad.sh
  check "ctr run --rm: the failed task is removed" 0 "" \
    sh -c "! $(printf '%q ' "${CTR[@]}") container ls -q | grep -qx husk-late &&
      $(printf '%q ' "$HUSK") --root /run/containerd/runc/$CTR_NS state husk-late 2>&1 | grep -q 'does not exist'"
  if command -v script >/dev/null; then
    check "ctr run -t: the process gets a pty" 0 "/dev/pts/" \
      script -qec "$(printf '%q ' "${RUN[@]}") --rm -t $IMAGE husk-tty tty" /dev/null
  else
    skip "ctr run -t: no script(1) to provide a terminal"
  fi

  local id=husk-task pid f
  check "ctr run -d --memory-limit 32M" 0 "" "${RUN[@]}" -d --memory-limit 33554432 "$IMAGE" "$id" "${CTR_SLEEPER[@]}" || return
  wait_status "$id" RUNNING
  pid=$("${CTR[@]}" task ls | awk -v id="$id" '$1 == id { print $2 }')
  check_cgroup_parent "containerd: the task's cgroup is /<namespace>/<id>" "$pid" "$CGROUP_PARENT"
  local cgdir
  cgdir=$(cgroup_file "$pid" memory . .)
  f=$(cgroup_file "$pid" memory memory.limit_in_bytes memory.max)
  expect_eq "ctr --memory-limit: host cgroup limit" "cat $f" 33554432 "$(cat "$f" 2>&1)"

  check "ctr task exec echo" 0 "exec-hi" "${CTR[@]}" task exec --exec-id e1 "$id" echo exec-hi
  check "ctr task exec: exit code propagates" 5 "" "${CTR[@]}" task exec --exec-id e2 "$id" sh -c 'exit 5'
  check "ctr task exec --user --cwd" 0 "1000:/tmp" "${CTR[@]}" task exec --exec-id e3 --cwd /tmp --user 1000 "$id" \
    sh -c 'echo "$(id -u):$(pwd)"'
  if command -v script >/dev/null; then
    check "ctr task exec -t: the exec'd process gets a pty" 0 "/dev/pts/" \
      script -qec "$(printf '%q ' "${CTR[@]}") task exec -t --exec-id et $id tty" /dev/null
  fi
  check "ctr task exec of a missing command fails" nz "executable file not found" \
    "${CTR[@]}" task exec --exec-id e4 "$id" no-such-command
  capture "${CTR[@]}" task exec --exec-id e5 "$id" sleep 30 &
  local ep=$!
  sleep 1
  skip "ctr task update: ctr $(ctr --version | awk '{print $3}') has no task update command"
  check "ctr task ps lists init and exec processes" 0 "$pid" "${CTR[@]}" task ps "$id"
  local n
  n=$(printf '%s\n' "$OUT" | awk 'NR > 1 && $1 ~ /^[0-9]+$/' | wc -l)
  if [ "$n" -ge 2 ]; then pass "ctr task ps: $n processes"; else
    fail "ctr task ps: init plus the exec'd sleep" "ctr task ps $id" ">= 2 processes" "$OUT"; fi

  check "ctr task pause" 0 "" "${CTR[@]}" task pause "$id"
  expect_eq "ctr task pause: status" "ctr task ls" PAUSED "$(task_status "$id")"
  f=$(cgroup_file "$pid" freezer freezer.state cgroup.freeze)
  capture cat "$f"
  if [[ "$OUT" == FROZEN || "$OUT" == 1 ]]; then pass "ctr task pause: host freezer is frozen"; else
    fail "ctr task pause: host freezer is frozen" "cat $f" "FROZEN (v1) or 1 (v2)" "$OUT"; fi
  check "ctr task resume" 0 "" "${CTR[@]}" task resume "$id"
  expect_eq "ctr task resume: status" "ctr task ls" RUNNING "$(task_status "$id")"

  check "ctr task kill (SIGTERM)" 0 "" "${CTR[@]}" task kill "$id"
  if wait_status "$id" STOPPED; then pass "ctr task kill: task stops"; else
    fail "ctr task kill: task stops" "ctr task ls" STOPPED "$(task_status "$id")"; fi
  wait "$ep" 2>/dev/null
  check "ctr task delete: reports the exit status" 0 "" "${CTR[@]}" task delete "$id"
  check "ctr task delete: runtime state is gone" 0 "" \
    sh -c "$(printf '%q ' "$HUSK") --root /run/containerd/runc/$CTR_NS state $id 2>&1 | grep -q 'does not exist'"
  if [ -d "$cgdir" ]; then fail "ctr task delete: task cgroup removed" "test -d $cgdir" "absent" "present"; else
    pass "ctr task delete: task cgroup removed"; fi
  check "ctr container rm" 0 "" "${CTR[@]}" container rm "$id"

  # PID 1 without a handler ignores SIGTERM: SIGKILL must end it.
  check "ctr run -d (no SIGTERM handler)" 0 "" "${RUN[@]}" -d "$IMAGE" husk-kill sleep 1000
  wait_status husk-kill RUNNING
  capture "${CTR[@]}" task exec --exec-id k1 husk-kill sleep 1000 &
  local kp=$!
  sleep 0.5
  check "ctr task kill --all -s SIGKILL" 0 "" "${CTR[@]}" task kill --all -s SIGKILL husk-kill
  if wait_status husk-kill STOPPED; then pass "ctr task kill --all -s SIGKILL: task stops"; else
    fail "ctr task kill --all -s SIGKILL: task stops" "ctr task ls" STOPPED "$(task_status husk-kill)"; fi
  wait "$kp" 2>/dev/null
  check "ctr task delete after SIGKILL" 0 "" "${CTR[@]}" task delete husk-kill
  "${CTR[@]}" container rm husk-kill >/dev/null 2>&1

  # ctr task delete --force of a paused task kills it: it returns only once
  # the frozen processes can die (runc thaws after SIGKILL).
  check "ctr run -d (then pause)" 0 "" "${RUN[@]}" -d "$IMAGE" husk-paused sleep 1000
  wait_status husk-paused RUNNING
  check "ctr task pause (then delete --force)" 0 "" "${CTR[@]}" task pause husk-paused
  check "ctr task delete --force of a paused task" 0 "" timeout 20 "${CTR[@]}" task delete --force husk-paused
  "${CTR[@]}" container rm husk-paused >/dev/null 2>&1

  check "ctr task delete -f of a running task" 0 "" sh -c \
    "$(printf '%q ' "${RUN[@]}") -d $IMAGE husk-force sleep 1000 && $(printf '%q ' "${CTR[@]}") task delete -f husk-force"
  "${CTR[@]}" container rm husk-force >/dev/null 2>&1
  containerd_policy_tests
  check_no_stray_husk "containerd: no husk process left behind" "/run/containerd/runc/$CTR_NS"
  containerd_issue8_tests
}

# --- issue 8: the callers' flows runc handles and husk once failed ---------
# These use a state root of husk's own (--runc-root, as the README's
# handler config); the shim adds /<namespace>.
CTR_HUSK_ROOT=""

# husk wrapped so the test sees the shim's argv (ARGV log) and the init's
# pid of a create (copied from the shim's --pid-file before it goes away).
ctr_logging_husk() {  # -> path of the wrapper
  local w=$WORK/containerd/husk-logged
  cat >"$w" <<SH
#!/bin/sh
echo "\$*" >>"$WORK/containerd/husk-argv.log"
"$HUSK" "\$@"
rc=\$?
prev=
for a in "\$@"; do
  [ "\$prev" = --pid-file ] && [ -s "\$a" ] && cat "\$a" >"$WORK/containerd/created.pid"
  prev=\$a
done
exit \$rc
SH
  chmod +x "$w"
  echo "$w"
}

# A host char device that no default device list has (to see --privileged
# hand the host's devices over); empty if the host has none of these.
host_extra_chardev() {
  local d
  for d in /dev/fuse /dev/net/tun /dev/kmsg /dev/loop-control /dev/vhost-net; do
    [ -c "$d" ] && { echo "$d"; return; }
  done
}

# alive PID: exists and is not a zombie.
pid_alive() {
  local s
  s=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) || return 1
  [ -n "$s" ] && [ "$s" != Z ]
}

containerd_issue8_tests() {
  CTR_HUSK_ROOT=$WORK/containerd/husk-root
  local R=$CTR_HUSK_ROOT/$CTR_NS
  local RUN=("${CTR[@]}" run --runc-binary "$HUSK" --runc-root "$CTR_HUSK_ROOT")
  local dev
  dev=$(host_extra_chardev)

  # ctr run --privileged: containerd lists every host device in
  # linux.devices (/dev/ptmx 5:2 among them).
  check "ctr run --privileged" 0 "privileged-ok" "${RUN[@]}" --rm --privileged "$IMAGE" husk-priv \
    sh -c "test -e /dev/ptmx && test -c /dev/null && ${dev:+test -c $dev &&} echo privileged-ok"
  if [ -n "$dev" ]; then
    [ $RC = 0 ] && pass "ctr run --privileged: the host's $dev is in the container"
  else
    skip "ctr run --privileged: no extra host char device (fuse, tun, kmsg, loop-control) to look for"
  fi
  check "ctr run --privileged: /dev/ptmx opens a pty master" 0 "ptmx-ok" "${RUN[@]}" --rm --privileged "$IMAGE" husk-priv2 \
    sh -c 'exec 3<>/dev/ptmx && echo ptmx-ok'

  # A task created and never started, deleted as the shim does it: ctr run
  # creates the task, then fails writing --pid-file into a missing directory
  # before Start, which leaves the task CREATED. ctr's client library refuses
  # to delete a CREATED task without -f (and -f kills it first), so the
  # shim's Delete RPC is called directly with "ctr shim delete", the call a
  # containerd client's task Delete reaches: the shim then runs
  # "<runtime> delete ID" without --force on the created container.
  local w id=husk-created cpid
  w=$(ctr_logging_husk)
  rm -f "$WORK/containerd/husk-argv.log" "$WORK/containerd/created.pid"
  # The failed ctr run leaves its stdio fifos behind: keep them in $WORK.
  capture "${CTR[@]}" run --runc-binary "$w" --runc-root "$CTR_HUSK_ROOT" --fifo-dir "$WORK/containerd/fifo" \
    --pid-file "$WORK/no-such-dir/pid" "$IMAGE" "$id" sleep 1000
  cpid=$(cat "$WORK/containerd/created.pid" 2>/dev/null)
  if [ -n "$cpid" ] && [ "$RC" -ne 0 ] && [ "$(task_status "$id")" = CREATED ]; then
    pass "ctr: a task is created (pid $cpid) and never started"
  else
    fail "ctr: a task is created and never started" "ctr run --pid-file /missing/pid ...; ctr task ls" \
      "ctr fails, task CREATED" "exit $RC, $OUT; status $(task_status "$id"); argv: $(cat "$WORK/containerd/husk-argv.log" 2>&1)"
  fi
  check "ctr shim delete of the created task" 0 "" "${CTR[@]}" shim --id "$id" delete "$id"
  if grep -qx -- "--root $R --log .*/log.json --log-format json delete $id" "$WORK/containerd/husk-argv.log" &&
      ! grep -q -- "start $id" "$WORK/containerd/husk-argv.log"; then
    pass "ctr: the shim deleted the created task with 'delete ID' (no --force, no start)"
  else
    fail "ctr: the shim deleted the created task with 'delete ID' (no --force, no start)" "cat husk-argv.log" \
      "a line '--root $R --log ... delete $id', no start" "$(cat "$WORK/containerd/husk-argv.log" 2>&1)"
  fi
  # The shim only logs a failed delete: look at what is left (before
  # containerd is told to forget the task, which would kill it).
  check "created task deleted: no husk state" 0 "" \
    sh -c "$(printf '%q ' "$HUSK") --root $R state $id 2>&1 | grep -q 'does not exist'"
  if [ -n "$cpid" ] && pid_alive "$cpid"; then
    fail "created task deleted: its init is gone" "ps -p $cpid" "no process" "$(ps -o pid=,args= -p "$cpid")"
    kill -9 "$cpid" 2>/dev/null
  else
    pass "created task deleted: its init is gone"
  fi
  local left
  left=$(ls -d /sys/fs/cgroup/*"$CGROUP_PARENT/$id" /sys/fs/cgroup"$CGROUP_PARENT/$id" 2>/dev/null)
  if [ -z "$left" ]; then pass "created task deleted: no cgroup left"; else
    fail "created task deleted: no cgroup left" "ls -d /sys/fs/cgroup/*$CGROUP_PARENT/$id" "nothing" "$left"; fi
  # containerd still lists the task, and its shim (now without a container)
  # is never told to shut down: end that shim of ours, then containerd
  # forgets the task.
  "${CTR[@]}" task delete -f "$id" >/dev/null 2>&1
  local shim
  shim=$(our_shims "$id")
  if [ -n "$shim" ]; then
    kill $shim 2>/dev/null
    sleep 0.3
    "${CTR[@]}" task delete -f "$id" >/dev/null 2>&1
  fi
  check "ctr container rm of the created task's container" 0 "" "${CTR[@]}" container rm "$id"

  # kill --all after the init exited, shared pid namespace: B joins A's pid
  # namespace (as a pod's containers with shareProcessNamespace, or hostPID).
  # B's init leaves a child behind and is SIGKILLed (CRI StopContainer sends
  # no --all). Because B has no pid namespace of its own, the shim then runs
  # "<runtime> kill --all B 9" with B's init already gone; that must kill the
  # child. Left alive, the child keeps B's stdio open and the shim's delete
  # waits 2 s for it (the StopContainer delay of issue 8).
  local pa pb cg pids p t0 t1 ms
  if check "ctr run -d: shared-pid container A" 0 "" "${RUN[@]}" -d "$IMAGE" husk-pida "${CTR_SLEEPER[@]}" &&
      wait_status husk-pida RUNNING; then
    pa=$("${CTR[@]}" task ls | awk '$1 == "husk-pida" { print $2 }')
    rm -f "$WORK/containerd/husk-argv.log"
    check "ctr run -d --with-ns pid:A: container B in A's pid namespace" 0 "" \
      "${CTR[@]}" run --runc-binary "$w" --runc-root "$CTR_HUSK_ROOT" -d \
      --with-ns "pid:/proc/$pa/ns/pid" "$IMAGE" husk-pidb sh -c 'sleep 1001 & exec sleep 1000'
    wait_status husk-pidb RUNNING
    pb=$("${CTR[@]}" task ls | awk '$1 == "husk-pidb" { print $2 }')
    sleep 0.3
    cg=$(cgroup_file "$pb" pids cgroup.procs cgroup.procs)
    pids=$(cat "$cg" 2>/dev/null | tr '\n' ' ')
    if [ "$(readlink "/proc/$pb/ns/pid")" = "$(readlink "/proc/$pa/ns/pid")" ] && [ "$(echo $pids | wc -w)" -ge 2 ]; then
      pass "shared pid: B is in A's pid namespace with its init and a child ($pids)"
    else
      fail "shared pid: B is in A's pid namespace with its init and a child" "readlink /proc/{$pa,$pb}/ns/pid; cat $cg" \
        "same namespace, >= 2 pids" "$(readlink "/proc/$pa/ns/pid") $(readlink "/proc/$pb/ns/pid"); pids: $pids"
    fi
    t0=$(date +%s%N)
    "${CTR[@]}" task kill -s SIGKILL husk-pidb >/dev/null 2>&1
    wait_status husk-pidb STOPPED
    check "shared pid: ctr task delete B" 0 "" "${CTR[@]}" task delete husk-pidb
    t1=$(date +%s%N)
    ms=$(( (t1 - t0) / 1000000 ))
    if [ "$ms" -lt 1000 ]; then pass "shared pid: stopping and deleting B took ${ms} ms (< 1 s)"; else
      fail "shared pid: stopping and deleting B takes < 1 s" "ctr task kill -s SIGKILL B; ctr task delete B" "< 1000 ms" "$ms ms"; fi
    left=""
    for p in $pids; do pid_alive "$p" && left="$left $p"; done
    if [ -z "$left" ]; then pass "shared pid: no process of B left (kill --all after its init exited)"; else
      fail "shared pid: no process of B left (kill --all after its init exited)" "ps -p$left" "none" \
        "$(ps -o pid=,args= -p "$(echo $left | tr ' ' ,)")"
      kill -9 $left 2>/dev/null
    fi
    if grep -q -- "kill --all husk-pidb 9" "$WORK/containerd/husk-argv.log"; then
      pass "shared pid: the shim called 'kill --all B 9' after B's init exited"
    else
      fail "shared pid: the shim called 'kill --all B 9' after B's init exited" "cat husk-argv.log" \
        "a 'kill --all husk-pidb 9' call" "$(cat "$WORK/containerd/husk-argv.log" 2>&1)"
    fi
    expect_eq "shared pid: A still runs" "ctr task ls" RUNNING "$(task_status husk-pida)"
    "${CTR[@]}" container rm husk-pidb >/dev/null 2>&1
    "${CTR[@]}" task kill -s SIGKILL husk-pida >/dev/null 2>&1
    wait_status husk-pida STOPPED
    "${CTR[@]}" task delete husk-pida >/dev/null 2>&1
    "${CTR[@]}" container rm husk-pida >/dev/null 2>&1
  fi

  containerd_shared_root_tests
  check_no_stray_husk "containerd (husk's own root): no husk process left behind" "$CTR_HUSK_ROOT"
}

# husk and runc sharing one state root, as with a handler config without
# Root: a runc task and a husk task under the same --runc-root.
containerd_shared_root_tests() {
  local RUNC=${RUNC:-$(command -v runc)}
  if [ -z "$RUNC" ]; then skip "shared root: no runc on this host"; return; fi
  local S=$WORK/containerd/shared-root
  local R=$S/$CTR_NS
  check "shared root: ctr run -d with runc" 0 "" "${CTR[@]}" run -d --runc-binary "$RUNC" --runc-root "$S" \
    "$IMAGE" runc-shared "${CTR_SLEEPER[@]}" || return
  check "shared root: ctr run -d with husk" 0 "" "${CTR[@]}" run -d --runc-binary "$HUSK" --runc-root "$S" \
    "$IMAGE" husk-shared "${CTR_SLEEPER[@]}"
  wait_status runc-shared RUNNING
  wait_status husk-shared RUNNING
  check "shared root: husk delete of runc's running container is refused, naming runc" nz "runc" \
    "$HUSK" --root "$R" delete runc-shared
  check "shared root: husk delete --force of runc's container is refused" nz "runc" \
    "$HUSK" --root "$R" delete --force runc-shared
  check "shared root: husk kill of runc's container is refused" nz "runc" "$HUSK" --root "$R" kill runc-shared KILL
  check "shared root: runc's container still runs (runc state)" 0 '"status": "running"' "$RUNC" --root "$R" state runc-shared
  expect_eq "shared root: runc's task still runs (ctr)" "ctr task ls" RUNNING "$(task_status runc-shared)"
  capture "$HUSK" --root "$R" list -q
  if [[ "$OUT" != *runc-shared* ]]; then pass "shared root: husk list does not show runc's container"; else
    fail "shared root: husk list does not show runc's container" "husk --root $R list -q" "no runc-shared" "$OUT"; fi
  # runc reports on stderr that it cannot load husk's state; stdout lists.
  capture sh -c "$(printf '%q ' "$RUNC") --root $R list -q 2>/dev/null"
  if [[ "$OUT" != *husk-shared* ]]; then pass "shared root: runc list does not show husk's container"; else
    fail "shared root: runc list does not show husk's container" "runc --root $R list -q" "no husk-shared" "$OUT"; fi
  check "shared root: runc delete --force of husk's container fails" nz "" "$RUNC" --root "$R" delete --force husk-shared
  check "shared root: husk's container still runs (husk state)" 0 '"status": "running"' "$HUSK" --root "$R" state husk-shared
  expect_eq "shared root: husk's task still runs (ctr)" "ctr task ls" RUNNING "$(task_status husk-shared)"
  local c
  for c in runc-shared husk-shared; do
    "${CTR[@]}" task kill "$c" >/dev/null 2>&1
    wait_status "$c" STOPPED
    check "shared root: ctr task delete $c" 0 "" "${CTR[@]}" task delete "$c"
    "${CTR[@]}" container rm "$c" >/dev/null 2>&1
  done
  check "shared root: both states are gone" 0 "" sh -c "[ -z \"\$(ls -A $R 2>/dev/null)\" ]"
}
