# podman + conmon driving husk; sourced by run-engines (needs lib.sh, WORK,
# HUSK, IMAGE, ROOTFS_TAR, CGROUP_PARENT).

podman_setup() {
  mkdir -p "$WORK/podman/tmp"
  # Small ulimits: without CAP_SYS_RESOURCE podman's default nofile/nproc
  # (above our hard limits) make every setrlimit fail.
  local nofile nproc
  nofile=$(ulimit -Hn); [ "$nofile" = unlimited ] && nofile=1048576; [ "$nofile" -gt 1024 ] && nofile=1024
  nproc=$(ulimit -Hu);  [ "$nproc" = unlimited ] && nproc=4096;     [ "$nproc" -gt 4096 ] && nproc=4096
  cat >"$WORK/podman/containers.conf" <<CONF
[containers]
default_ulimits = ["nofile=$nofile:$nofile", "nproc=$nproc:$nproc"]
netns = "none"
[engine]
cgroup_manager = "cgroupfs"
events_logger = "file"
events_logfile_path = "$WORK/podman/events.log"
runtime = "husk"
runtime_supports_json = ["crun", "runc", "husk", "husk-strict"]
tmp_dir = "$WORK/podman/tmp"
static_dir = "$WORK/podman/root/libpod"
volume_path = "$WORK/podman/root/volumes"
[engine.runtimes]
husk = ["$HUSK"]
CONF
  # vfs: no overlay mounts on the host to clean up, the image is tiny.
  cat >"$WORK/podman/storage.conf" <<CONF
[storage]
driver = "vfs"
graphroot = "$WORK/podman/root"
runroot = "$WORK/podman/runroot"
CONF
  export CONTAINERS_CONF=$WORK/podman/containers.conf
  export CONTAINERS_STORAGE_CONF=$WORK/podman/storage.conf
  PODMAN=(podman --runtime husk)
  PRUN=("${PODMAN[@]}" run --network none --cgroup-parent="$CGROUP_PARENT/podman")
}

podman_cleanup() {
  [ -n "${CONTAINERS_STORAGE_CONF:-}" ] || return 0
  "${PODMAN[@]}" rm --all --force --time 0 >/dev/null 2>&1
  "${PODMAN[@]}" rmi --all --force >/dev/null 2>&1
}

# A container that stops promptly on SIGTERM (PID 1 needs a handler).
PODMAN_SLEEPER=(sh -c 'trap "exit 0" TERM; while :; do sleep 1; done')

