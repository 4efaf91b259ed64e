# An operator's policy (husk's config file) enforced under real engines: the
# engine's own output names what broke it; sourced by run-engines (needs
# lib.sh, WORK, HUSK).

# strict_husk: $WORK/strict/husk-strict, husk called by that name with a
# config (HUSK_CONFIG) whose `binaries:` gives that name a restricted policy;
# the engines' private dirs under $WORK are allowed bind sources. podman's
# and containerd's default seccomp profiles let calls through that restricted
# refuses (namespaces, the keyring, syslog, AF_VSOCK: seccomp-syscalls, unit
# tests in tests/unit/policy): this operator takes them as warnings.
strict_husk() {
  local d=$WORK/strict
  [ -x "$d/husk-strict" ] && return 0
  mkdir -p "$d"
  cat >"$d/policy.yaml" <<YAML
level: restricted
rules: {seccomp-syscalls: warn}
allow:
  mountSources: [$WORK]
YAML
  cat >"$d/config.yaml" <<YAML
binaries:
  husk-strict: $d/policy.yaml
YAML
  printf '#!/bin/bash\nHUSK_CONFIG=%q exec -a husk-strict %q "$@"\n' "$d/config.yaml" "$HUSK" >"$d/husk-strict"
  chmod 755 "$d/husk-strict"
}

podman_policy_tests() {
  strict_husk
  local P=("${PRUN[@]}" --runtime "$WORK/strict/husk-strict")
  check "podman: a root container under the operator's restricted policy is refused, the reason shown" nz \
    "breaks the operator's policy $WORK/strict/policy.yaml" "${P[@]}" --rm "$IMAGE" true
  if [[ "$OUT" == *"process.user.uid = 0 (root-user"* ]]; then pass "podman: the refusal names process.user.uid"; else
    fail "podman: the refusal names process.user.uid" "podman run --runtime husk-strict IMG true" \
      "process.user.uid = 0 (root-user...)" "$OUT"; fi
  check "podman: a container within the restricted policy runs (uid 1000, NNP, no capabilities)" 0 "1000" \
    "${P[@]}" --rm --user 1000 --cap-drop all --security-opt no-new-privileges "$IMAGE" id -u
}

containerd_policy_tests() {
  strict_husk
  check "ctr run: under the operator's restricted policy a root container is refused, the reason shown" nz \
    "breaks the operator's policy $WORK/strict/policy.yaml" \
    "${CTR[@]}" run --runc-binary "$WORK/strict/husk-strict" --rm "$IMAGE" husk-policy true
  if [[ "$OUT" == *"process.user.uid = 0 (root-user"* ]]; then pass "ctr run: the refusal names process.user.uid"; else
    fail "ctr run: the refusal names process.user.uid" "ctr run --runc-binary husk-strict IMG ID true" \
      "process.user.uid = 0 (root-user...)" "$OUT"; fi
  "${CTR[@]}" container rm husk-policy >/dev/null 2>&1
}
