"""Turn bench.py's results into README.md, results.json, results.csv, strace.txt
and chart.png (gnuplot) in the results folder.

    python3 conformance/bench/report.py results/bench

redraws README.md, results.csv and chart.png from results.json alone."""
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
NAMES = ("husk", "crun", "runc")


def ms(v):
    if v is None:
        return "–"
    return f"{v:.1f}" if v < 100 else f"{v:.0f}"


def num(v):
    return "–" if v is None else f"{v:.0f}"


def ratio(a, b):
    if a is None or b is None or b == 0:
        return None
    return a / b


def fr(r):
    return "–" if r is None else f"{r:.2f}"


def median(R, test, name):
    t = R.get(test) or {}
    e = t.get(name)
    return e["median_ms"] if e else None


def timing_rows(R):
    rows = [
        ("run", "`run` /bin/true (create+start+wait+delete)"),
        ("create", "`create`"),
        ("start", "`start`"),
        ("delete", "`delete` (stopped container)"),
        ("exec", "`exec` /bin/true into a running container"),
        ("create-idle", "`create`, 0.3 s after the previous one"),
        ("exec-idle", "`exec`, 0.3 s after the previous one"),
        ("run-seccomp", "`run` with podman's default seccomp profile"),
        ("seq100", "100 sequential `run`s"),
        ("conc20", "20 concurrent `run`s (wall time of the batch)"),
        ("conc100", "100 concurrent `run`s (wall time of the batch)"),
    ]
    out = []
    for test, label in rows:
        vals = {n: median(R, test, n) for n in NAMES}
        out.append((test, label, vals))
    return out


def verdict(ok):
    return "–" if ok is None else ("met" if ok else "NOT met")


def at_most(r, limit):
    return None if r is None else r <= limit


def rss_kb(R):
    rss = {n: (R.get("rss") or {}).get(n, {}).get("median_kb") for n in NAMES}
    return {n: None if v is None else round(v) for n, v in rss.items()}


def flat(s, step):
    """husk's `step` median with all scale containers present / with none."""
    full = ((s.get("full") or {}).get(step) or {}).get("median_ms")
    empty = ((s.get("empty") or {}).get(step) or {}).get("median_ms")
    return full, empty


def vm_versus_crun(R, test, limit):
    """The VM's figure for a husk/crun target, for the Targets table."""
    V = R.get("vm") or {}
    if not V or "skipped" in V:
        return "–"
    bad = [n for n in ("husk", "crun") if n in V.get("failed", {})]
    if bad:
        return f"{' and '.join(bad)} failed"
    h, c = median(V, test, "husk"), median(V, test, "crun")
    r = ratio(h, c)
    return "–" if r is None else f"{fr(r)} × ({ms(h)} vs {ms(c)} ms), {verdict(at_most(r, limit))}"


def vm_target(R):
    V = R.get("vm") or {}
    label = "the same comparison in the cgroup v2 VM, as ratios beside the host's"
    if not V or "skipped" in V:
        return (label, f"SKIP: {V['skipped']}" if V else "not in these results", "not measured")
    tests = [t for t, _ in VM_ROWS if V.get(t)]
    return (label, f"{', '.join(tests) or 'nothing'} for {', '.join(V['runtimes']) or 'no runtime'}"
            f"{'; failed: ' + ', '.join(V['failed']) if V.get('failed') else ''}"
            f"{'; stopped early' if V.get('error') else ''} (see [cgroup v2 VM](#cgroup-v2-vm))", "reported")


