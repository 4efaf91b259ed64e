#!/bin/bash
# Small command lines that hyperfine times or runs as --prepare steps.
# RT is "BINARY --root DIR" (word-split on purpose; bench paths have no spaces).
#   helpers.sh seq  RT BUNDLE N           N sequential `run`s of one bundle
#   helpers.sh conc RT BUNDLES N FAILLOG  N `run`s at once, bundle BUNDLES/<i>;
#                                         appends the failure count to FAILLOG
#   helpers.sh cycle RT PREFIX N FAILLOG  N create+start+delete at once, bundle
#                                         PREFIX<i>; appends the failure count
#   helpers.sh fresh RT ID                delete ID if it exists
#   helpers.sh created RT BUNDLE ID       leave ID in the created state
#   helpers.sh stopped RT BUNDLE ID       leave ID stopped (created, started, exited)
#   helpers.sh running RT BUNDLE ID       leave ID running (its bundle runs sleep)
#   helpers.sh dumped RT BUNDLE ID IMG    a fresh checkpoint of ID running in IMG
#                                         (checkpoint.sh's restore), ID gone
#   helpers.sh idle RT [ID]               delete ID if it exists, then wait 0.3 s: no
#                                         process was moved into a cgroup just before
set -u
op=$1 rt=$2
shift 2

# /bin/true exits at once; wait until the runtime sees ID stopped (bounded: 5 s).
wait_stopped() {
  for ((w = 0; w < 5000; w++)); do
    $rt state "$1" 2>/dev/null | grep -q '"stopped"' && return 0
    sleep 0.001
  done
  return 1
}

# One container's whole life, no --force anywhere: a step that fails is a failure.
cycle_one() {
  $rt create --bundle "$1" "$2" >/dev/null </dev/null && $rt start "$2" >/dev/null &&
    wait_stopped "$2" && $rt delete "$2" >/dev/null
}

case $op in
seq)
  bundle=$1 n=$2
  for ((i = 0; i < n; i++)); do
    $rt run --bundle "$bundle" seq >/dev/null || exit 1
  done
  ;;
conc)
  bundles=$1 n=$2 faillog=$3
  pids=()
  for ((i = 0; i < n; i++)); do
    $rt run --bundle "$bundles/$i" "conc-$i" >/dev/null 2>>"$faillog.stderr" &
    pids+=($!)
  done
  fails=0
  for ((i = 0; i < n; i++)); do
    if ! wait "${pids[$i]}"; then
      fails=$((fails + 1))
      # A failed run may leave its container behind; the next round reuses the id.
      $rt delete --force "conc-$i" >/dev/null 2>&1
    fi
  done
  echo "$fails" >>"$faillog"
  [ "$fails" = 0 ]
  ;;
cycle)
  prefix=$1 n=$2 faillog=$3
  pids=()
  for ((i = 0; i < n; i++)); do
    cycle_one "$prefix$i" "cycle-$i" 2>>"$faillog.stderr" &
    pids+=($!)
  done
  fails=0
  for ((i = 0; i < n; i++)); do
    wait "${pids[$i]}" || fails=$((fails + 1))
  done
  echo "$fails" >>"$faillog"
  [ "$fails" = 0 ]
  ;;
fresh)
  $rt delete --force "$1" >/dev/null 2>&1
  exit 0
  ;;
idle)
  [ $# -gt 0 ] && $rt delete --force "$1" >/dev/null 2>&1
  sleep 0.3
  ;;
created)
  bundle=$1 id=$2
  $rt delete --force "$id" >/dev/null 2>&1
  $rt create --bundle "$bundle" "$id" >/dev/null
  ;;
stopped)
  bundle=$1 id=$2
  $rt delete --force "$id" >/dev/null 2>&1
  $rt create --bundle "$bundle" "$id" >/dev/null && $rt start "$id" >/dev/null && wait_stopped "$id"
  ;;
running)
  bundle=$1 id=$2
  $rt delete --force "$id" >/dev/null 2>&1
  $rt run -d --bundle "$bundle" "$id" >/dev/null 2>&1 </dev/null
  ;;
dumped)
  bundle=$1 id=$2 img=$3
  $rt delete --force "$id" >/dev/null 2>&1
  rm -rf "$img"
  $rt run -d --bundle "$bundle" "$id" >/dev/null 2>&1 </dev/null &&
    $rt checkpoint --image-path "$img" "$id" >/dev/null 2>&1
  ;;
*)
  echo "helpers.sh: unknown operation $op" >&2
  exit 2
  ;;
esac
