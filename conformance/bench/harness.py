#!/usr/bin/python3
"""An agent harness's view of `husk sandbox` (issue 28): many short commands,
each in a sandbox with the walls a harness configures once (a writable
project, the network through an allowlist). Per command, as hyperfine medians:
a fresh `husk sandbox`, bubblewrap given the same walls (bwrap_equiv, from
--print-config), srt when installed, and one husk session (--session NAME
--start, then `--session NAME -- CMD` per command). Targets: fresh <= 1.0 x
bwrap, session <= 0.3 x bwrap. A benchmark: missed targets are said, never
an error. Run as root by `scripts/bench --harness`; the commands run as
nobody in a small git repository."""
import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True
import bench  # noqa: E402  (hyperfine, log)
import bwrap_equiv  # noqa: E402

NOBODY = 65534
# What a harness's settings say, as flags: the project writable (the working
# directory is), credentials hidden (the default), one allowed host.
FLAGS = ["--allow-host", "github.com"]
COMMANDS = {"true": "/bin/true", "git status": "/usr/bin/git status --short"}
SESSION = f"harness-bench-{os.getpid()}"


def make_repo(work):
    repo = os.path.join(work, "repo")
    os.makedirs(repo)
    for i in range(20):
        with open(os.path.join(repo, f"f{i}.txt"), "w") as f:
            f.write(f"file {i}\n")
    env = dict(os.environ, GIT_AUTHOR_NAME="b", GIT_AUTHOR_EMAIL="b@b", GIT_COMMITTER_NAME="b",
               GIT_COMMITTER_EMAIL="b@b")
    for cmd in (["git", "init", "-q", "."], ["git", "add", "."], ["git", "commit", "-qm", "one"]):
        subprocess.run(cmd, cwd=repo, check=True, env=env, capture_output=True)
    subprocess.run(["chown", "-R", f"{NOBODY}:{NOBODY}", repo], check=True)
    return repo