def targets(R):
    """Issue 10's targets: (target, measured, met / NOT met / – not measured,
    the cgroup v2 VM's figure where the target is a ratio to crun)."""
    t = []

    def versus_crun(test, limit, label):
        h, c = median(R, test, "husk"), median(R, test, "crun")
        r = ratio(h, c)
        t.append((f"{label} ≤ {limit} × crun", f"{fr(r)} × ({ms(h)} vs {ms(c)} ms)", verdict(at_most(r, limit)),
                  vm_versus_crun(R, test, limit)))

    versus_crun("run", 0.5, "`run` /bin/true")
    versus_crun("exec", 0.4, "`exec` /bin/true")
    versus_crun("create", 0.5, "`create`")
    versus_crun("delete", 0.4, "`delete`")
    t.append(vm_target(R))
    sb = R.get("sandbox") or {}
    h, b = (sb.get(k, {}).get("median_ms") if isinstance(sb.get(k), dict) else None for k in ("husk sandbox", "bwrap"))
    r = ratio(h, b)
    t.append(("`husk sandbox -- /bin/true` ≤ 1.0 × bubblewrap given the same walls",
              f"{fr(r)} × ({ms(h)} vs {ms(b)} ms; bwrap lacks {sb.get('bwrap lacks', '?')})" if r is not None
              else sb.get("skipped", "–"),
              verdict(at_most(r, 1.0)), ""))
    costs = [f"{what} {h - m:+.2f} ms" for what, k in (("network namespace", "husk sandbox --net host"),
                                                        ("init in front", "husk sandbox --as-pid-1"))
             if h is not None and (m := (sb.get(k) or {}).get("median_ms")) is not None]
    if costs:
        t.append(("what two of the sandbox's walls cost (medians, the wall on minus off)", "; ".join(costs), verdict(None), ""))

    c100 = (R.get("conc100") or {}).get("husk") or {}
    r = ratio(median(R, "conc100", "husk"), median(R, "conc100", "crun"))
    f = c100.get("failed_runs")
    ok = None if r is None or f is None else (r <= 0.6 and f == 0)
    t.append(("100 concurrent `run`s ≤ 0.6 × crun's wall time, 0 failures",
              "–" if r is None else f"{fr(r)} ×, {f} failed of {c100.get('total_runs')}", verdict(ok)))

    cy = (R.get("cycle") or {}).get("husk")
    label = f"{cy['count'] if cy else 'N'} concurrent create+start+delete, 0 failures, nothing left behind"
    if cy:
        ls, lc = len(cy["left_state"]), len(cy["left_cgroups"])
        t.append((label, f"{cy['failed']} failed; {ls} state entries and {lc} cgroup dirs left; "
                  f"{cy['wall_s']:.1f} s", verdict(cy["failed"] == 0 and ls == 0 and lc == 0)))
    else:
        t.append((label, "–", verdict(None)))

    rss = rss_kb(R)
    r = ratio(rss["husk"], rss["crun"])
    t.append(("peak RSS of one `run` ≤ 0.75 × crun's",
              f"{fr(r)} × ({rss['husk']} vs {rss['crun']} KiB)" if r is not None else "–",
              verdict(at_most(r, 0.75))))

    s = (R.get("scale") or {}).get("husk") or {}
    count = s.get("count", "N")
    for step in ("create", "start", "delete"):
        full, empty = flat(s, step)
        r = ratio(full, empty)
        t.append((f"`{step}` with {count} containers existing within 10 % of with none",
                  f"{fr(r)} × ({ms(full)} vs {ms(empty)} ms)" if r is not None else "–",
                  verdict(at_most(r, 1.10))))
    lst = (s.get("list") or {}).get("median_ms")
    t.append((f"`list` of {count} containers ≤ 50 ms", f"{ms(lst)} ms" if lst is not None else "–",
              verdict(at_most(lst, 50))))
    full, alone = (s.get("state") or {}).get("median_ms"), (s.get("state_alone") or {}).get("median_ms")
    r = ratio(full, alone)
    t.append((f"`state` independent of the count: with {count} within 10 % of with none",
              f"{fr(r)} × ({ms(full)} vs {ms(alone)} ms)" if r is not None else "–",
              verdict(at_most(r, 1.10))))
    return t