podman_tests() {
  echo "=== podman $(podman --version | awk '{print $3}') + conmon, runtime $HUSK"
  podman_setup
  if ! check "podman import of the busybox rootfs" 0 "" \
      "${PODMAN[@]}" import --change 'CMD ["/bin/sh"]' "$ROOTFS_TAR" "$IMAGE"; then
    return
  fi

  check "podman run echo hi" 0 "hi" "${PRUN[@]}" --rm "$IMAGE" echo hi &&
    expect_eq "podman run: stdout is exactly the container's" "podman run --rm IMG echo hi" "hi" "$OUT"
  check "podman run: exit code propagates" 3 "" "${PRUN[@]}" --rm "$IMAGE" sh -c 'exit 3'
  check "podman run: missing command fails with husk's error" 127 "executable file not found" \
    "${PRUN[@]}" --rm "$IMAGE" no-such-command
  check "podman run: process.args, env and cwd reach the container" 0 "/tmp:bar" \
    "${PRUN[@]}" --rm -e FOO=bar -w /tmp "$IMAGE" sh -c 'echo "$(pwd):$FOO"'
  if command -v script >/dev/null; then
    check "podman run -t: the process gets a pty" 0 "/dev/pts/" \
      script -qec "$(printf '%q ' "${PRUN[@]}" --rm -t "$IMAGE" tty)" /dev/null
  else
    skip "podman run -t: no script(1) to provide a terminal"
  fi
  check "podman run --user 1000 --read-only: uid and read-only rootfs" 0 "1000:ro" \
    "${PRUN[@]}" --rm --user 1000 --read-only "$IMAGE" sh -c 'echo "$(id -u):$(touch /x 2>/dev/null && echo rw || echo ro)"'
  check "podman run --cap-drop all: no effective capabilities" 0 "CapEff:	0000000000000000" \
    "${PRUN[@]}" --rm --cap-drop all "$IMAGE" grep CapEff /proc/self/status
  # 100M buffer against 32M of memory (and podman's 64M memory+swap): the kernel must OOM-kill dd.
  check "podman run --memory 32m: allocating 100M is OOM-killed" 137 "" \
    "${PRUN[@]}" --rm --memory 32m "$IMAGE" dd if=/dev/zero of=/dev/null bs=100M count=1

  local id pid f
  capture "${PRUN[@]}" -d --memory 32m --pids-limit 20 "$IMAGE" "${PODMAN_SLEEPER[@]}"
  id=$OUT
  if [ "$RC" -ne 0 ]; then
    fail "podman run -d with limits" "podman run -d --memory 32m --pids-limit 20 IMG sh -c ..." "exit 0" "exit $RC: $OUT"
    return
  fi
  pass "podman run -d --memory 32m --pids-limit 20"
  pid=$("${PODMAN[@]}" inspect -f '{{.State.Pid}}' "$id")
  check_cgroup_parent "podman: the container's cgroup is below --cgroup-parent" "$pid" "$CGROUP_PARENT/podman"
  f=$(cgroup_file "$pid" memory memory.limit_in_bytes memory.max)
  expect_eq "podman --memory 32m: host cgroup limit" "cat $f" 33554432 "$(cat "$f" 2>&1)"
  f=$(cgroup_file "$pid" pids pids.max pids.max)
  expect_eq "podman --pids-limit 20: host cgroup limit" "cat $f" 20 "$(cat "$f" 2>&1)"

  check "podman exec echo" 0 "exec-hi" "${PODMAN[@]}" exec "$id" echo exec-hi
  check "podman exec: exit code propagates" 5 "" "${PODMAN[@]}" exec "$id" sh -c 'exit 5'
  if command -v script >/dev/null; then
    check "podman exec -t: the exec'd process gets a pty" 0 "/dev/pts/" \
      script -qec "$(printf '%q ' "${PODMAN[@]}") exec -t $id tty" /dev/null
  fi
  check "podman exec: joins the container's pid namespace" 0 "while :; do sleep 1" \
    "${PODMAN[@]}" exec "$id" sh -c 'tr "\0" " " </proc/1/cmdline'
  check "podman exec -e -w -u: user, env and cwd of the exec'd process" 0 "1000:/home/user:x" \
    "${PODMAN[@]}" exec -u 1000 -e V=x -w /home/user "$id" sh -c 'echo "$(id -u):$(pwd):$V"'
  check "podman exec: pids limit stops a fork of 40 sleeps" nz "can't fork" \
    "${PODMAN[@]}" exec "$id" sh -c 'for i in $(seq 40); do sleep 30 & done; echo all forked'
  f=$(cgroup_file "$pid" pids pids.current pids.current)
  local cur
  cur=$(cat "$f" 2>/dev/null)
  if [ -n "$cur" ] && [ "$cur" -le 20 ]; then pass "podman: pids.current ($cur) stays within 20"; else
    fail "podman: pids.current stays within 20" "cat $f" "<= 20" "$cur"; fi
  # podman top reads /proc of the container's pid namespace itself.
  check "podman top lists the container's processes" 0 "sleep 30" "${PODMAN[@]}" top "$id"
  # Free the pids again: a runtime's exec may need a few of its own.
  local p
  for p in $(cat "$(cgroup_file "$pid" pids cgroup.procs cgroup.procs)"); do
    [ "$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)" = "sleep 30 " ] && kill -9 "$p"
  done

  check "podman pause" 0 "" "${PODMAN[@]}" pause "$id"
  check "podman pause: status paused" 0 "paused" "${PODMAN[@]}" inspect -f '{{.State.Status}}' "$id"
  f=$(cgroup_file "$pid" freezer freezer.state cgroup.freeze)
  capture cat "$f"
  if [[ "$OUT" == FROZEN || "$OUT" == 1 ]]; then pass "podman pause: host freezer is frozen"; else
    fail "podman pause: host freezer is frozen" "cat $f" "FROZEN (v1) or 1 (v2)" "$OUT"; fi
  check "podman unpause" 0 "" "${PODMAN[@]}" unpause "$id"
  check "podman unpause: status running" 0 "running" "${PODMAN[@]}" inspect -f '{{.State.Status}}' "$id"
  check "podman exec after unpause" 0 "alive" "${PODMAN[@]}" exec "$id" echo alive

  if "${PODMAN[@]}" update --help >/dev/null 2>&1; then
    check "podman update --memory 64m" 0 "" "${PODMAN[@]}" update --memory 64m "$id"
    f=$(cgroup_file "$pid" memory memory.limit_in_bytes memory.max)
    expect_eq "podman update --memory 64m: host cgroup limit" "cat $f" 67108864 "$(cat "$f" 2>&1)"
  else
    skip "podman update: this podman ($(podman --version)) has no update command"
  fi

  local cgdir
  cgdir=$(cgroup_file "$pid" memory . .)
  check "podman stop (SIGTERM handled)" 0 "" "${PODMAN[@]}" stop -t 10 "$id"
  check "podman stop: exit code of the trap" 0 "0" "${PODMAN[@]}" inspect -f '{{.State.ExitCode}}' "$id"
  check "podman stop: runtime state is gone" nz "does not exist" "$HUSK" state "$id"
  if [ -d "$cgdir" ]; then fail "podman stop: container cgroup removed" "test -d $cgdir" "absent" "present"; else
    pass "podman stop: container cgroup removed"; fi
  check "podman rm" 0 "" "${PODMAN[@]}" rm "$id"

  # PID 1 without a SIGTERM handler: stop must fall back to SIGKILL.
  capture "${PRUN[@]}" -d "$IMAGE" sleep 1000
  id=$OUT
  check "podman stop -t 1 (SIGTERM ignored, then SIGKILL)" 0 "" "${PODMAN[@]}" stop -t 1 "$id"
  check "podman stop: killed by SIGKILL" 0 "137" "${PODMAN[@]}" inspect -f '{{.State.ExitCode}}' "$id"
  check "podman rm -f of a running container" 0 "" sh -c \
    "$(printf '%q ' "${PRUN[@]}") -d --name husk-rmf $IMAGE sleep 1000 >/dev/null && $(printf '%q ' "${PODMAN[@]}") rm -f -t 0 husk-rmf"
  "${PODMAN[@]}" rm -f "$id" >/dev/null 2>&1

  # A paused container killed: runc thaws it after SIGKILL; a frozen one
  # never dies and podman kill waited for ever.
  capture "${PRUN[@]}" -d "$IMAGE" sleep 1000
  id=$OUT
  check "podman pause (then kill)" 0 "" "${PODMAN[@]}" pause "$id"
  check "podman kill of a paused container" 0 "" timeout 20 "${PODMAN[@]}" kill "$id"
  check "podman kill of a paused container: it ends (SIGKILL)" 0 "137" timeout 20 "${PODMAN[@]}" wait "$id"
  "${PODMAN[@]}" rm -f "$id" >/dev/null 2>&1

  # issue 8: podman writes the whole st_mode (e.g. 020666) as fileMode.
  local dev
  dev=$(host_extra_chardev)
  check "podman run --privileged" 0 "privileged-ok" "${PRUN[@]}" --rm --privileged "$IMAGE" \
    sh -c "test -e /dev/ptmx && ${dev:+test -c $dev &&} exec 3<>/dev/ptmx && echo privileged-ok"
  if [ -n "$dev" ]; then
    # Opening it also needs the device cgroup rule podman asks for.
    check "podman run --device $dev: the device is there and opens" 0 "device-ok" \
      "${PRUN[@]}" --rm --device "$dev" "$IMAGE" sh -c "test -c $dev && exec 3<>$dev && echo device-ok"
  else
    skip "podman run --device: no char device (fuse, tun, kmsg, loop-control) on this host"
  fi
  podman_policy_tests
  check_no_stray_husk "podman: no husk process left behind" "$WORK/podman"
}
