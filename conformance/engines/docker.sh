# Docker (Debian's docker.io) driving husk as an extra runtime of a private
# dockerd (README's daemon.json "runtimes", docker run --runtime husk); sourced by
# run-engines (needs lib.sh, WORK, HUSK, IMAGE, IMAGE_TAR, CGROUP_PARENT).
#
# The daemon is all ours: its own --data-root, --exec-root (it starts its
# own containerd in there), --pidfile, --config-file and unix socket under
# $WORK/docker; no bridge, no iptables, no ip forwarding, vfs storage,
# cgroups below $CGROUP_PARENT/docker. Stopped by its pid.

DOCKERD_PID=""
DOCKER_DIR=""
# /etc/docker/key.json and /run/docker: created by dockerd when missing.
had_etcdocker=0; [ -e /etc/docker ] && had_etcdocker=1
had_keyjson=0; [ -e /etc/docker/key.json ] && had_keyjson=1
had_rundocker=0; [ -e /run/docker ] && had_rundocker=1

docker_skip() { echo "SKIP  docker: $1"; }

docker_start() {
  DOCKER_DIR=$WORK/docker
  local d=$DOCKER_DIR
  mkdir -p "$d/client"
  # husk's runtime entry is README's daemon.json as written, with this
  # build's husk for /usr/local/bin/husk; the rest are flags of a private dockerd.
  awk '/^### Docker/ { s = 1 } s && /^```json/ { f = 1; next } f && /^```/ { exit } f' "$repo/README.md" |
    sed "s|/usr/local/bin/husk|$HUSK|" >"$d/daemon.json"
  grep -q '"runtimes"' "$d/daemon.json" ||
    { fail "README's daemon.json" "awk README.md" "a json block with runtimes under ### Docker" "$(cat "$d/daemon.json")"; return 1; }
  /usr/sbin/dockerd --config-file "$d/daemon.json" --data-root "$d/root" --exec-root "$d/exec" \
    --pidfile "$d/dockerd.pid" --host "unix://$d/docker.sock" --bridge=none --iptables=false \
    --ip-forward=false --ip-masq=false --userland-proxy=false --storage-driver vfs \
    --exec-opt native.cgroupdriver=cgroupfs --cgroup-parent "$CGROUP_PARENT/docker" \
    >"$d/dockerd.log" 2>&1 &
  DOCKERD_PID=$!
  export DOCKER_CONFIG=$d/client
  DOCKER=(/usr/bin/docker -H "unix://$d/docker.sock")
  wait_serving "$DOCKERD_PID" 100 "${DOCKER[@]}" version && return 0
  docker_skip "dockerd does not start: $(grep -m1 -iE 'level=(fatal|error)|failed' "$d/dockerd.log" | head -c 300)"
  return 1
}

docker_cleanup() {
  [ -n "$DOCKER_DIR" ] || return 0
  if [ -n "$DOCKERD_PID" ] && kill -0 "$DOCKERD_PID" 2>/dev/null; then
    local c
    for c in $("${DOCKER[@]}" ps -aq 2>/dev/null); do "${DOCKER[@]}" rm -f "$c" >/dev/null 2>&1; done
    "${DOCKER[@]}" rmi -f "$IMAGE" >/dev/null 2>&1
    kill "$DOCKERD_PID" 2>/dev/null
    for c in $(seq 100); do kill -0 "$DOCKERD_PID" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$DOCKERD_PID" 2>/dev/null
  fi
  [ -z "$DOCKERD_PID" ] || wait "$DOCKERD_PID" 2>/dev/null
  DOCKERD_PID=""
  # dockerd's own containerd (and its shims) if it outlived dockerd.
  local p
  p=$(ps -eo pid=,args= | awk -v a="$DOCKER_DIR/" '$2 ~ /containerd/ && index($0, a) { print $1 }')
  [ -z "$p" ] || kill -9 $p 2>/dev/null
  # Its mounts (the data-root's shared bind mount, netns files), ours only.
  grep -o " $DOCKER_DIR/[^ ]*" /proc/self/mounts | sort -r | while read -r m; do umount -l "$m"; done
  rm -rf "$DOCKER_DIR"
  [ $had_keyjson = 1 ] || rm -f /etc/docker/key.json
  [ $had_etcdocker = 1 ] || rm -rf /etc/docker
  [ $had_rundocker = 1 ] || rm -rf /run/docker
  DOCKER_DIR=""
}

