# Sourced by tests/sandbox/test-sandbox (its user, helpers and $husk):
# --memory measures memory (RLIMIT_DATA, or a cgroup), root without a
# cgroup tree or with a read-only one, --print-config for runc and crun,
# --keep-changes' summary.

# --- memory ------------------------------------------------------------------
# reserve_then_touch: 4 GiB of address space reserved without access (what
# V8, the JVM and Go do), then 1 GiB written.
reserve_then_touch='
import ctypes
libc = ctypes.CDLL(None)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
p = libc.mmap(None, 4 << 30, 0, 0x22, -1, 0)  # PROT_NONE, MAP_PRIVATE|MAP_ANONYMOUS
print("reserved" if p != 2**64 - 1 else "refused", flush=True)
b = b"\x01" * (1 << 30)
print("touched", flush=True)
'
# A process of the host's that must not suffer from the sandbox's limit.
sleep 120 &
bystander=$!
run_sb -- --memory 512m -- /usr/bin/python3 -c "$reserve_then_touch"
if [ "$RC" != 0 ] && [[ "$OUT" == *reserved* ]] && [[ "$OUT" != *touched* ]] &&
   [[ "$OUT" == *"--memory 512m: no cgroup of your own here, set as RLIMIT_DATA"* ]]; then
  pass "--memory 512m without a cgroup (RLIMIT_DATA): a 4 GiB PROT_NONE reservation works, touching 1 GiB is refused"
else
  fail "--memory 512m without a cgroup" "reserved, not touched, non-zero, the RLIMIT_DATA note" "exit $RC: $OUT"
fi
run_sb -- --memory 512m -- node -e 'console.log("node runs"); Buffer.alloc(1 << 30, 1); console.log("touched")'
if ! command -v node >/dev/null; then
  skip "node under --memory 512m: node is not installed"
elif [ "$RC" != 0 ] && [[ "$OUT" == *"node runs"* ]] && [[ "$OUT" != *touched* ]]; then
  pass "--memory 512m without a cgroup: node starts (V8 reserves address space), its 1 GiB buffer is refused"
else
  fail "node under --memory 512m" "node runs, the buffer refused" "exit $RC: $OUT"
fi
OUT=$(cd "$HOME_DIR/proj" && "${sudo_env[@]}" timeout 60 "$husk" sandbox --memory 512m -- \
  /usr/bin/python3 -c "$reserve_then_touch" 2>&1); RC=$?
if [ "$RC" = 137 ] && [[ "$OUT" == *reserved* ]] && [[ "$OUT" != *touched* ]] &&
   [[ "$OUT" == *"--memory 512m: in the sandbox's cgroup"* ]] && kill -0 "$bystander" 2>/dev/null; then
  pass "as root for a user, --memory 512m in a cgroup: the reservation works, touching 1 GiB is killed (137), nothing else"
else
  fail "as root, --memory 512m in a cgroup" "reserved, killed (137), the cgroup note, the host's sleep alive" "exit $RC: $OUT"
fi
kill "$bystander" 2>/dev/null; wait "$bystander" 2>/dev/null

# --- as root inside `ip netns exec`: no cgroup tree ----------------------------
netns=husk-sbt-$$
if ! command -v ip >/dev/null || ! ip netns add "$netns" 2>/dev/null; then
  skip "as root inside ip netns exec: cannot make a network namespace here"
else
  OUT=$(cd "$HOME_DIR/proj" && timeout 60 ip netns exec "$netns" "$husk" sandbox --user "$U" -- id -u 2>&1); RC=$?
  expect "as root inside ip netns exec (no cgroup tree), no limits: runs without a cgroup" 0 "$U" "devices"
  OUT=$(cd "$HOME_DIR/proj" && timeout 60 ip netns exec "$netns" "$husk" sandbox --user "$U" --pids 30 \
    --memory 64m -- bash -c 'ulimit -u; ulimit -d' 2>&1); RC=$?
  if [ "$RC" = 0 ] && [[ "$OUT" == *"RLIMIT_NPROC"* ]] && [[ "$OUT" == *"RLIMIT_DATA"* ]] &&
     [[ "$OUT" == *$'\n30\n65536'* ]]; then
    pass "as root inside ip netns exec with limits: set as rlimits, said once, as without delegation"
  else
    fail "as root inside ip netns exec with limits" "exit 0, RLIMIT_NPROC 30 and RLIMIT_DATA 64 MiB, said" "exit $RC: $OUT"
  fi
  ip netns del "$netns"
fi

