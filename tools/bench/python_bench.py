#!/usr/bin/env python3
"""Python in kiln against the same Python on the host (make bench; issue 4).

    python_bench.py VMM KERNEL IMAGE ROOT [--runs N] [--sandboxes N]
                    [--mem-backing memfd|thp] [--only STEP,...]

ROOT is IMAGE's files extracted on the host (tools/mkimage/extract-root): the
host runs the very same interpreter and libraries, in a chroot. Prints:

  analysis     tests/integration/data/analysis.py (pandas, matplotlib, a PNG)
               in a fresh guest vs in the chroot: wall times, medians, ratio
  start-up     python3 -c 'print(1)' to its line on stdout, guest vs host
  memory       idle python3 sandboxes: 1, then N at once; host memory (PSS
               of the kiln-vmm processes, smaps_rollup) per sandbox, and the
               increment per extra sandbox (the image's pages are shared)
"""
import argparse
import os
import select
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ANALYSIS = os.path.join(HERE, "..", "..", "tests", "integration", "data", "analysis.py")
GOAL_RATIO = 1.3
GOAL_STARTUP_RATIO = 3  # python3 start-up in a fresh VM, against the host chroot
CHROOT = shutil.which("chroot") or "/usr/sbin/chroot"
ENV = {"PATH": "/usr/bin:/bin", "HOME": "/", "LANG": "C.UTF-8", "MPLBACKEND": "Agg"}


def guest_cmd(a, argv, mem="256M"):
    backing = ["--mem-backing", a.mem_backing] if a.mem_backing else []
    return [a.vmm, "--kernel", a.kernel, "--image", a.image, "--mem", mem] + backing + ["--"] + argv


def host_cmd(a, argv):
    return [CHROOT, a.root] + argv


def first_line_ms(cmd):
    """Wall time from spawn to the first line on stdout, and to the end."""
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, env=ENV)
    line = p.stdout.readline()
    t1 = time.monotonic()
    p.stdout.read()
    if p.wait() != 0 or not line:
        raise RuntimeError("%s failed (status %d)" % (cmd[0], p.returncode))
    return (t1 - t0) * 1e3, (time.monotonic() - t0) * 1e3


def run_ms(cmd):
    t0 = time.monotonic()
    r = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, env=ENV)
    ms = (time.monotonic() - t0) * 1e3
    if r.returncode != 0:
        tail = r.stdout.decode(errors="replace").splitlines()[-5:]
        raise RuntimeError("%s failed (status %d): %s" % (cmd[0], r.returncode, " | ".join(tail)))
    return ms, r.stdout


def analysis(a):
    script = open(ANALYSIS).read()
    guest, host, outs = [], [], set()
    for i in range(a.runs):  # interleaved: the host's load hits both alike
        ms, out = run_ms(guest_cmd(a, ["/usr/bin/python3", "-c", script, "/tmp/chart.png"]))
        guest.append(ms)
        outs.add(out)
        png = "/tmp/kiln-bench-chart-%d.png" % os.getpid()
        ms, out = run_ms(host_cmd(a, ["/usr/bin/python3", "-c", script, png]))
        host.append(ms)
        outs.add(out)
        try:
            os.unlink(os.path.join(a.root, png.lstrip("/")))
        except OSError:
            pass
    g, h = statistics.median(guest), statistics.median(host)
    print("  %-46s %8.0f ms  (host chroot %.0f ms; ratio %.2f)   goal <= %.1fx: %s"
          % ("analysis.py (pandas + matplotlib PNG)", g, h, g / h, GOAL_RATIO,
             "meets goal" if g / h <= GOAL_RATIO else "MISSES goal"))
    if len(outs) != 1:
        print("  (the guest's output differs from the host's: see make test)")