def write_csv(R, path):
    with open(path, "w") as f:
        f.write("test,runtime,median_ms,mean_ms,stddev_ms,min_ms,max_ms,runs\n")
        V = R.get("vm") or {}
        for prefix, src in (("", R), ("vm-", V)):
            for test in ("run", "create", "start", "delete", "exec", "create-idle", "exec-idle", "run-seccomp",
                         "seq100", "conc20", "conc100"):
                for name, e in (src.get(test) or {}).items():
                    if not isinstance(e, dict):
                        continue  # {"skipped": reason}
                    f.write(f"{prefix}{test},{name},{e['median_ms']:.3f},{e['mean_ms']:.3f},"
                            f"{e.get('stddev_ms', 0):.3f},{e['min_ms']:.3f},{e['max_ms']:.3f},{e['runs']}\n")
        for name, s in (R.get("scale") or {}).items():
            for op in ("list", "state"):
                e = s.get(op)
                if e:
                    f.write(f"scale-{op}-{s['count']},{name},{e['median_ms']:.3f},{e['mean_ms']:.3f},"
                            f"{e['stddev_ms']:.3f},{e['min_ms']:.3f},{e['max_ms']:.3f},{e['runs']}\n")
        f.write("\nmetric,runtime,value\n")
        for name, e in (R.get("rss") or {}).items():
            f.write(f"peak_rss_kb,{name},{e['median_kb']}\n")
        for name, e in (R.get("binary") or {}).items():
            f.write(f"binary_bytes,{name},{e['bytes']}\nbinary_stripped_bytes,{name},{e['stripped_bytes']}\n")
        for prefix, src in (("", R), ("vm_", V)):
            for name, e in (src.get("counts") or {}).items():
                for cmd, c in e.items():
                    for key in ("syscalls", "minor_faults", "major_faults"):
                        f.write(f"{prefix}{key}_{cmd},{name},{c[key]}\n")


def chart(R, out, work):
    bars = os.path.join(work, "bars.dat")
    tests = [t for t in ("run", "create", "start", "delete", "exec", "create-idle", "exec-idle", "run-seccomp")
             if R.get(t) and "skipped" not in R[t]]
    names = [n for n in NAMES if n in R.get("runtimes", [])]
    with open(bars, "w") as f:
        f.write("test " + " ".join(names) + "\n")
        for t in tests:
            f.write(t + " " + " ".join(ms(median(R, t, n)) if median(R, t, n) is not None else "NaN"
                                      for n in names) + "\n")
    scale = os.path.join(work, "scale.dat")
    bin_size = 25
    with open(scale, "w") as f:
        for n in names:
            s = (R.get("scale") or {}).get(n)
            if not s:
                f.write("\n\n")
                continue
            lat = s["create_ms_series"]
            for i in range(0, len(lat), bin_size):
                f.write(f"{i + bin_size / 2:.0f} {statistics.median(lat[i:i + bin_size]):.3f}\n")
            f.write("\n\n")
    floor = ((R.get("run") or {}).get("floor: unshare+pivot_root") or {}).get("median_ms")
    cmd = [
        "gnuplot", "-e",
        f"bars='{bars}'; scale='{scale}'; out='{os.path.join(out, 'chart.png')}'; "
        f"ncols={len(names)}; names='{' '.join(names)}'; floor={floor if floor else 'NaN'}",
        os.path.join(HERE, "chart.gp"),
    ]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        print(f"[bench] gnuplot failed: {r.stderr}")


def write(R, out, work):
    slim = json.loads(json.dumps(R))
    for e in (slim.get("strace") or {}).values():
        for mode in e.values():
            mode.pop("text", None)
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(slim, f, indent=1)
    write_csv(R, os.path.join(out, "results.csv"))
    with open(os.path.join(out, "strace.txt"), "w") as f:
        for name, e in (R.get("strace") or {}).items():
            for mode in ("system", "wall"):
                f.write(f"==== {name} run, strace -f -c{' -w' if mode == 'wall' else ''}\n{e[mode]['text']}\n")
    chart(R, out, work)
    with open(os.path.join(out, "README.md"), "w") as f:
        f.write(markdown(R))


