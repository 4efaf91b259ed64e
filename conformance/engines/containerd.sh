# A private containerd (shim io.containerd.runc.v2) driving husk through
# `ctr --runc-binary`; sourced by run-engines (needs lib.sh, WORK, HUSK,
# IMAGE, IMAGE_TAR, CGROUP_PARENT).

# The shim sets cgroupsPath=/<namespace>/<id>: the namespace name makes the
# containers' cgroups land below $CGROUP_PARENT.
CTR_NS=${CGROUP_PARENT#/}
CONTAINERD_PID=""

containerd_start() {
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
  local i
  for i in $(seq 50); do
    "${CTR[@]}" version >/dev/null 2>&1 && return 0
    kill -0 "$CONTAINERD_PID" 2>/dev/null || break
    sleep 0.2
  done
  fail "containerd starts" "containerd --config $d/config.toml" "a serving daemon" "$(tail -5 "$d/containerd.log")"
  return 1
}

containerd_cleanup() {
  [ -n "$CONTAINERD_PID" ] || return 0
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
  # Snapshot mounts left by an interrupted run.
  grep -o " $WORK/containerd/[^ ]*" /proc/self/mounts | sort -r | while read -r m; do umount -l "$m"; done
  # The shim keeps the runtime's --root in /run/containerd/runc/<namespace>.
  rm -rf "/run/containerd/runc/$CTR_NS"
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

  check "ctr task delete -f of a running task" 0 "" sh -c \
    "$(printf '%q ' "${RUN[@]}") -d $IMAGE husk-force sleep 1000 && $(printf '%q ' "${CTR[@]}") task delete -f husk-force"
  "${CTR[@]}" container rm husk-force >/dev/null 2>&1
  check_no_stray_husk "containerd: no husk process left behind" "/run/containerd/runc/$CTR_NS"
}
