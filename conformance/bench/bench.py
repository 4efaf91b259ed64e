#!/usr/bin/python3
"""husk vs crun vs runc, side by side, in one harness.

Run through scripts/bench, which starts this inside a private mount namespace
(unshare -m --propagation private). Here /sys/fs/cgroup/unified is unmounted
in that namespace only, because crun 1.8.1 refuses hybrid cgroup hosts; the
three runtimes then all see the same cgroup v1 hierarchy.

Every container gets an absolute cgroupsPath /husk-bench/<runtime>-<slot>, and
its own --root per runtime. All bundles share one rootfs and one config.json;
per container only cgroupsPath differs (plus args for the exec target and the
dropped network namespace in the scale test, both the same for all runtimes).
"""
import argparse
import json
import os
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # report.py is imported from the source tree
REPO = os.path.dirname(os.path.dirname(HERE))
HELPERS = os.path.join(HERE, "helpers.sh")
CGROUP_PARENT = "husk-bench"
UNIFIED = "/sys/fs/cgroup/unified"


def log(msg):
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def run(cmd, check=True, **kw):
    return subprocess.run(cmd, check=check, text=True, capture_output=True, **kw)


def output(cmd):
    try:
        return run(cmd).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


class Runtime:
    def __init__(self, name, binary, work):
        self.name = name
        self.binary = binary
        self.root = os.path.join(work, "state", name)
        os.makedirs(self.root, exist_ok=True)
        self.argv = [binary, "--root", self.root]
        self.cmd = " ".join(self.argv)  # no spaces in any of these paths

    def __call__(self, *args, check=True):
        return run(self.argv + list(args), check=check)

    def detached(self, *args):
        """For commands that may leave a process behind with our stdio (the
        init of `create`; a failed `exec`): no pipes, whose reading would wait
        for that process. Returns (exit status, stderr)."""
        with tempfile.TemporaryFile(mode="w+") as err:
            rc = subprocess.run(self.argv + list(args), stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=err).returncode
            err.seek(0)
            return rc, err.read().strip()


# --- the private mount namespace -------------------------------------------

def mount_fields(path):
    """The optional fields (shared:N, master:N, ...) of the mount at path."""
    with open("/proc/self/mountinfo") as f:
        for line in f:
            parts = line.split()
            if parts[4] == path:
                return parts[6:parts.index("-")]
    return None


def hide_unified(parent_ns):
    """Unmount cgroup2 at /sys/fs/cgroup/unified, but only in a private mount
    namespace: the same mount in the host namespace must stay."""
    own = os.readlink("/proc/self/ns/mnt")
    if not parent_ns or own == parent_ns:
        sys.exit("bench: not in a new mount namespace (run through scripts/bench); refusing to unmount")
    fields = mount_fields(UNIFIED)
    if fields is None:
        return "no cgroup2 at /sys/fs/cgroup/unified: nothing to hide"
    if any(f.startswith("shared:") for f in fields):
        sys.exit(f"bench: {UNIFIED} is a shared mount here; an unmount would propagate to the host")
    run(["umount", UNIFIED])
    return ("each runtime ran in a private mount namespace (unshare -m --propagation private) "
            "in which /sys/fs/cgroup/unified was unmounted, so all three saw a pure cgroup v1 "
            "hierarchy (crun 1.8.1 refuses hybrid hosts); the host's mounts were not touched. "
            "In the same namespace the state directories (`--root`) are on a tmpfs, as /run is "
            "on a usual host")


# --- bundles ------------------------------------------------------------------

class Bundles:
    def __init__(self, work):
        self.work = work
        base = os.path.join(work, "base")
        subprocess.run([os.path.join(REPO, "scripts", "make-bundle"), base, "runc"],
                       check=True, stdout=subprocess.DEVNULL)
        self.rootfs = os.path.join(base, "rootfs")
        with open(os.path.join(base, "config.json")) as f:
            cfg = json.load(f)
        cfg["process"]["terminal"] = False
        cfg["process"]["args"] = ["/bin/true"]
        cfg["root"]["path"] = self.rootfs  # shared, read-only in the default spec
        self.base = cfg

    def make(self, runtime, slot, args=None, no_network=False, seccomp=None):
        cfg = json.loads(json.dumps(self.base))
        cfg["linux"]["cgroupsPath"] = f"/{CGROUP_PARENT}/{runtime}-{slot}"
        if args:
            cfg["process"]["args"] = args
        if seccomp:
            cfg["linux"]["seccomp"] = seccomp
        if no_network:
            cfg["linux"]["namespaces"] = [n for n in cfg["linux"]["namespaces"] if n["type"] != "network"]
        path = os.path.join(self.work, "bundles", runtime, str(slot))
        os.makedirs(path, exist_ok=True)
        with open(os.path.join(path, "config.json"), "w") as f:
            json.dump(cfg, f)
        return path