def startup(a):
    g, h = [], []
    for _ in range(a.runs * 2):  # interleaved, as analysis
        g.append(first_line_ms(guest_cmd(a, ["/usr/bin/python3", "-c", "print(1)"]))[0])
        h.append(first_line_ms(host_cmd(a, ["/usr/bin/python3", "-c", "print(1)"]))[0])
    gm, hm = statistics.median(g), statistics.median(h)
    print("  %-46s %8.1f ms  (host chroot %.1f ms: %.2fx; VM start included)   goal <= %dx: %s"
          % ("python3 start-up to its first line", gm, hm, gm / hm, GOAL_STARTUP_RATIO,
             "meets goal" if gm / hm <= GOAL_STARTUP_RATIO else "MISSES goal"))


def pss_kib(pid):
    """PSS of pid and its descendants: kiln-vmm runs the VM in a child of
    its own (the jail), and the parent holds next to nothing."""
    total = 0
    try:
        with open("/proc/%d/smaps_rollup" % pid) as f:
            for line in f:
                if line.startswith("Pss:"):
                    total += int(line.split()[1])
                    break
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            children = [int(c) for c in f.read().split()]
    except OSError:  # gone meanwhile
        return total
    return total + sum(pss_kib(c) for c in children)


IDLE = "import sys; print('ready', flush=True); sys.stdin.read()"


def start_idle(a):
    # stdin stays open and silent: python3 waits on it, idle.
    p = subprocess.Popen(guest_cmd(a, ["/usr/bin/python3", "-c", IDLE]), stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=ENV)
    return p


def wait_ready(procs, timeout=120):
    deadline = time.monotonic() + timeout
    waiting = {p.stdout.fileno(): p for p in procs}
    while waiting:
        left = deadline - time.monotonic()
        if left <= 0:
            raise RuntimeError("%d sandboxes not ready after %ds" % (len(waiting), timeout))
        ready, _, _ = select.select(list(waiting), [], [], left)
        for fd in ready:
            if b"ready" not in waiting.pop(fd).stdout.readline():
                raise RuntimeError("an idle sandbox failed to start")


def memory(a):
    procs = []
    try:
        procs.append(start_idle(a))
        wait_ready(procs)
        time.sleep(0.5)
        one = pss_kib(procs[0].pid)
        more = [start_idle(a) for _ in range(a.sandboxes - 1)]
        procs += more
        wait_ready(more)
        time.sleep(0.5)
        total = sum(pss_kib(p.pid) for p in procs)
    finally:
        for p in procs:
            p.kill()
            p.wait()
    print("  %-46s %8d KiB PSS (kiln-vmm with its guest)" % ("one idle python3 sandbox", one))
    print("  %-46s %8d KiB PSS each; +%d KiB per extra sandbox (image pages shared)"
          % ("%d idle python3 sandboxes" % a.sandboxes, total // a.sandboxes,
             (total - one) // (a.sandboxes - 1)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("vmm")
    ap.add_argument("kernel")
    ap.add_argument("image")
    ap.add_argument("root")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--sandboxes", type=int, default=20)
    ap.add_argument("--mem-backing", choices=("memfd", "thp"),
                    help="kiln-vmm's --mem-backing (default: kiln-vmm's own)")
    ap.add_argument("--only", default="analysis,startup,memory",
                    help="the steps to run, comma-separated (default: all of "
                    "analysis,startup,memory)")
    a = ap.parse_args()
    if a.runs < 1 or a.sandboxes < 2:
        ap.error("--runs must be at least 1 and --sandboxes at least 2")
    steps = {f.__name__: f for f in (analysis, startup, memory)}
    only = a.only.split(",")
    for name in only:
        if name not in steps:
            ap.error("--only: no step %r (the steps: %s)" % (name, ", ".join(steps)))
    print("  python (tools/bench/python_bench.py), %s, medians of %d runs%s"
          % (os.path.basename(os.path.realpath(a.image)), a.runs,
             ", --mem-backing " + a.mem_backing if a.mem_backing else ""))
    failed = False
    for step in (steps[name] for name in steps if name in only):
        try:
            step(a)
        except (RuntimeError, OSError) as e:
            print("  python bench: %s: %s" % (step.__name__, e))
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