COUNTS_INTRO = ("One `strace -f -c` per command (total calls of the runtime and every process it forks), and "
                "the median of three `/usr/bin/time -v` (page faults of the runtime and the children it waited "
                "for), each prepared as in the timed test. `create`'s syscalls include its init up to and "
                "through the exec of `/bin/true`: strace follows the init, and the `start` that releases it "
                "comes from outside.")


def counts_table(R, w, title="## Syscalls and page faults per command", intro=COUNTS_INTRO):
    co = R.get("counts") or {}
    if not co:
        return
    w(f"{title}\n")
    w(f"{intro}\n")
    w("| command | runtime | median ms | syscalls | minor faults | major faults |")
    w("|---|---|---:|---:|---:|---:|")
    for cmd in ("run", "create", "start", "delete", "exec"):
        for n in NAMES:
            c = (co.get(n) or {}).get(cmd)
            if c:
                w(f"| `{cmd}` | {n} | {ms(median(R, cmd, n))} | {num(c['syscalls'])} | "
                  f"{num(c['minor_faults'])} | {num(c['major_faults'])} |")
    w("")


def cycle_table(R, w):
    cy = R.get("cycle") or {}
    if not cy:
        return
    count = next(iter(cy.values()))["count"]
    w(f"### {count} concurrent create+start+delete\n")
    w("Each container created, started, waited for until stopped and deleted without `--force`, all "
      "at once; then the runtime's state directory and the bench's cgroup parent in every hierarchy are "
      "searched for what the containers left.\n")
    w("| | husk | crun | runc |")
    w("|---|---:|---:|---:|")
    rows = (("wall time, s", lambda e: f"{e['wall_s']:.1f}"),
            ("failed", lambda e: f"{e['failed']} of {e['count']}"),
            ("state entries left", lambda e: str(len(e["left_state"]))),
            ("cgroup dirs left", lambda e: str(len(e["left_cgroups"]))))
    for label, f in rows:
        w(f"| {label} | " + " | ".join(f(cy[n]) if n in cy else "–" for n in NAMES) + " |")
    w("")
    for n in NAMES:
        e = cy.get(n)
        if e and e["first_error"]:
            w(f"First error from {n}: `{e['first_error']}`\n")


VM_ROWS = (("run", "`run` /bin/true"), ("create", "`create`"), ("start", "`start`"),
           ("delete", "`delete` (stopped container)"), ("exec", "`exec` /bin/true"),
           ("conc20", "20 concurrent `run`s (wall time of the batch)"))