def hyperfine(work, test, entries, runs, user, bpf, rounds=4):
    """bench.hyperfine's rounds (the order rotated each), hyperfine itself
    run as the user (no setpriv in front of any command); each command under
    the same `sh -c` that opens bwrap's seccomp filter on fd 9 (bwrap reads
    it from where the last one left: a shared fd would be empty the second
    time). {label: stats in ms}."""
    per_round = -(-runs // rounds)
    acc = {label: [] for label, _ in entries}
    cpu = {label: [] for label, _ in entries}
    entries = [(label, f"sh -c {shlex.quote(f'exec 9<{bpf or os.devnull}; exec {cmd}')}") for label, cmd in entries]
    for rnd in range(rounds):
        order = entries[rnd % len(entries):] + entries[:rnd % len(entries)]
        out = os.path.join(work, f"hf-{test}-{rnd}.json")
        argv = user + ["hyperfine", "-N", "--style", "basic", "--runs", str(per_round), "--warmup", "5",
                       "--export-json", out]
        for label, _ in order:
            argv += ["--command-name", label]
        argv += [cmd for _, cmd in order]
        bench.log(f"{test}: hyperfine ({len(entries)} commands, {per_round} runs, round {rnd + 1} of {rounds})")
        if subprocess.run(argv, stdout=sys.stderr).returncode != 0:
            bench.log(f"{test}: hyperfine failed; this test has no numbers")
            return {}
        with open(out) as f:
            for r in json.load(f)["results"]:
                acc[r["command"]] += [t * 1000 for t in r["times"]]
                cpu[r["command"]] += [(r["user"] + r["system"]) * 1000] * len(r["times"])
    return {label: {"median_ms": statistics.median(t), "min_ms": min(t), "runs": len(t),
                    "cpu_ms": statistics.mean(cpu[label])} for label, t in acc.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--husk", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--runs", type=int, default=200)
    a = ap.parse_args()
    bwrap = shutil.which("bwrap")
    srt = shutil.which("srt")
    work = tempfile.mkdtemp(prefix="husk-harness.", dir="/tmp")
    os.chmod(work, 0o755)
    repo = make_repo(work)
    # A home apart from the project: the project's ~/.gitconfig would be a protected name.
    home = os.path.join(work, "home")
    os.makedirs(home)
    os.chown(home, NOBODY, NOBODY)
    # /tmp is where hyperfine writes its results: the work directory, nobody's for that.
    os.chown(work, NOBODY, NOBODY)
    user = ["setpriv", "--reuid", str(NOBODY), "--regid", str(NOBODY), "--clear-groups", "env", "-i", "-C", repo,
            "PATH=/usr/bin:/bin", f"HOME={home}"]
    husk = f"{a.husk} sandbox {' '.join(shlex.quote(f) for f in FLAGS)}"
    R = {"machine": bench.machine(), "runs": a.runs, "flags": FLAGS, "loadavg_start": bench.loadavg(),
         "srt": srt or "srt not installed"}
    started = False
    try:
        config = bwrap_equiv.load_config(user + husk.split() + ["--print-config", "--", "/bin/true"])
        config_path = os.path.join(work, "config.json")
        with open(config_path, "w") as f:
            json.dump(config, f)
        bpf, why = bwrap_equiv.seccomp_bpf(config_path, os.path.join(work, "seccomp.bpf"))
        if bpf:
            os.chmod(bpf, 0o644)
        same = " ".join(shlex.quote(x) for x in bwrap_equiv.bwrap_args(config, 9 if bpf else None))
        R["bwrap lacks"] = bwrap_equiv.missing() + ("" if bpf else f", seccomp ({why})") + ", the proxy"
        subprocess.run(user + husk.split() + ["--session", SESSION, "--start"], check=True)
        started = True
        for name, cmd in COMMANDS.items():
            entries = [("husk sandbox", f"{husk} -- {cmd}"),
                       ("husk session", f"{a.husk} sandbox --session {SESSION} -- {cmd}"),
                       ("no sandbox", cmd)]
            if bwrap:
                entries.insert(1, ("bwrap", f"{bwrap} {same} {cmd}"))
            if srt:
                entries.append(("srt", f"{srt} {cmd}"))
            R[name] = hyperfine(work, "harness-" + name.replace(" ", "-"), entries, a.runs, user, bpf)
    finally:
        if started:
            subprocess.run(user + [a.husk, "sandbox", "--session", SESSION, "--stop"])
        shutil.rmtree(work, ignore_errors=True)
    R["loadavg_end"] = bench.loadavg()
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "harness.json"), "w") as f:
        json.dump(R, f, indent=1)
    print(report(R))


def report(R):
    lines = [f"harness benchmark: {R['runs']} runs per command as nobody, flags {' '.join(R['flags'])}; "
             f"load {R['loadavg_start']} -> {R['loadavg_end']}; srt: {R['srt']}"]
    targets = {"husk sandbox": 1.0, "husk session": 0.3}
    for name in COMMANDS:
        res = R.get(name) or {}
        base = res.get("bwrap", {}).get("median_ms")
        lines.append(f"  {name}:")
        for label, st in res.items():
            ratio = f"{st['median_ms'] / base:.2f} x bwrap" if base else ""
            want = targets.get(label)
            verdict = "" if not (want and base) else (" (target <= %.1f: %s)" % (
                want, "met" if st["median_ms"] <= want * base else "MISSED"))
            lines.append(f"    {label:<14} median {st['median_ms']:7.2f} ms  min {st['min_ms']:6.2f}  "
                         f"cpu {st['cpu_ms']:5.2f} ms  {ratio}{verdict}")
        if base and "no sandbox" in res and "husk session" in res:
            floor = res["no sandbox"]["median_ms"]
            lines.append(f"    over the command's own {floor:.2f} ms: session "
                         f"{res['husk session']['median_ms'] - floor:.2f} ms, bwrap {base - floor:.2f} ms, fresh husk "
                         f"{res['husk sandbox']['median_ms'] - floor:.2f} ms")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
