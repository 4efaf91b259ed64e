#!/usr/bin/python3
"""The bench's cgroup v2 part: bench.py's comparisons inside the throw-away
VM of scripts/cgroup2-vm (pure cgroup v2: husk takes its CLONE_INTO_CGROUP
path), with the same bundle, cgroupsPaths and hyperfine invocations.

measure() runs on the host, from bench.py: it boots the VM and returns the
guest's results, or {"skipped": reason}. In the guest, `vm.py --out FILE
--runtime NAME=PATH...` copies the runtimes and helpers.sh to the guest's
tmpfs first: a binary on the VM's 9p share is read again at every exec,
which would dominate.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # bench.py and report.py are imported from the source tree
import bench  # noqa: E402

VM = os.path.join(bench.REPO, "scripts", "cgroup2-vm")
RUNS = 12  # per command; the guest is emulated and slow
CONC_RUNS = 2  # of the 20 concurrent runs
TIMEOUT_S = 1200


def reason(err_text, rc):
    """Why the VM gave no results: cgroup2-vm's own error line, else its last line."""
    lines = [l.strip() for l in err_text.splitlines() if l.strip()]
    errors = [l for l in lines if "error:" in l]
    text = (errors or lines or [f"exit status {rc}"])[-1]
    if rc == 125:
        return f"the VM could not run here: {text}"
    if rc == 124:
        return f"the VM timed out after {TIMEOUT_S} s"
    return f"the guest's bench failed (exit status {rc}): {text}"


def measure(binaries, runs):
    """binaries: {name: host path}. Boots the VM and runs guest() there."""
    out = tempfile.mkdtemp(prefix="husk-bench-vm.", dir="/tmp")
    try:
        result = os.path.join(out, "vm.json")
        argv = [VM, "-t", str(TIMEOUT_S), "-w", out, bench.REPO,
                "python3", os.path.abspath(__file__), "--out", result, "--runs", str(runs)]
        # Through the shared out dir, wherever the binaries are on the host.
        for name, path in binaries.items():
            shutil.copy2(path, os.path.join(out, name))
            argv += ["--runtime", f"{name}={os.path.join(out, name)}"]
        bench.log(f"vm: booting the cgroup v2 VM ({runs} runs per command)")
        started = time.monotonic()
        # The guest's own log comes on the VM's stdout; cgroup2-vm's errors
        # are kept for the reason of a SKIP, and shown too.
        with tempfile.TemporaryFile(mode="w+") as err:
            p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=sys.stderr, stderr=err)
            try:
                rc = p.wait()
            except BaseException:
                p.terminate()  # cgroup2-vm's trap stops qemu
                p.wait()
                raise
            err.seek(0)
            err_text = err.read()
        sys.stderr.write(err_text)
        if rc == 0 and os.path.exists(result):
            with open(result) as f:
                res = json.load(f)
            res["vm_wall_s"] = round(time.monotonic() - started)
            return res
        res = {"skipped": reason(err_text, rc)}
        bench.log(f"vm: SKIP: {res['skipped']}")
        return res
    finally:
        shutil.rmtree(out, ignore_errors=True)


# --- in the guest ------------------------------------------------------------

def guest(a):
    work = tempfile.mkdtemp(prefix="husk-bench.", dir="/tmp")  # the guest's /tmp is a tmpfs
    local = os.path.join(work, "bin")
    os.makedirs(local)
    rts = {}
    for spec in a.runtime:
        name, path = spec.split("=", 1)
        shutil.copy2(path, os.path.join(local, name))
        rts[name] = bench.Runtime(name, os.path.join(local, name), work)
    bench.HELPERS = shutil.copy2(bench.HELPERS, local)
    R = {"machine": bench.machine()}
    started = time.monotonic()
    try:
        bundles = bench.Bundles(work)
        rts, R["failed"] = bench.smoke(rts, bundles)
        R["runtimes"] = list(rts)
        if rts:
            R["run"] = bench.test_run(work, rts, bundles, a.runs, floor=False)
            R.update(bench.test_lifecycle(work, rts, bundles, a.runs))
            R["exec"] = bench.test_exec(work, rts, bundles, a.runs)
            R["counts"] = bench.test_counts(rts, bundles, work)
            R["conc20"] = bench.test_concurrent(work, rts, bundles, 20, CONC_RUNS)
    except Exception as e:  # the tests done so far are still reported, with this
        R["error"] = f"{type(e).__name__}: {e}"
        bench.log(f"vm: the guest's bench stopped: {R['error']}")
    finally:
        bench.cleanup(rts)
    R["duration_s"] = round(time.monotonic() - started)
    with open(a.out, "w") as f:
        json.dump(R, f)


def main():
    ap = argparse.ArgumentParser(description="the guest's part; measure() starts it in the VM")
    ap.add_argument("--out", required=True)
    ap.add_argument("--runs", type=int, default=RUNS)
    ap.add_argument("--runtime", action="append", default=[], help="NAME=PATH, repeatable")
    guest(ap.parse_args())


if __name__ == "__main__":
    main()