def vm_section(R, w):
    V = R.get("vm")
    w("## cgroup v2 VM\n")
    if not V or "skipped" in V:
        w(f"SKIP: {V['skipped'] if V else 'these results predate the VM part of the bench'}.\n")
        return
    m, failed = V["machine"], V.get("failed") or {}
    if V.get("error"):
        w(f"**The guest's bench stopped early** (what follows is what it measured before): `{V['error']}`\n")
    runs = {t: next((e["runs"] for e in (V.get(t) or {}).values()), "?") for t in ("run", "conc20")}
    w(f"The same runtimes, bundle, cgroupsPaths and hyperfine invocations as above, inside the "
      f"throw-away VM of `scripts/cgroup2-vm`: Linux {m['kernel']}, {m['nproc']} vCPUs ({m['cpu']}), "
      f"{m['mem_gib']} GiB, a pure cgroup v2 hierarchy with every controller enabled at the root, so husk "
      f"takes its `CLONE_INTO_CGROUP` path. The binaries run from the guest's tmpfs. "
      f"{'The guest is emulated (QEMU TCG)' if 'TCG' in m['cpu'] else 'The guest runs under KVM'}: "
      f"its absolute times say nothing about the host's, its ratios do. {runs['run']} runs "
      f"per command ({runs['conc20']} of the 20 concurrent `run`s); the VM took {V.get('vm_wall_s', '?')} s. "
      f"The host columns are this run's host figures.\n")
    if not V.get("runtimes"):
        w("No runtime ran the bundle in the guest:\n")
        for n, err in failed.items():
            w(f"- {n}: `{err}`")
        w("")
        return
    w("| test | husk | crun | runc | husk/crun (VM) | husk/crun (host) | husk/runc (VM) | husk/runc (host) |")
    w("|---|---:|---:|---:|---:|---:|---:|---:|")
    for test, label in VM_ROWS:
        if not V.get(test):
            continue
        cells = ["failed" if n in failed else ms(median(V, test, n)) for n in NAMES]
        ratios = [fr(ratio(median(src, test, "husk"), median(src, test, other)))
                  for other in ("crun", "runc") for src in (V, R)]
        w(f"| {label} | {' | '.join(cells)} | {' | '.join(ratios)} |")
    w("")
    for n, err in failed.items():
        w(f"- {n} failed in the guest (its `run` of the bundle): `{err}`")
    if failed:
        w("")
    counts_table(V, w, "### Syscalls and page faults per command on cgroup v2",
                 "Counted in the guest as on the host (see [below](#syscalls-and-page-faults-per-command)); "
                 "deterministic, so emulation does not blur them.")


