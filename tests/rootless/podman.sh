# Rootless podman checks of tests/rootless/test-rootless (sourced): podman run by
# the test user with `--runtime <rt>`, its own storage (vfs) below its HOME
# and an image imported from the busybox rootfs (no registry).
#
# How podman calls the runtime here (see /work/notes or the report of
# issue 11): inside podman's own user namespace (euid 0, the user's uid and
# /etc/subuid range mapped), no --root/--rootless flags (the runtime's
# default state root must be $XDG_RUNTIME_DIR/<rt>), a config without a user
# namespace, without cgroupsPath and with empty linux.resources.
#
# Cgroups: podman as non-root on a cgroup v1 (hybrid) host runs containers
# without cgroups (it drops --memory etc. with a warning "Resource limits
# are not supported and ignored on cgroups V1 rootless systems"); runc then
# makes no cgroup and the container stays in the caller's. --cgroups=disabled
# is not needed, and podman refuses it for any runtime not in
# runtime_supports_nocgroups (crun, krun): "not compatible with NoCgroups".

IMAGE=localhost/husk-busybox:rootless
PODMAN_SKIP=""

podman_install() {
  # slirp4netns: rootless podman's default network (a Recommends of podman).
  command -v podman >/dev/null && command -v conmon >/dev/null && command -v slirp4netns >/dev/null && return 0
  command -v apt-get >/dev/null || { PODMAN_SKIP="podman/conmon/slirp4netns missing and no apt-get"; return 1; }
  echo "installing podman, conmon and slirp4netns with apt-get"
  local log=$WORK/apt.log pkgs=(podman conmon slirp4netns)
  DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y -q --no-install-recommends "${pkgs[@]}" >"$log" 2>&1 ||
    { timeout 120 apt-get update -q >>"$log" 2>&1 &&
      DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y -q --no-install-recommends "${pkgs[@]}" >>"$log" 2>&1; } ||
    { PODMAN_SKIP="cannot install podman: $(grep -m1 -E '^(E|W):' "$log")"; return 1; }
}

podman_setup() {
  podman_install || return
  local conf=$WORK/home/.config/containers
  mkdir -p "$conf"
  # No systemd user session here: the cgroupfs manager (rootless podman's
  # "systemd" default needs one) and events in a file, not the journal.
  # runtime_supports_json: "husk" too, so podman passes --log-format=json.
  cat >"$conf/containers.conf" <<'CONF'
[engine]
cgroup_manager = "cgroupfs"
events_logger = "file"
runtime_supports_json = ["crun", "runc", "husk"]
CONF
  # vfs: no fuse-overlayfs needed, nothing mounted on the host; the storage
  # (graphroot ~/.local/share/containers, runroot $XDG_RUNTIME_DIR/containers)
  # goes with WORK.
  printf '[storage]\ndriver = "vfs"\n' >"$conf/storage.conf"
  chown -R "$RL_UID:$RL_GID" "$WORK/home/.config"
  capture "${U[@]}" podman import --change 'CMD ["/bin/sh"]' "$WORK/rootfs.tar" "$IMAGE"
  [ "$RC" = 0 ] || PODMAN_SKIP="podman import as $RL_USER failed (exit $RC): $(tail -3 <<<"$OUT")"
}

podman_cleanup() {
  [ -n "$RL_UID" ] && command -v podman >/dev/null || return 0
  as_user podman rm --all --force --time 0 >/dev/null 2>&1
  as_user podman rmi --all --force >/dev/null 2>&1
  # The rootless pause process (keeps podman's user namespace) and any
  # conmon left go with the user's other processes in remove_user.
}

PODMAN_SLEEPER=(sh -c 'trap "exit 0" TERM; while :; do sleep 1; done')

podman_checks() {
  local rt=$1
  [ -z "$PODMAN_SKIP" ] || { skip "$LABEL: rootless podman: $PODMAN_SKIP"; return; }
  local P=("${U[@]}" podman --runtime "${RT_BIN[$rt]}") PR=("${U[@]}" podman --runtime "${RT_BIN[$rt]}" run --rm --network none)
  check "$LABEL: podman run --rm IMG echo hi" 0 hi "${PR[@]}" "$IMAGE" echo hi &&
    expect_eq "$LABEL: podman run: stdout is exactly the container's" "podman run --rm IMG echo hi" hi "$OUT"
  check "$LABEL: podman run: root inside is the user, its /etc/subuid range follows" 0 \
    "map 0 $RL_UID 1"$'\n'"map 1 $SUB_START 65536" "${PR[@]}" "$IMAGE" awk '{ print "map", $1, $2, $3 }' /proc/self/uid_map
  check "$LABEL: podman run --network none: only lo" 0 "" "${PR[@]}" "$IMAGE" sh -c '[ "$(ls /sys/class/net)" = lo ]'
  if command -v slirp4netns >/dev/null && [ -c /dev/net/tun ]; then
    check "$LABEL: podman run (default rootless network, slirp4netns)" 0 tap0 \
      "${P[@]}" run --rm "$IMAGE" ls /sys/class/net
  else
    skip "$LABEL: podman default network: no slirp4netns or no /dev/net/tun"
  fi
  local share=$WORK/s/$rt-podman
  mkdir -p "$share" && chown "$RL_UID:$RL_GID" "$share"
  check "$LABEL: podman run -v: a file made inside" 0 "" "${PR[@]}" -v "$share:/mnt/rw" "$IMAGE" touch /mnt/rw/podman-file
  expect_eq "$LABEL: podman run -v: the file belongs to the user on the host" "stat -c %u:%g $share/podman-file" \
    "$RL_UID:$RL_GID" "$(host_owner "$share/podman-file")"

  local id
  capture "${P[@]}" run -d --network none "$IMAGE" "${PODMAN_SLEEPER[@]}"
  id=$OUT
  if [ "$RC" -ne 0 ]; then fail "$LABEL: podman run -d" "podman run -d IMG sh -c ..." "exit 0" "exit $RC: $OUT"; return; fi
  pass "$LABEL: podman run -d"
  check "$LABEL: podman exec echo" 0 exec-hi "${P[@]}" exec "$id" echo exec-hi
  check "$LABEL: podman exec -u 1000" 0 "uid=1000" "${P[@]}" exec -u 1000 "$id" id
  # The v1 memory hierarchy is left out: there the caller's cgroup is the
  # machine's process_api, which no test may touch.
  check "$LABEL: podman: the cgroup hierarchies are read-only inside" 0 "" "${P[@]}" exec "$id" sh -c \
    'for d in /sys/fs/cgroup/*/; do case $d in *memory*) continue ;; esac; mkdir "${d}rl-probe" 2>/dev/null && echo "made $d" && exit 1; done; exit 0'
  check "$LABEL: podman's container is in '$rt list' run by the user (same default state root)" 0 "$id" "${U[@]}" "${RT_BIN[$rt]}" list
  check "$LABEL: podman stop (SIGTERM handled)" 0 "" "${P[@]}" stop -t 10 "$id"
  check "$LABEL: podman stop: exit code of the trap" 0 0 "${P[@]}" inspect -f '{{.State.ExitCode}}' "$id"
  check "$LABEL: podman rm" 0 "" "${P[@]}" rm "$id"
  check "$LABEL: podman rm: the runtime's state is gone" nz "" "${U[@]}" "${RT_BIN[$rt]}" state "$id"
}
