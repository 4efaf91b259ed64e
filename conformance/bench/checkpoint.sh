#!/usr/bin/env bash
# checkpoint.sh - time `checkpoint` and `restore` of an idle busybox container
# (sleep 3600), each runtime with the same bundle and hyperfine invocation,
# side by side inside the cgroup v2 VM (scripts/cgroup2-vm): Debian 12's
# CRIU 3.17 cannot dump on a recent host kernel, it can on the guest's 6.1.
#
# Usage: conformance/bench/checkpoint.sh [--runs N] [--out FILE] NAME=BINARY...
#        (default: husk=build/runtime/husk runc=/usr/sbin/runc)
#
# Each checkpoint run starts from a fresh running container (hyperfine
# --prepare: helpers.sh running); each restore run from a fresh dump of one
# (helpers.sh dumped). Prints a table of medians (ms); --out writes the
# hyperfine results as JSON. A runtime whose command fails gets no numbers,
# the others still do. Needs root (the VM); the guest is emulated when there
# is no KVM: absolute times are slow, compare the runtimes only.
set -euo pipefail
prog=checkpoint.sh
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../scripts/lib.sh"

if [ "${1:-}" != --guest ]; then
  runs=5 out="" rts=()
  while [ $# -gt 0 ]; do
    case $1 in
      --runs) runs=$2; shift 2 ;;
      --out) out=$(readlink -f "$2"); shift 2 ;;
      -h|--help) sed -n 's/^# Usage: /Usage: /p; s/^#        /       /p' "$0"; exit 0 ;;
      *=*) rts+=("$1"); shift ;;
      *) echo "$prog: unknown argument $1" >&2; exit 2 ;;
    esac
  done
  [ ${#rts[@]} -gt 0 ] || rts=("husk=$vm_repo/build/runtime/husk" runc=/usr/sbin/runc)
  vm_preflight
  apt_ensure /tmp/husk-bench-checkpoint-apt.log criu hyperfine ||
    { echo "SKIP: criu or hyperfine cannot be installed: $(apt_why /tmp/husk-bench-checkpoint-apt.log)"; exit 0; }
  # Binaries and results go through a shared dir of their own.
  share=$(mktemp -d /tmp/husk-bench-ckpt.XXXXXX)
  trap 'rm -rf "$share"' EXIT
  args=()
  for r in "${rts[@]}"; do
    bin=$(readlink -f "${r#*=}")
    [ -x "$bin" ] || { echo "$prog: no binary $bin" >&2; exit 2; }
    cp "$bin" "$share/${r%%=*}"
    # husk runs its CRIU bridge from beside itself.
    [ -x "$(dirname "$bin")/husk-criu" ] && cp "$(dirname "$bin")/husk-criu" "$share/"
    args+=("${r%%=*}")
  done
  set +e
  "$vm_here/cgroup2-vm" -t 1200 -w "$share" "$vm_repo" \
    "bash $(printf %q "$here/$prog") --guest $(printf %q "$share") $runs ${args[*]}"
  rc=$?
  set -e
  [ -n "$out" ] && [ -s "$share/results.json" ] && cp "$share/results.json" "$out"
  exit $rc
fi

# ------------------------------------------------------------ in the guest ---
[ "${CG2VM:-}" = 1 ] || { echo "$prog: --guest runs only inside scripts/cgroup2-vm" >&2; exit 2; }
share=$2 runs=$3
shift 3
criu check >/dev/null 2>&1 || { echo "SKIP: criu check fails in the VM"; exit 0; }
work=$(mktemp -d /tmp/bench-ckpt.XXXXXX)
# The guest's tmpfs: a binary on the 9p share is read again at every exec.
helpers=$work/helpers.sh
cp "$here/helpers.sh" "$helpers"
scripts/make-bundle "$work/base" runc >/dev/null
results=()
[ -x "$share/husk-criu" ] && cp "$share/husk-criu" "$work/"
for name; do
  cp "$share/$name" "$work/$name"
  rt="$work/$name --root $work/state-$name"
  b=$work/bundle-$name
  mkdir -p "$b"
  jq --arg rootfs "$work/base/rootfs" --arg cg "/ckpt-bench/$name" \
    '.process.terminal = false | .process.args = ["sleep", "3600"] | .root.path = $rootfs | .linux.cgroupsPath = $cg' \
    "$work/base/config.json" >"$b/config.json"
  for op in checkpoint restore; do
    if [ $op = checkpoint ]; then
      prep="$helpers running '$rt' $b bench-ckpt"
      cmd="$rt checkpoint --image-path $work/img-$name bench-ckpt"
    else
      prep="$helpers dumped '$rt' $b bench-ckpt $work/img-$name"
      cmd="$rt restore --detach --image-path $work/img-$name --bundle $b bench-ckpt"
    fi
    echo "$name $op: hyperfine, $runs runs" >&2
    if hyperfine -N --style basic --runs "$runs" --prepare "$prep" --command-name "$name $op" \
        --export-json "$work/hf-$name-$op.json" "$cmd" >&2; then
      results+=("$work/hf-$name-$op.json")
    else
      # Why, from one more try outside hyperfine (its prepare step included).
      why=$(bash -c "$prep" >/dev/null 2>&1; bash -c "$cmd" 2>&1 >/dev/null </dev/null | head -1) || true
      echo "$name $op: failed, no numbers: ${why:-its prepare step failed}" >&2
    fi
    $rt delete --force bench-ckpt >/dev/null 2>&1 || true
  done
done
[ ${#results[@]} -gt 0 ] || { echo "no runtime could checkpoint and restore" >&2; exit 1; }
jq -s '[.[].results[0] | {command, median_ms: (.median * 1000), mean_ms: (.mean * 1000),
        stddev_ms: ((.stddev // 0) * 1000), runs: (.times | length)}]' "${results[@]}" >"$share/results.json"
echo
echo "| runtime, command | median (ms) | mean ± sd (ms) | runs |"
echo "|---|---:|---:|---:|"
jq -r '.[] | "| \(.command) | \(.median_ms | round) | \(.mean_ms | round) ± \(.stddev_ms | round) | \(.runs) |"' \
  "$share/results.json"
rmdir /sys/fs/cgroup/ckpt-bench/* /sys/fs/cgroup/ckpt-bench 2>/dev/null || true
exit 0