def markdown(R):
    m, v = R["machine"], R["versions"]
    L = []
    w = L.append
    w("# husk vs crun vs runc: benchmark results\n")
    w(f"Generated by `scripts/bench` on {R['started']} (the whole run took {R.get('duration_s', '?')} s). "
      "Benchmarks are not tests: nothing here fails the build. How it is measured: "
      "[conformance/bench/README.md](../../conformance/bench/README.md).\n")
    w("## Machine\n")
    w(f"- CPU: {m['cpu']}, {m['nproc']} cores; RAM: {m['mem_gib']} GiB")
    w(f"- Kernel {m['kernel']}, Debian {m['debian']}; {m['hyperfine']}")
    for n in NAMES:
        if n in v:
            w(f"- {n}: {v[n]}")
    w(f"- cgroups: {R['cgroups']}.")
    w(f"- Load average (1, 5, 15 min) at the start: {R.get('loadavg_start')}, at the end: "
      f"{R.get('loadavg_end')}. The machine is shared; other work running at the same time "
      "widens the spread of every number here.")
    missing = [n for n in v if n not in R.get("runtimes", [])]
    if missing:
        w(f"- Left out because their `run` failed the smoke test: {', '.join(missing)}.")
        for n, err in (R.get("smoke_errors") or {}).items():
            w(f"  - {n}: `{err}`")
    w("")
    w("Same bundle for all three: busybox rootfs (shared, read-only), `runc spec`'s config.json with "
      "`terminal: false` and `args: [\"/bin/true\"]`: pid, network, ipc, uts and mount namespaces, "
      "the default mounts, masked and read-only paths, capabilities, `linux.resources.devices` deny-all, "
      "and an absolute `cgroupsPath` `/husk-bench/<runtime>-<n>` (the only field that differs). "
      "Each runtime has its own `--root`. All timings are medians of hyperfine runs in one harness, "
      "the three runtimes one after the other in the same hyperfine invocation.\n")

    w("## Targets (issue 10)\n")
    w("Medians; \"–\": not measured in this run. Missed targets are reported, not hidden. The last "
      "column is the same ratio measured inside the cgroup v2 VM in this run (only ratios count there).\n")
    w("| target | measured (host) | | cgroup v2 VM |")
    w("|---|---|---|---|")
    for text, value, v, *in_vm in targets(R):
        w(f"| {text} | {value} | {v} | {in_vm[0] if in_vm else ''} |")
    w("")

    w("## Latency (median, ms)\n")
    w("| test | husk | crun | runc | husk/crun | husk/runc |")
    w("|---|---:|---:|---:|---:|---:|")
    for test, label, vals in timing_rows(R):
        if not R.get(test):
            continue
        if "skipped" in R[test]:
            w(f"| {label} | SKIP: {R[test]['skipped']} | | | | |")
            continue
        w(f"| {label} | {ms(vals['husk'])} | {ms(vals['crun'])} | {ms(vals['runc'])} | "
          f"{fr(ratio(vals['husk'], vals['crun']))} | {fr(ratio(vals['husk'], vals['runc']))} |")
    w("\nThe two rows 0.3 s after the previous command show what a create or an exec costs when "
      "it comes alone, as from an engine: the first move of a process into a cgroup after a pause "
      "waits for an RCU grace period when it goes by pid through `cgroup.procs`, which back-to-back "
      "runs never see. The seccomp row gives every runtime the profile podman passes (from "
      f"`/usr/share/containers/seccomp.json`, the rules for x86-64 and the bundle's capabilities).")
    runs = {t: next(iter(R[t].values()))["runs"]
            for t in ("run", "create", "exec", "create-idle", "run-seccomp", "seq100", "conc20")
            if R.get(t) and "skipped" not in R[t]}
    w(f"\nRuns per command: {', '.join(f'{t} {n}' for t, n in runs.items())}. Every test is split over 3 hyperfine "
      "invocations with the order of the runtimes rotated, so a burst of load elsewhere on the "
      "machine does not fall on one runtime only.\n")

    w("### CPU time (user + system, mean, ms)\n")
    w("Less sensitive to other load than wall time. It counts the runtime process and the "
      "children it waited for: for `run` that is everything, including the container's init; "
      "for `start` and `delete` the container's own processes are not included.\n")
    w("| test | husk | crun | runc | husk/crun | husk/runc |")
    w("|---|---:|---:|---:|---:|---:|")
    for test in ("run", "create", "start", "delete", "exec"):
        t = R.get(test) or {}
        v = {n: (t.get(n) or {}).get("cpu_ms") for n in NAMES}
        if any(x is not None for x in v.values()):
            w(f"| `{test}` | {ms(v['husk'])} | {ms(v['crun'])} | {ms(v['runc'])} | "
              f"{fr(ratio(v['husk'], v['crun']))} | {fr(ratio(v['husk'], v['runc']))} |")
    w("")

    base = [(t, (R.get(t) or {}).get("husk"), (R.get(t) or {}).get("husk-baseline"))
            for t in ("run", "create", "start", "delete", "exec")]
    if any(b for _, _, b in base):
        w("## Against the baseline husk (--baseline)\n")
        w(f"The earlier binary ({R['versions'].get('husk-baseline', '?')}) ran in the same hyperfine "
          "invocations as this one, so the two met the same load.\n")
        w("| test | husk median | baseline median | husk/baseline | husk CPU | baseline CPU |")
        w("|---|---:|---:|---:|---:|---:|")
        for t, h, b in base:
            if h and b:
                w(f"| `{t}` | {ms(h['median_ms'])} | {ms(b['median_ms'])} | "
                  f"{fr(ratio(h['median_ms'], b['median_ms']))} | {ms(h['cpu_ms'])} | {ms(b['cpu_ms'])} |")
        w("")

    vm_section(R, w)

    floors = {k: e for k, e in (R.get("run") or {}).items() if k.startswith("floor")}
    if floors:
        w("## Floor: the kernel's own cost\n")
        w("The same five namespaces made by `unshare --fork`, then either a bind mount + `pivot_root` + "
          "`umount -l` of the old root + exec of `/bin/true` (in a shell), or just `chroot` + exec. "
          "No cgroup, no /proc, /dev or other mounts, no capabilities or seccomp: a lower bound, "
          "not an equivalent.\n")
        w("| floor | median ms | husk `run` / floor | husk `run` − floor (ms) |")
        w("|---|---:|---:|---:|")
        hr = median(R, "run", "husk")
        for k, e in floors.items():
            w(f"| {k[7:]} | {ms(e['median_ms'])} | {fr(ratio(hr, e['median_ms']))} | "
              f"{ms(hr - e['median_ms']) if hr is not None else '–'} |")
        w("")

    ro = (R.get("run") or {}).get("husk on a read-only bind (no re-exec)")
    hr = median(R, "run", "husk")
    if ro and hr is not None:
        w("## Cost of the binary protection\n")
        w("`create`, `run` and `exec` re-execute husk from a read-only overlayfs view of its own binary "
          "unless `/proc/self/exe` already cannot be written (CVE-2019-5736). The same build from a "
          "read-only bind mount skips that step.\n")
        w("| husk `run` | median ms |")
        w("|---|---:|")
        w(f"| as built (re-exec through overlayfs) | {ms(hr)} |")
        w(f"| read-only bind mount (no re-exec) | {ms(ro['median_ms'])} |")
        w(f"| cost of the re-exec | {ms(hr - ro['median_ms'])} |")
        w("")

    w("## Resources for one `run`\n")
    w("| | husk | crun | runc | husk/crun | husk/runc |")
    w("|---|---:|---:|---:|---:|---:|")
    rss = rss_kb(R)
    w(f"| peak RSS, KiB (`/usr/bin/time -v`, median of 10) | {rss['husk']} | {rss['crun']} | {rss['runc']} | "
      f"{fr(ratio(rss['husk'], rss['crun']))} | {fr(ratio(rss['husk'], rss['runc']))} |")
    b = R.get("binary") or {}
    sz = {n: b[n]["bytes"] / 1024 if n in b else None for n in NAMES}
    st = {n: b[n]["stripped_bytes"] / 1024 if n in b else None for n in NAMES}
    w(f"| binary size, KiB (as installed/built) | {ms(sz['husk'])} | {ms(sz['crun'])} | {ms(sz['runc'])} | "
      f"{fr(ratio(sz['husk'], sz['crun']))} | {fr(ratio(sz['husk'], sz['runc']))} |")
    w(f"| binary size, KiB (stripped) | {ms(st['husk'])} | {ms(st['crun'])} | {ms(st['runc'])} | "
      f"{fr(ratio(st['husk'], st['crun']))} | {fr(ratio(st['husk'], st['runc']))} |")
    w("")
    w("Peak RSS is the largest resident set among the runtime process and the processes it forked "
      "and waited for (what `/usr/bin/time` reports). Shared libraries:")
    for n in NAMES:
        if n in b:
            libs = ", ".join(os.path.basename(x) for x in b[n]["shared_libs"]) or "none (static)"
            w(f"- {n}: {'dynamic' if b[n]['dynamic'] else 'static'}; {libs}")
    w("")

    counts_table(R, w)

    ex = R.get("exec") or {}
    if any(e.get("failed_runs") for e in ex.values()):
        w("**`exec` failures** (counted over as many extra tries as timed runs; the timings above "
          "include the failed attempts):\n")
        for n in NAMES:
            e = ex.get(n)
            if e and e.get("failed_runs"):
                w(f"- {n}: {e['failed_runs']} of {e['total_runs']} failed, first error: `{e['first_error']}`")
        w("")

    w("## Concurrency\n")
    w("| batch | husk failed | crun failed | runc failed |")
    w("|---|---:|---:|---:|")
    for test, label in (("conc20", "20 at once"), ("conc100", "100 at once")):
        t = R.get(test) or {}
        cells = []
        for n in NAMES:
            e = t.get(n)
            cells.append(f"{e['failed_runs']} of {e['total_runs']}" if e and "total_runs" in e else "–")
        w(f"| {label} | {' | '.join(cells)} |")
    errs = [(n, (R.get(t) or {}).get(n, {}).get("first_error")) for t in ("conc20", "conc100") for n in NAMES]
    for n, e in errs:
        if e:
            w(f"\nFirst error from {n}: `{e}`")
    w("")
    cycle_table(R, w)

    sc = R.get("scale") or {}
    if sc:
        count = max(s["count"] for s in sc.values())
        w(f"## Scale: {count} containers in the state directory\n")
        w(f"Containers created one after the other, left in the `created` state (a blocked init each), "
          f"with the same config minus the network namespace. `list` lists all of them; `state` "
          f"asks for the first one, timed when it is alone and again with all present. `create`, "
          f"`start` and `delete` of one more container (the bundle of the latency tests) are timed as "
          f"in the latency tests, before the others exist and with all of them. The windowed create "
          f"latency is the median over {next(iter(sc.values()))['window']} consecutive creates.\n")
        w("| | husk | crun | runc | husk/crun | husk/runc |")
        w("|---|---:|---:|---:|---:|---:|")

        def row(label, f):
            vals = {n: (f(sc[n]) if n in sc else None) for n in NAMES}
            w(f"| {label} | {ms(vals['husk'])} | {ms(vals['crun'])} | {ms(vals['runc'])} | "
              f"{fr(ratio(vals['husk'], vals['crun']))} | {fr(ratio(vals['husk'], vals['runc']))} |")
        row("`list`, ms", lambda s: s["list"]["median_ms"] if s.get("list") else None)
        row("`state`, alone, ms", lambda s: (s.get("state_alone") or {}).get("median_ms"))
        row(f"`state`, with {count}, ms", lambda s: s["state"]["median_ms"] if s.get("state") else None)
        for step in ("create", "start", "delete"):
            row(f"`{step}`, none existing, ms", lambda s, step=step: flat(s, step)[1])
            row(f"`{step}`, {count} existing, ms", lambda s, step=step: flat(s, step)[0])
        row("windowed `create`, first ones, ms", lambda s: s["create_ms_first"])
        row(f"windowed `create` with ~{count // 2} existing, ms", lambda s: s["create_ms_middle"])
        row(f"windowed `create` with ~{count} existing, ms", lambda s: s["create_ms_last"])
        row(f"all {count} creates, s", lambda s: s["create_total_s"])
        w("")
        for n in NAMES:
            if n in sc and sc[n]["failed"]:
                w(f"- {n}: {sc[n]['failed']} creates failed (the scale run stops after 10).")
        mem = {n: sc[n]["mem_available_mb_at_full"] for n in NAMES if n in sc}
        w("MemAvailable with all containers created: " +
          ", ".join(f"{n} {v} MiB" for n, v in mem.items()) + ".\n")


    st = (R.get("strace") or {}).get("husk")
    if st:
        w("## Where husk's `run` spends its time\n")
        w("Top syscalls of one husk `run` under `strace -f -c -w` (wall time per call, so blocking "
          "waits count; strace slows everything down, compare shares, not absolute times). "
          "The full tables for all three runtimes are in [strace.txt](strace.txt).\n")
        w("| syscall | calls | errors | wall s | % |")
        w("|---|---:|---:|---:|---:|")
        for r in st["wall"]["top"][:10]:
            w(f"| {r['syscall']} | {r['calls']} | {r['errors']} | {r['seconds']:.6f} | {r['pct']:.1f} |")
        w("")

    w("## Chart\n")
    w("![medians and create latency](chart.png)\n")
    w("Raw numbers: [results.json](results.json) (every run's time), [results.csv](results.csv).")
    return "\n".join(L) + "\n"


if __name__ == "__main__":
    out = sys.argv[1]
    with open(os.path.join(out, "results.json")) as f:
        results = json.load(f)
    write_csv(results, os.path.join(out, "results.csv"))
    with tempfile.TemporaryDirectory() as tmp:
        chart(results, out, tmp)
    with open(os.path.join(out, "README.md"), "w") as f:
        f.write(markdown(results))