docker_tests() {
  echo "=== docker ($( /usr/sbin/dockerd --version 2>/dev/null | awk '{print $3}' | tr -d ,)), runtime husk=$HUSK"
  if [ -n "${DOCKER_SKIP:-}" ]; then docker_skip "$DOCKER_SKIP"; return; fi
  if [ ! -x /usr/sbin/dockerd ] || [ ! -x /usr/bin/docker ]; then docker_skip "no /usr/sbin/dockerd (Debian's docker.io)"; return; fi
  docker_start || return
  check "docker load of the busybox archive" 0 "" "${DOCKER[@]}" load -i "$IMAGE_TAR" || return
  local DRUN=("${DOCKER[@]}" run --runtime husk --network none)

  check "docker run --runtime husk echo hi" 0 "hi" "${DRUN[@]}" --rm "$IMAGE" echo hi &&
    expect_eq "docker run: stdout is exactly the container's" "docker run --rm IMG echo hi" "hi" "$OUT"
  check "docker run: exit code propagates" 3 "" "${DRUN[@]}" --rm "$IMAGE" sh -c 'exit 3'
  # The docker client maps the runtime's error text to 127/126.
  check "docker run: missing program exits 127" 127 "" "${DRUN[@]}" --rm "$IMAGE" no-such-command
  check "docker run: non-executable program exits 126" 126 "" "${DRUN[@]}" --rm "$IMAGE" /etc/passwd
  check "docker run: a directory as the program exits 126" 126 "" "${DRUN[@]}" --rm "$IMAGE" /tmp

  local id pid
  capture "${DRUN[@]}" -d --name husk-d "$IMAGE" sh -c 'trap "exit 7" TERM; while :; do sleep 1; done'
  id=$OUT
  if [ "$RC" -ne 0 ]; then fail "docker run -d" "docker run -d --runtime husk IMG sh -c ..." "exit 0" "exit $RC: $OUT"; else
    pass "docker run -d"
    pid=$("${DOCKER[@]}" inspect -f '{{.State.Pid}}' husk-d)
    check_cgroup_parent "docker: the container's cgroup is below --cgroup-parent" "$pid" "$CGROUP_PARENT/docker"
    check "docker exec echo" 0 "exec-hi" "${DOCKER[@]}" exec husk-d echo exec-hi
    check "docker exec: exit code propagates" 5 "" "${DOCKER[@]}" exec husk-d sh -c 'exit 5'
    check "docker exec -u -w -e" 0 "1000:/tmp:x" "${DOCKER[@]}" exec -u 1000 -w /tmp -e V=x husk-d sh -c 'echo "$(id -u):$(pwd):$V"'
    # docker exec answers 126 for any failed exec start (runc's too).
  check "docker exec of a missing program fails (126)" 126 "executable file not found" \
    "${DOCKER[@]}" exec husk-d no-such-command
    local t0 ms
    t0=$(date +%s%N)
    check "docker stop (SIGTERM handled)" 0 "husk-d" "${DOCKER[@]}" stop -t 10 husk-d
    ms=$(( ($(date +%s%N) - t0) / 1000000 ))
    check "docker stop: exit code of the trap" 0 "7" "${DOCKER[@]}" inspect -f '{{.State.ExitCode}}' husk-d
    if [ "$ms" -lt 5000 ]; then pass "docker stop: took ${ms} ms (no SIGKILL fallback needed)"; else
      fail "docker stop: SIGTERM is delivered" "docker stop -t 10" "< 5000 ms" "$ms ms"; fi
    check "docker rm" 0 "" "${DOCKER[@]}" rm husk-d
  fi

  local dev
  dev=$(host_extra_chardev)
  check "docker run --privileged" 0 "privileged-ok" "${DRUN[@]}" --rm --privileged "$IMAGE" \
    sh -c "test -e /dev/ptmx && ${dev:+test -c $dev &&} exec 3<>/dev/ptmx && echo privileged-ok"
  check "docker run --device /dev/ptmx" 0 "ptmx-ok" "${DRUN[@]}" --rm --device /dev/ptmx "$IMAGE" \
    sh -c 'exec 3<>/dev/ptmx && echo ptmx-ok'
  check_no_stray_husk "docker: no husk process left behind" "$DOCKER_DIR"
}
