"""bubblewrap given the walls `husk sandbox` builds, for a fair start-up
comparison: the same mounts, masked and read-only paths, namespaces,
environment and seccomp filter, read from `husk sandbox --print-config`.
What bwrap cannot do (Landlock, a sysfs of the sandbox's own network
namespace, tmpfs sizes) is left out and said by `missing()`."""
import json
import os
import subprocess

# Run by Debian's python3, which has python3-seccomp (the bench's own python may not).
SECCOMP_EXPORT = r'''
import json, sys, seccomp
cfg = json.load(open(sys.argv[1]))["linux"]["seccomp"]
def action(name, errno_ret):
    if name == "SCMP_ACT_ALLOW": return seccomp.ALLOW
    if name == "SCMP_ACT_ERRNO": return seccomp.ERRNO(errno_ret)
    if name == "SCMP_ACT_KILL" or name == "SCMP_ACT_KILL_THREAD": return seccomp.KILL
    if name == "SCMP_ACT_KILL_PROCESS": return seccomp.KILL_PROCESS
    if name == "SCMP_ACT_TRAP": return seccomp.TRAP
    if name == "SCMP_ACT_LOG": return seccomp.LOG
    raise SystemExit("seccomp action " + name + " has no bwrap equivalent here")
ops = {"SCMP_CMP_EQ": seccomp.EQ, "SCMP_CMP_NE": seccomp.NE, "SCMP_CMP_LT": seccomp.LT, "SCMP_CMP_LE": seccomp.LE,
       "SCMP_CMP_GT": seccomp.GT, "SCMP_CMP_GE": seccomp.GE, "SCMP_CMP_MASKED_EQ": seccomp.MASKED_EQ}
default_errno = cfg.get("defaultErrnoRet", 1)
f = seccomp.SyscallFilter(action(cfg["defaultAction"], default_errno))
unknown = 0
for rule in cfg.get("syscalls", []):
    act = action(rule["action"], rule.get("errnoRet", default_errno))
    args = []
    for a in rule.get("args", []):
        if a["op"] == "SCMP_CMP_MASKED_EQ":
            args.append(seccomp.Arg(a["index"], seccomp.MASKED_EQ, a["value"], a.get("valueTwo", 0)))
        else:
            args.append(seccomp.Arg(a["index"], ops[a["op"]], a["value"]))
    for name in rule["names"]:
        try:
            f.add_rule(act, name, *args)
        except (RuntimeError, ValueError):
            unknown += 1  # newer than this libseccomp: left at the default action
with open(sys.argv[2], "wb") as out:
    f.export_bpf(out)
print(unknown)
'''


def seccomp_bpf(config_path, out_path):
    """Compiles the config's seccomp profile into a BPF program file for
    `bwrap --seccomp FD`; None (and why) when python3-seccomp is missing."""
    r = subprocess.run(["/usr/bin/python3", "-c", SECCOMP_EXPORT, config_path, out_path],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return None, r.stderr.strip().splitlines()[-1] if r.stderr.strip() else "python3-seccomp failed"
    return out_path, None


def _mode(options):
    for o in options:
        if o.startswith("mode="):
            return o[len("mode="):]
    return None


def bwrap_args(config, seccomp_fd=None):
    """The bwrap arguments (after the program name, before the command) that
    build what `config` (a `husk sandbox --print-config` config) describes."""
    args = ["--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
            "--hostname", config.get("hostname", "sandbox"), "--clearenv"]
    for kv in config["process"].get("env", []):
        k, _, v = kv.partition("=")
        args += ["--setenv", k, v]
    dev_done = False
    for m in config["mounts"]:
        dest, typ, opts = m["destination"], m.get("type"), m.get("options", [])
        if typ == "proc":
            args += ["--proc", dest]
        elif typ == "tmpfs" and dest == "/dev":
            args += ["--dev", "/dev"]
            dev_done = True
        elif typ == "devpts" and dev_done:
            continue  # --dev mounts one
        elif typ == "mqueue":
            args += ["--mqueue", dest]
        elif typ == "sysfs":
            args += ["--ro-bind", "/sys", dest]
        elif typ == "bind":
            args += ["--ro-bind" if "rro" in opts or "ro" in opts else "--bind", m["source"], dest]
        elif typ == "tmpfs":
            mode = _mode(opts)
            args += (["--perms", mode] if mode else []) + ["--tmpfs", dest]
    for p in config["linux"].get("maskedPaths", []):
        if os.path.isdir(p):
            args += ["--tmpfs", p, "--remount-ro", p]
        elif os.path.exists(p):
            args += ["--ro-bind", "/dev/null", p]
    for p in config["linux"].get("readonlyPaths", []):
        if os.path.exists(p):  # bwrap remounts only mount points: bound onto itself first
            args += ["--ro-bind", p, p]
    if config["root"].get("readonly"):
        args += ["--remount-ro", "/"]
    if seccomp_fd is not None:
        args += ["--seccomp", str(seccomp_fd)]
    args += ["--chdir", config["process"]["cwd"]]
    return args


def missing():
    return "Landlock, a sysfs of its own, tmpfs sizes"


def load_config(cmd):
    """`cmd` prints the config (a list, run as the benchmark's user)."""
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