# As root where the cgroup file system is there but read-only (a container's;
# here a read-only bind in a mount namespace of the test's own): rlimits too.
# The memory controller's mount point: v1's, else cgroup2's.
memory_cg=$(awk '{ for (i = 7; $i != "-"; i++); t = $(i + 1) }
  t == "cgroup" && $(i + 3) ~ /(^|,)memory(,|$)/ { v1 = $5 } t == "cgroup2" && !v2 { v2 = $5 }
  END { print v1 ? v1 : v2 }' /proc/self/mountinfo)
OUT=$(cd "$HOME_DIR/proj" && timeout 60 unshare -m --propagation private \
  sh -c 'mount -o bind,ro "$0" "$0" && exec "$@"' "$memory_cg" \
  "$husk" sandbox --user "$U" --memory 64m -- bash -c 'ulimit -d' 2>&1); RC=$?
if [ "$RC" = 0 ] && [[ "$OUT" == *"RLIMIT_DATA"* ]] && [[ "$OUT" == *$'\n65536'* ]]; then
  pass "as root with the memory cgroup file system read-only ($memory_cg): --memory as RLIMIT_DATA, said"
else
  fail "as root with a read-only cgroup file system" "exit 0, RLIMIT_DATA 64 MiB, said" "exit $RC: $OUT"
fi

# --- --print-config for runc and crun ------------------------------------------
# bundle_for NAME [root]: a bundle of the user's with the config printed
# by the user (or by root for the user).
probe_cmd='echo "uid $(id -u) proxy ${HTTP_PROXY:-none}"'
bundle_for() {
  local b=$HOME_DIR/bundle-$1 by=(as_user --)
  [ -n "${2:-}" ] && by=(env -C "$HOME_DIR/proj")
  as_user -- mkdir -p "$b/rootfs"
  # A file bound read-only ("ro": crun 1.8 refuses "rro" on a file).
  as_user -- touch "$HOME_DIR/proj/deny-written"
  "${by[@]}" sh -c 'exec "$@" >"$0"' "$b/config.json" \
    "$husk" sandbox --print-config ${2:+--user "$U"} --allow-host example.com --deny-write deny-written \
    -- sh -c "$probe_cmd" 2>"$WORK/print.err"
  echo "$b"
}
# crun refuses every container on a host whose cgroup2 is mounted beside v1
# with controllers in it (this one's hugetlb): there it runs in a mount
# namespace of the test's own with a tmpfs over /sys/fs/cgroup.
crun_wrap=()
if [ "$(stat -fc %T /sys/fs/cgroup)" = tmpfs ] && [ -n "$(cat /sys/fs/cgroup/unified/cgroup.controllers 2>/dev/null)" ]; then
  crun_wrap=(unshare -m --propagation private sh -c 'mount -t tmpfs -o size=4k tmpfs /sys/fs/cgroup && exec "$@"' sh)
fi
for runtime in /usr/sbin/runc /usr/bin/crun; do
  name=$(basename "$runtime")
  [ -x "$runtime" ] || { skip "--print-config under $name: not installed"; continue; }
  wrap=()
  [ "$name" = crun ] && wrap=("${crun_wrap[@]}")
  b=$(bundle_for "$name")
  OUT=$("${wrap[@]}" "${AS_USER[@]}" timeout 60 "$runtime" --root "$b/state" run --bundle "$b" "sbt-$name-$$" 2>&1); RC=$?
  expect "--print-config as the user, run by $name rootless: exit 0, no HTTP_PROXY" 0 "uid 0 proxy none"
  b=$(bundle_for "$name-root" root)
  root_flags=()
  [ "$name" = crun ] && root_flags=(--cgroup-manager=disabled)
  OUT=$("${wrap[@]}" timeout 60 "$runtime" --root "$b/state" "${root_flags[@]}" run --bundle "$b" "sbt-$name-root-$$" 2>&1); RC=$?
  expect "--print-config as root for the user, run by $name as root: exit 0, the user's uid outside" 0 "uid 0 proxy none"
  rm -rf "$HOME_DIR/bundle-$name" "$HOME_DIR/bundle-$name-root" "$HOME_DIR/proj/deny-written"
done

# --- --keep-changes: a summary, no empty upper directory ----------------------
keep=$HOME_DIR/review-summary
run_sb -- --keep-changes "$keep" -- sh -c 'echo c >summarized'
uppers=$(cd "$keep/upper" 2>/dev/null && ls | tr '\n' ' ')
if [ "$RC" = 0 ] && [[ "$OUT" == *"changes kept in $keep/upper/"*"-proj (for $HOME_DIR/proj)"* ]] &&
   [[ "$uppers" == *-proj" " ]] && [ "$(echo "$uppers" | wc -w)" = 1 ]; then
  pass "--keep-changes: says where the changes are and for which path; the empty upper directories are gone"
else
  fail "--keep-changes summary" "exit 0, 'changes kept in DIR/upper/N-proj (for ~/proj)', only N-proj left" \
    "exit $RC: $OUT; upper: $uppers"
fi
rm -rf "$keep"
run_sb -- --keep-changes "$keep" -- true
if [ "$RC" = 0 ] && [[ "$OUT" == *"nothing was changed"* ]] && [ -z "$(ls -A "$keep" 2>&1)" ]; then
  pass "--keep-changes without a change: says so, DIR left empty"
else
  fail "--keep-changes without a change" "exit 0, 'nothing was changed', DIR empty" "exit $RC: $OUT; $(ls -A "$keep" 2>&1)"
fi
rm -rf "$keep"
# Hostile: DIR below a --rw directory, the command swaps DIR/upper for a
# symlink to a directory of look-alike empty layers: none of them is removed.
rw_keep=$HOME_DIR/rw-keep
as_user -- mkdir -p "$rw_keep" "$HOME_DIR/decoy-upper/0-bin" "$HOME_DIR/decoy-upper/1-boot"
run_sb -- --rw "$rw_keep" --keep-changes "$rw_keep/k" -- \
  sh -c "mv $rw_keep/k/upper $rw_keep/k/moved && ln -s $HOME_DIR/decoy-upper $rw_keep/k/upper"
if [ "$RC" = 0 ] && [[ "$OUT" == *"$rw_keep/k/upper is no directory any more"* ]] &&
   [ -d "$HOME_DIR/decoy-upper/0-bin" ] && [ -d "$HOME_DIR/decoy-upper/1-boot" ]; then
  pass "--keep-changes: DIR/upper swapped for a symlink by the command: said, nothing removed where it points"
else
  fail "--keep-changes with DIR/upper swapped" "exit 0, said, the decoy's empty directories kept" \
    "exit $RC: $OUT; decoy: $(ls "$HOME_DIR/decoy-upper" | tr '\n' ' ')"
fi
rm -rf "$rw_keep" "$HOME_DIR/decoy-upper"