# --- hyperfine ------------------------------------------------------------------

def hyperfine(work, test, entries, runs, warmup=0, ignore_failure=False, rounds=1):
    """entries: [(label, command, prepare-or-None)]. Returns {label: stats in ms}.
    -N: every command is a program (helpers.sh included), so no shell start-up
    time has to be estimated and subtracted. With rounds > 1 the runs are split
    over that many hyperfine invocations, the command order rotated each time,
    so that a burst of load on the machine does not land on one runtime only."""
    per_round = -(-runs // rounds)
    acc = {label: {"times": [], "cpu": []} for label, _, _ in entries}
    for rnd in range(rounds):
        order = entries[rnd % len(entries):] + entries[:rnd % len(entries)]
        out = os.path.join(work, f"hf-{test}-{rnd}.json")
        argv = ["hyperfine", "-N", "--style", "basic", "--runs", str(per_round), "--warmup", str(warmup),
                "--export-json", out]
        if ignore_failure:
            argv.append("--ignore-failure")
        for label, _, prepare in order:
            argv += ["--command-name", label]
            if prepare:
                argv += ["--prepare", prepare]
        argv += [cmd for _, cmd, _ in order]
        log(f"{test}: hyperfine ({len(entries)} commands, {per_round} runs, round {rnd + 1} of {rounds})")
        if subprocess.run(argv, stdout=sys.stderr).returncode != 0:
            log(f"{test}: hyperfine failed; this test has no numbers")
            return {}
        with open(out) as f:
            for r in json.load(f)["results"]:
                acc[r["command"]]["times"] += [t * 1000 for t in r["times"]]
                # user and system are means over the runs, of the command and the children it waited for
                acc[r["command"]]["cpu"] += [(r["user"] + r["system"]) * 1000] * len(r["times"])
    res = {}
    for label, a in acc.items():
        times = a["times"]
        res[label] = {
            "median_ms": statistics.median(times), "mean_ms": statistics.mean(times),
            "stddev_ms": statistics.stdev(times) if len(times) > 1 else 0.0,
            "min_ms": min(times), "max_ms": max(times), "runs": len(times),
            "cpu_ms": statistics.mean(a["cpu"]), "times_ms": times,
        }
    return res


# --- the tests ------------------------------------------------------------------

def smoke(rts, bundles):
    """Keep only the runtimes that can run the bundle at all; the others are
    returned with their error."""
    ok, failed = {}, {}
    for name, rt in rts.items():
        r = rt("run", "--bundle", bundles.make(name, 0), "smoke", check=False)
        if r.returncode == 0:
            ok[name] = rt
        else:
            failed[name] = r.stderr.strip() or f"exit status {r.returncode}"
            log(f"{name}: `run` fails, left out: {failed[name]}")
            rt("delete", "--force", "smoke", check=False)
    return ok, failed


def floor_entries(rootfs):
    ns = "unshare --mount --uts --ipc --net --pid --fork --propagation private"
    pivot = ("sh -c 'mount --bind \"$0\" \"$0\" && cd \"$0\" && pivot_root . . "
             "&& umount -l . && exec /bin/true' " + rootfs)
    return [("floor: unshare+pivot_root", f"{ns} {pivot}", None),
            ("floor: unshare+chroot", f"{ns} chroot {rootfs} /bin/true", None)]


PROTECT_LABEL = "husk on a read-only bind (no re-exec)"
BASELINE = "husk-baseline"


def readonly_husk(husk, work):
    """A copy of husk on a read-only bind mount (this namespace only): it
    needs no re-exec from a protected copy, so next to the plain build it
    shows what the binary protection costs each `run`."""
    path = os.path.join(work, "husk-ro")
    shutil.copy2(husk, path)
    run(["mount", "--bind", path, path])
    run(["mount", "-o", "remount,bind,ro", path, path])
    return path


def test_run(work, rts, bundles, runs, husk_ro=None, floor=True):
    entries = [(n, f"{rt.cmd} run --bundle {bundles.make(n, 0)} bench-run", None) for n, rt in rts.items()]
    if husk_ro and "husk" in rts:
        ro = Runtime("husk-ro", husk_ro, work)
        entries.append((PROTECT_LABEL, f"{ro.cmd} run --bundle {bundles.make('husk', 1)} bench-run", None))
    if floor:
        entries += floor_entries(bundles.rootfs)
    return hyperfine(work, "run", entries, runs, warmup=3, rounds=3)


def test_lifecycle(work, rts, bundles, runs):
    res = {}
    for step in ("create", "start", "delete"):
        entries = []
        for n, rt in rts.items():
            b = bundles.make(n, 0)
            if step == "create":
                entries.append((n, f"{rt.cmd} create --bundle {b} bench-cycle",
                                f"{HELPERS} fresh '{rt.cmd}' bench-cycle"))
            elif step == "start":
                entries.append((n, f"{rt.cmd} start bench-cycle",
                                f"{HELPERS} created '{rt.cmd}' {b} bench-cycle"))
            else:
                entries.append((n, f"{rt.cmd} delete bench-cycle",
                                f"{HELPERS} stopped '{rt.cmd}' {b} bench-cycle"))
        res[step] = hyperfine(work, step, entries, runs, warmup=2, rounds=3)
        for rt in rts.values():
            rt("delete", "--force", "bench-cycle", check=False)
    return res


def test_exec(work, rts, bundles, runs):
    for n, rt in rts.items():
        b = bundles.make(n, "exec", args=["/bin/sleep", "3600"])
        subprocess.run(rt.argv + ["run", "-d", "--bundle", b, "bench-exec"], check=True,
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        entries = [(n, f"{rt.cmd} exec bench-exec /bin/true", None) for n, rt in rts.items()]
        # A runtime whose exec fails now and then still gets timed; its
        # failures are counted apart, over as many more tries.
        res = hyperfine(work, "exec", entries, runs, warmup=3, ignore_failure=True, rounds=3)
        for n, rt in rts.items():
            errs = [e for rc, e in (rt.detached("exec", "bench-exec", "/bin/true") for _ in range(runs)) if rc]
            if n in res:
                res[n].update(failed_runs=len(errs), total_runs=runs, first_error=errs[0] if errs else "")
        return res
    finally:
        for rt in rts.values():
            rt("delete", "--force", "bench-exec", check=False)


def test_idle(work, rts, bundles, runs):
    """create and exec, each 0.3 s after the previous one: the first move of a
    process into a cgroup after a pause, as a create or an exec probe from an
    engine mostly is. Moving a process by pid (cgroup.procs) then waits for an
    RCU grace period; a loop of back-to-back commands never sees it."""
    entries = [(n, f"{rt.cmd} create --bundle {bundles.make(n, 0)} bench-idle",
                f"{HELPERS} idle '{rt.cmd}' bench-idle") for n, rt in rts.items()]
    res = {"create-idle": hyperfine(work, "create-idle", entries, runs, warmup=1, rounds=3)}
    for rt in rts.values():
        rt("delete", "--force", "bench-idle", check=False)
    for n, rt in rts.items():
        b = bundles.make(n, "exec", args=["/bin/sleep", "3600"])
        subprocess.run(rt.argv + ["run", "-d", "--bundle", b, "bench-exec"], check=True,
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        entries = [(n, f"{rt.cmd} exec bench-exec /bin/true", f"{HELPERS} idle '{rt.cmd}'") for n, rt in rts.items()]
        res["exec-idle"] = hyperfine(work, "exec-idle", entries, runs, warmup=1, rounds=3)
    finally:
        for rt in rts.values():
            rt("delete", "--force", "bench-exec", check=False)
    return res


PODMAN_SECCOMP = "/usr/share/containers/seccomp.json"


def oci_seccomp(path, caps):
    """The rules of a Docker/podman seccomp profile that apply to an x86-64
    container with `caps`, as runtime-spec linux.seccomp."""
    with open(path) as f:
        prof = json.load(f)
    rules = []
    for e in prof["syscalls"]:
        inc, exc = e.get("includes") or {}, e.get("excludes") or {}
        if inc.get("arches") and "amd64" not in inc["arches"] or "amd64" in exc.get("arches", []):
            continue
        if not set(inc.get("caps", [])) <= caps or set(exc.get("caps", [])) & caps:
            continue
        rule = {"names": e["names"], "action": e["action"]}
        for k in ("args", "errnoRet"):
            if e.get(k):
                rule[k] = e[k]
        rules.append(rule)
    return {"defaultAction": prof["defaultAction"], "defaultErrnoRet": prof.get("defaultErrnoRet", 1),
            "architectures": ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"], "syscalls": rules}


def test_seccomp(work, rts, bundles, runs):
    """`run` with the seccomp profile podman gives every container: what the
    engines pass, unlike `runc spec`'s config, which has none."""
    if not os.path.exists(PODMAN_SECCOMP):
        return {"skipped": f"{PODMAN_SECCOMP} is missing (Debian: golang-github-containers-common)"}
    prof = oci_seccomp(PODMAN_SECCOMP, set(bundles.base["process"]["capabilities"]["bounding"]))
    entries = [(n, f"{rt.cmd} run --bundle {bundles.make(n, 'seccomp', seccomp=prof)} bench-seccomp", None)
               for n, rt in rts.items()]
    return hyperfine(work, "run-seccomp", entries, runs, warmup=2, rounds=3)


def test_sandbox(work, husk, runs):
    """`husk sandbox -- /bin/true` beside bubblewrap given the same walls
    (bwrap_equiv: the mounts, masks, namespaces, environment and seccomp
    filter of `husk sandbox --print-config`), and beside the minimal bwrap of
    earlier runs (read-only host root, writable working directory, private
    /tmp, new namespaces, a session of its own), all as an unprivileged user
    (nobody) from the same directory. Each runs under the same `sh -c`, which
    hands bwrap its compiled filter on fd 9."""
    import bwrap_equiv
    bwrap = shutil.which("bwrap")
    if not bwrap:
        return {"skipped": "bwrap is missing (Debian: bubblewrap)"}
    cwd = os.path.join(work, "sandbox-cwd")
    home = os.path.join(work, "sandbox-home")
    for d in (cwd, home):
        os.makedirs(d, exist_ok=True)
        os.chown(d, 65534, 65534)
    os.chmod(work, 0o755)
    user = f"setpriv --reuid 65534 --regid 65534 --clear-groups env -C {cwd} HOME={home}"
    config = bwrap_equiv.load_config(user.split() + [husk, "sandbox", "--print-config", "--", "/bin/true"])
    config_path = os.path.join(work, "sandbox-config.json")
    with open(config_path, "w") as f:
        json.dump(config, f)
    bpf, why = bwrap_equiv.seccomp_bpf(config_path, os.path.join(work, "sandbox-seccomp.bpf"))
    if not bpf:
        return {"skipped": f"cannot compile the sandbox's seccomp profile for bwrap: {why} (Debian: python3-seccomp)"}
    os.chmod(work, 0o755)
    os.chmod(bpf, 0o644)
    same = " ".join(shlex.quote(a) for a in bwrap_equiv.bwrap_args(config, 9))

    def sh(cmd):
        return f"sh -c {shlex.quote(f'exec 9<{bpf}; exec {user} {cmd}')}"
    # Two walls a flag takes down, to say what they cost: the network
    # namespace (--net host) and the small init in front (--as-pid-1).
    entries = [("husk sandbox", sh(f"{husk} sandbox -- /bin/true"), None),
               ("husk sandbox --net host", sh(f"{husk} sandbox --net host -- /bin/true"), None),
               ("husk sandbox --as-pid-1", sh(f"{husk} sandbox --as-pid-1 -- /bin/true"), None),
               ("bwrap", sh(f"{bwrap} {same} /bin/true"), None),
               ("bwrap (minimal)", sh(f"{bwrap} --unshare-all --ro-bind / / --bind {cwd} {cwd} --dev /dev --proc /proc "
                                      f"--tmpfs /tmp --new-session --die-with-parent /bin/true"), None),
               ("no sandbox", sh("/bin/true"), None)]
    res = hyperfine(work, "sandbox", entries, runs, warmup=3, rounds=3)
    res["bwrap lacks"] = bwrap_equiv.missing()
    return res


def test_sequential(work, rts, bundles, n, runs):
    entries = [(name, f"{HELPERS} seq '{rt.cmd}' {bundles.make(name, 0)} {n}", None)
               for name, rt in rts.items()]
    return hyperfine(work, f"seq{n}", entries, runs, rounds=runs)


def test_concurrent(work, rts, bundles, n, runs):
    entries, logs = [], {}
    for name, rt in rts.items():
        for i in range(n):
            bundles.make(name, i)
        logs[name] = os.path.join(work, f"conc{n}-{name}.fails")
        open(logs[name], "w").close()
        entries.append((name, f"{HELPERS} conc '{rt.cmd}' {work}/bundles/{name} {n} {logs[name]}", None))
    # A failed run is counted below and must not stop the others.
    res = hyperfine(work, f"conc{n}", entries, runs, ignore_failure=True, rounds=min(3, runs))
    for name in rts:
        with open(logs[name]) as f:
            counts = [int(x) for x in f.read().split()]
        err = ""
        if os.path.exists(logs[name] + ".stderr"):
            with open(logs[name] + ".stderr") as f:
                err = f.read().strip().splitlines()
            err = err[0] if err else ""
        if name in res:
            res[name]["failed_runs"] = sum(counts)
            res[name]["total_runs"] = n * len(counts)
            res[name]["first_error"] = err
    return res


def test_rss(rts, bundles, runs):
    res = {}
    for n, rt in rts.items():
        b = bundles.make(n, 0)
        kb = []
        for _ in range(runs):
            r = run(["/usr/bin/time", "-v"] + rt.argv + ["run", "--bundle", b, "bench-rss"])
            for line in r.stderr.splitlines():
                if "Maximum resident set size" in line:
                    kb.append(int(line.split(":")[1]))
        res[n] = {"median_kb": statistics.median(kb), "min_kb": min(kb), "max_kb": max(kb), "samples_kb": kb}
    return res


def binary_info(rts, work):
    res = {}
    for n, rt in rts.items():
        path = os.path.realpath(rt.binary)
        stripped = os.path.join(work, f"stripped-{n}")
        shutil.copy(path, stripped)
        run(["strip", stripped], check=False)
        libs = output(["ldd", path])
        res[n] = {"path": path, "bytes": os.path.getsize(path), "stripped_bytes": os.path.getsize(stripped),
                  "dynamic": "not a dynamic executable" not in libs,
                  "shared_libs": [l.split()[0] for l in libs.splitlines() if "=>" in l]}
    return res


def parse_strace_c(text):
    rows, total = [], None
    for line in text.splitlines():
        p = line.split()
        if not p or p[0].startswith(("%", "-")):
            continue
        if p[-1] == "total":
            total = {"seconds": float(p[1]), "calls": int(p[3]), "errors": int(p[4]) if len(p) == 6 else 0}
            continue
        if len(p) >= 5:
            try:
                rows.append({"syscall": p[-1], "pct": float(p[0]), "seconds": float(p[1]),
                             "calls": int(p[3]), "errors": int(p[4]) if len(p) == 6 else 0})
            except ValueError:
                pass
    return total, rows


def test_strace(rts, bundles, work):
    res = {}
    for n, rt in rts.items():
        b = bundles.make(n, 0)
        entry = {}
        # -c: time in the kernel per syscall; -w: wall time per syscall (includes blocking).
        for mode, flags in (("system", ["-f", "-c"]), ("wall", ["-f", "-c", "-w"])):
            out = os.path.join(work, f"strace-{n}-{mode}.txt")
            run(["strace", *flags, "-S", "time", "-o", out] + rt.argv + ["run", "--bundle", b, "bench-strace"])
            with open(out) as f:
                text = f.read()
            total, rows = parse_strace_c(text)
            entry[mode] = {"total": total, "top": rows[:12], "text": text}
        res[n] = entry
    return res


def test_scale(work, rts, bundles, count, runs, cycle_runs):
    """Containers created one after the other and left created. `state` of the
    first one is timed alone and with all present; create, start and delete of
    one more container are timed before the others exist and with all of them."""
    res = {}
    for n, rt in rts.items():
        ids = [f"scale-{i}" for i in range(count)]
        paths = [bundles.make(n, f"scale-{i}", no_network=True) for i in range(count)]
        empty = test_lifecycle(work, {n: rt}, bundles, cycle_runs)
        log(f"scale: {n}: creating {count} containers")
        lat, failed, alone = [], 0, {}
        t0 = time.monotonic()
        try:
            for cid, b in zip(ids, paths):
                s = time.perf_counter()
                rc, err = rt.detached("create", "--bundle", b, cid)
                lat.append((time.perf_counter() - s) * 1000)
                if rc != 0:
                    failed += 1
                    if failed == 1:
                        log(f"scale: {n}: create {cid} failed: {err}")
                    if failed >= 10:
                        break
                elif cid == ids[0]:
                    alone = hyperfine(work, f"scale-{n}-alone", [(f"{n} state", f"{rt.cmd} state {cid}", None)],
                                      runs, warmup=1)
            create_s = time.monotonic() - t0
            mem = meminfo_mb()
            hf = hyperfine(work, f"scale-{n}", [
                (f"{n} list", f"{rt.cmd} list", None),
                (f"{n} state", f"{rt.cmd} state {ids[0]}", None)], runs, warmup=1)
            full = test_lifecycle(work, {n: rt}, bundles, cycle_runs)
        finally:
            log(f"scale: {n}: deleting")
            t1 = time.monotonic()
            # Not measured; in parallel because runc's forced delete of a created
            # container mostly waits.
            subprocess.run(["xargs", "-P8", "-n1"] + rt.argv + ["delete", "--force"],
                           input="\n".join(ids), text=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            delete_s = time.monotonic() - t1
        w = max(1, min(50, len(lat) // 10))
        res[n] = {"count": len(lat), "failed": failed, "create_total_s": create_s, "delete_total_s": delete_s,
                  "mem_available_mb_at_full": mem,
                  "create_ms_first": statistics.median(lat[:w]),
                  "create_ms_middle": statistics.median(lat[len(lat) // 2 - w // 2:len(lat) // 2 + w // 2 + 1]),
                  "create_ms_last": statistics.median(lat[-w:]), "window": w,
                  "create_ms_series": lat,
                  "list": hf.get(f"{n} list"), "state": hf.get(f"{n} state"),
                  "state_alone": alone.get(f"{n} state"),
                  "empty": {step: e.get(n) for step, e in empty.items()},
                  "full": {step: e.get(n) for step, e in full.items()}}
    return res


def leftover_cgroups(prefix):
    """Directories <prefix>* under the bench's cgroup parent, in every mounted
    hierarchy (the symlinked aliases such as cpu -> cpu,cpuacct are skipped)."""
    left = []
    for ctrl in sorted(os.listdir("/sys/fs/cgroup")):
        top = os.path.join("/sys/fs/cgroup", ctrl)
        parent = os.path.join(top, CGROUP_PARENT)
        if os.path.ismount(top) and os.path.isdir(parent):
            left += [os.path.join(parent, d) for d in os.listdir(parent) if d.startswith(prefix)]
    return left


def test_cycle(work, rts, bundles, count):
    """count containers at once, each created, started, waited for and
    deleted (no --force); then what is left: state entries and cgroups."""
    res = {}
    for n, rt in rts.items():
        for i in range(count):
            bundles.make(n, f"cycle-{i}", no_network=True)
        faillog = os.path.join(work, f"cycle-{n}.fails")
        open(faillog, "w").close()
        before = set(os.listdir(rt.root))
        log(f"cycle: {n}: {count} concurrent create+start+delete")
        t0 = time.monotonic()
        subprocess.run([HELPERS, "cycle", rt.cmd, os.path.join(work, "bundles", n, "cycle-"), str(count), faillog],
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wall = time.monotonic() - t0
        with open(faillog) as f:
            failed = sum(int(x) for x in f.read().split())
        err = ""
        if os.path.exists(faillog + ".stderr"):
            with open(faillog + ".stderr") as f:
                err = next(iter(f.read().strip().splitlines()), "")
        left_state = sorted(set(os.listdir(rt.root)) - before)
        left_cgroups = leftover_cgroups(f"{n}-cycle-")
        res[n] = {"count": count, "wall_s": wall, "failed": failed, "first_error": err,
                  "left_state": left_state, "left_cgroups": left_cgroups}
        for cid in left_state:
            rt("delete", "--force", cid, check=False)
    return res


def helper(rt, op, *args):
    # No pipes: `created` and `running` leave a process behind with this stdio.
    subprocess.run([HELPERS, op, rt.cmd, *args], stdin=subprocess.DEVNULL,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def wait_status(rt, cid, status, timeout=10):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        r = rt("state", cid, check=False)
        if r.returncode == 0 and json.loads(r.stdout).get("status") == status:
            return
        time.sleep(0.005)


def count_syscalls(rt, prep, args, work):
    """Total calls of `strace -f -c` over the command and everything it forks."""
    helper(rt, *prep)
    out = os.path.join(work, "strace-count.txt")
    p = subprocess.Popen(["strace", "-f", "-c", "-o", out] + rt.argv + args, stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if args[0] == "create":
        # strace follows the container's init too, which waits for `start`:
        # start it from outside once the runtime reports it created.
        wait_status(rt, args[-1], "created")
        rt("start", args[-1], check=False)
    try:
        p.wait(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        return None
    with open(out) as f:
        total, _ = parse_strace_c(f.read())
    return total["calls"] if total else None


def count_faults(rt, prep, args, work, samples=3):
    """Median minor and major page faults (`/usr/bin/time -v`) of the command
    and the children it waited for."""
    out = os.path.join(work, "time-count.txt")
    minor, major = [], []
    for _ in range(samples):
        helper(rt, *prep)
        subprocess.run(["/usr/bin/time", "-v", "-o", out] + rt.argv + args, stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(out) as f:
            for line in f:
                if "Minor (reclaiming a frame) page faults" in line:
                    minor.append(int(line.rsplit(":", 1)[1]))
                elif "Major (requiring I/O) page faults" in line:
                    major.append(int(line.rsplit(":", 1)[1]))
    return {"minor_faults": statistics.median(minor) if minor else None,
            "major_faults": statistics.median(major) if major else None}


COUNTED = ("run", "create", "start", "delete", "exec")


def test_counts(rts, bundles, work):
    """Syscalls and page faults of each command, each prepared as in the timed tests."""
    res = {}
    cid = "bench-count"
    for n, rt in rts.items():
        b = bundles.make(n, 0)
        sleeper = bundles.make(n, "exec", args=["/bin/sleep", "3600"])
        steps = {"run": (("fresh", cid), ["run", "--bundle", b, cid]),
                 "create": (("fresh", cid), ["create", "--bundle", b, cid]),
                 "start": (("created", b, cid), ["start", cid]),
                 "delete": (("stopped", b, cid), ["delete", cid]),
                 "exec": (("running", sleeper, cid), ["exec", cid, "/bin/true"])}
        log(f"counts: {n}: strace -f -c and /usr/bin/time -v of {', '.join(steps)}")
        res[n] = {step: {"syscalls": count_syscalls(rt, prep, args, work), **count_faults(rt, prep, args, work)}
                  for step, (prep, args) in steps.items()}
        rt("delete", "--force", cid, check=False)
    return res


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def meminfo_mb():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) // 1024
    return None


def cleanup(rts):
    for rt in rts.values():
        ids = rt("list", "-q", check=False).stdout.split()
        for cid in ids:
            rt("delete", "--force", cid, check=False)
    # crun 1.8.1 writes its pid into <unified>/<cgroupsPath>/cgroup.procs even
    # with the cgroup2 mount gone, i.e. into plain files on the /sys/fs/cgroup
    # tmpfs; remove that tree, but only while no cgroup fs is mounted there.
    junk = os.path.join(UNIFIED, CGROUP_PARENT)
    if not os.path.ismount(UNIFIED) and os.path.isdir(junk):
        shutil.rmtree(junk, ignore_errors=True)
    # Leftover cgroups: only our own /husk-bench trees, deepest first.
    for ctrl in sorted(os.listdir("/sys/fs/cgroup")):
        top = os.path.join("/sys/fs/cgroup", ctrl, CGROUP_PARENT)
        if not os.path.isdir(top):
            continue
        for dirpath, _, _ in sorted(os.walk(top), key=lambda e: -e[0].count("/")):
            try:
                os.rmdir(dirpath)
            except OSError as e:
                log(f"cleanup: rmdir {dirpath}: {e.strerror}")


# --- machine ------------------------------------------------------------------

def machine():
    cpu = ""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        mem_kb = int(f.readline().split()[1])
    debian = ""
    if os.path.exists("/etc/debian_version"):
        with open("/etc/debian_version") as f:
            debian = f.read().strip()
    return {"cpu": cpu, "nproc": os.cpu_count(), "mem_gib": round(mem_kb / 1024 / 1024, 1),
            "kernel": os.uname().release, "debian": debian,
            "hyperfine": output(["hyperfine", "--version"])}


def versions(rts):
    v = {}
    for n, rt in rts.items():
        first = output([rt.binary, "--version"]).splitlines()
        v[n] = first[0] if first else "?"
    head = output(["git", "-C", REPO, "rev-parse", "--short", "HEAD"])
    dirty = output(["git", "-C", REPO, "status", "--porcelain", "--untracked-files=no", "--",
                    "CMakeLists.txt", "spec", "namespaces", "cgroups", "seccomp", "runtime"])
    if "husk" in v:
        v["husk"] += f" (commit {head}{', uncommitted changes' if dirty else ''})"
    return v


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--husk", required=True)
    ap.add_argument("--crun", default=shutil.which("crun"))
    ap.add_argument("--runc", default=shutil.which("runc"))
    ap.add_argument("--out", required=True)
    ap.add_argument("--parent-mntns", default=os.environ.get("HUSK_BENCH_PARENT_MNTNS", ""))
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--scale", type=int, default=1000)
    ap.add_argument("--quick", action="store_true", help="few runs, 50 containers (scale and concurrent "
                    "lifecycle tests): to try the harness")
    ap.add_argument("--baseline", help="an earlier husk binary, timed beside this one in run, create, "
                    "start, delete and exec: a change's cost, measured in the same run")
    ap.add_argument("--no-vm", action="store_true", help="skip the comparison inside the cgroup v2 VM")
    a = ap.parse_args()
    if a.quick:
        a.runs, a.scale = 5, 50
    small = max(3, a.runs // 3)
    cycle_runs = max(10, a.runs * 2 // 3)

    # Killed from outside: still delete the containers (the finally below).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("bench: terminated"))
    cgroup_note = hide_unified(a.parent_mntns)
    work = tempfile.mkdtemp(prefix="husk-bench.", dir="/tmp")
    # State dirs on a tmpfs, as /run is on a usual host: on a disk file system
    # every state file a runtime creates costs an inode allocation, which here
    # took more time than some of the runtimes' own work. The mount exists in
    # this private namespace only.
    state = os.path.join(work, "state")
    os.makedirs(state)
    run(["mount", "-t", "tmpfs", "-o", "size=512m,mode=0700", "husk-bench-state", state])
    rts = {n: Runtime(n, b, work) for n, b in (("husk", a.husk), ("crun", a.crun), ("runc", a.runc)) if b}
    # The baseline takes part in the latency tests only (see BASELINE).
    if a.baseline:
        rts[BASELINE] = Runtime(BASELINE, a.baseline, work)
    everyone = dict(rts)
    started = time.monotonic()
    R = {"machine": machine(), "versions": versions(rts), "cgroups": cgroup_note,
         "started": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "loadavg_start": loadavg()}
    try:
        try:
            bundles = Bundles(work)
            R["config"] = bundles.base
            rts, R["smoke_errors"] = smoke(rts, bundles)
            R["runtimes"] = list(rts)
            R["binary"] = binary_info(rts, work)
            R["run"] = test_run(work, rts, bundles, a.runs, readonly_husk(a.husk, work))
            R.update(test_lifecycle(work, rts, bundles, cycle_runs))
            R["exec"] = test_exec(work, rts, bundles, a.runs)
            R.update(test_idle(work, rts, bundles, small))
            R["run-seccomp"] = test_seccomp(work, rts, bundles, a.runs)
            R["sandbox"] = test_sandbox(work, a.husk, a.runs)
            rts.pop(BASELINE, None)
            R["rss"] = test_rss(rts, bundles, 10)
            R["strace"] = test_strace(rts, bundles, work)
            R["counts"] = test_counts(rts, bundles, work)
            R["seq100"] = test_sequential(work, rts, bundles, 100, 3)
            R["conc20"] = test_concurrent(work, rts, bundles, 20, small)
            R["conc100"] = test_concurrent(work, rts, bundles, 100, 3)
            R["cycle"] = test_cycle(work, rts, bundles, a.scale)
            R["scale"] = test_scale(work, rts, bundles, a.scale, small, cycle_runs)
        finally:
            cleanup(everyone)
        if a.no_vm:
            R["vm"] = {"skipped": "not run (--no-vm)"}
        else:
            import vm
            R["vm"] = vm.measure({n: b for n, b in (("husk", a.husk), ("crun", a.crun), ("runc", a.runc)) if b},
                                 min(a.runs, vm.RUNS))
        R["loadavg_end"] = loadavg()
        R["duration_s"] = round(time.monotonic() - started)
        os.makedirs(a.out, exist_ok=True)
        import report
        report.write(R, a.out, work)
    finally:
        run(["umount", "-l", state], check=False)
        run(["umount", "-l", os.path.join(work, "husk-ro")], check=False)
        shutil.rmtree(work, ignore_errors=True)
    log(f"done in {R['duration_s']} s; results in {a.out}")

if __name__ == "__main__":
    main()
