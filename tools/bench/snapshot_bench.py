#!/usr/bin/env python3
"""Snapshot benchmarks against the issue's goals (snapshot_bench.sh runs it).

    snapshot_bench.py VMM KERNEL INITRD WORKDIR [--runs N] [--clones N] [--touch MIB]
                      [--python IMAGE]

A 256 MiB guest runs `snaptest touch MIB` (40 by default: guest-like data,
see tests/integration/progs/snaptest.c) and then answers each console line
with "echo <line>". Measured, medians of --runs:
  pause        quiesce only (API "pause"), and pause + snapshot written
               (fsync included), file size against the memory touched; the
               first snapshot of the freshly booted VM alone (everything
               compressed), and the later ones (each reuses the chunks
               that did not change since the one before)
  re-pause     a VM restored eagerly / lazily from that snapshot, paused to
               a file right away (resume false), as kilnd pauses a sandbox
               it resumed: both while their memory is still loading
  resume       eager and lazy restores of that snapshot: kiln-vmm start to
               the first guest instruction, to the first console byte of
               the guest's answer to a line that waits on its stdin, and
               to all of memory resident (both load memory while the guest
               runs: eager at once on every CPU, lazy mostly on touch; the
               guest is kept running half a second for it)
  clone        template restores: the same two times (template memory
               already made), and the one-time cost of making it
  memory       --clones idle clones of the template at once: RssAnon,
               RssShmem and PSS of each (smaps_rollup), medians, and the
               template's own memory, shared by all
  rate         clones started per second: that many clones launched, all
               up and answering (goal: 500/s)
With --python IMAGE (the base erofs image, `make images`), the same for a
warm Python template: a 1 GiB guest booted from IMAGE that imported pandas
and waits on stdin (python3 echoes each line).
"""
import os
import socket
import json
import statistics
import subprocess
import sys
import time

VMM, KERNEL, INITRD, WORK = sys.argv[1:5]
opts = sys.argv[5:]
RUNS = int(opts[opts.index("--runs") + 1]) if "--runs" in opts else 10
CLONES = int(opts[opts.index("--clones") + 1]) if "--clones" in opts else 100
TOUCH = int(opts[opts.index("--touch") + 1]) if "--touch" in opts else 40
PYIMG = opts[opts.index("--python") + 1] if "--python" in opts else None
PY_WARM = ("import sys, pandas; print('ready', flush=True)\n"
           "for l in sys.stdin: print('echo', l, end='', flush=True)")
GOALS = {"pause": 30, "ratio": 0.4, "eager": 10, "lazy": 3, "clone": 3}
GOAL_RATE = 500  # clones started per second (issue 21), either template
BASE = [VMM, "--kernel", KERNEL, "--initrd", INITRD]


def med(v):
    return statistics.median(v) if v else float("nan")


def verdict(v, goal):
    return "meets goal" if v <= goal else "MISSES goal"


def held_to(v, key, judged, fmt="%d ms"):
    """The goal's verdict for a case the goals are about; nothing for another."""
    if not judged:
        return ""
    return ("   goal <= " + fmt + ": %s") % (GOALS[key], verdict(v, GOALS[key]))


def api(path, req):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(60)
    s.connect(path)
    s.sendall(json.dumps(req).encode() + b"\n")
    buf = b""
    while not buf.endswith(b"\n"):
        chunk = s.recv(65536)
        if not chunk:
            break
        buf += chunk
    s.close()
    return json.loads(buf)


def wait_file(path, text, timeout=60):
    end = time.time() + timeout
    while time.time() < end:
        try:
            if text in open(path, errors="replace").read():
                return True
        except OSError:
            pass
        time.sleep(0.01)
    return False


def stats_times(err):
    """first guest instruction, first console output and, for a restore
    that loads memory while the guest runs, all of it in (ms from main;
    None if it was not)."""
    times, loaded = None, None
    for line in open(err, errors="replace"):
        w = line.replace(",", "").split()
        if "first guest instruction" in line:
            times = float(w[w.index("instruction") + 1]), float(w[w.index("output") + 1])
        if "all in at" in line and "(not yet)" not in line:
            loaded = float(w[w.index("at") + 1])
    return times and times + (loaded,)


def make_snapshot(guest, ready, name, timeout=60):
    """Boot guest (VMM args), wait for ready, then --runs snapshots."""
    r, w = os.pipe()
    apath = os.path.join(WORK, name + ".api")
    out = os.path.join(WORK, name + ".out")
    p = subprocess.Popen(guest[:1] + ["--api-sock", apath] + guest[1:], stdin=r, stdout=open(out, "wb"),
                         stderr=subprocess.DEVNULL)
    os.close(r)
    if not wait_file(out, ready, timeout):
        sys.exit("bench: the guest did not get ready")
    time.sleep(0.3)
    pauses, totals, sizes, reused = [], [], [], []
    touched = api(apath, {"op": "metrics"})["RssShmem_kib"]
    snap = os.path.join(WORK, name + ".snap")
    for i in range(RUNS):
        pr = api(apath, {"op": "pause"})
        pauses.append(pr["pause_us"] / 1000)
        api(apath, {"op": "resume"})
        time.sleep(0.05)
        # Pause to a file: quiesce, state, memory, fsync, while running.
        r = api(apath, {"op": "snapshot", "path": snap, "resume": i < RUNS - 1})
        totals.append(r["total_ms"])
        sizes.append(r["file_size"])
        reused.append(r["chunks"].get("reused", 0))
        last = r
    api(apath, {"op": "stop"})
    p.wait()
    os.close(w)
    return snap, pauses, totals, sizes, touched, last, reused


def restore_run(snap, mode, base, hold=0):
    """One restore answering a line; stdin is held open hold seconds (the
    guest runs on while memory loads), then closed: the guest exits."""
    err = os.path.join(WORK, "r.err")
    p = subprocess.Popen(base + ["--restore", snap, "--restore-mode", mode, "--template-dir",
                                 WORK, "--stats"],
                         stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                         stderr=open(err, "wb"))
    p.stdin.write(b"x\n")
    p.stdin.flush()
    time.sleep(hold)
    p.stdin.close()
    p.wait(60)
    return stats_times(err)


def resume_bench(snap, base):
    res = {}
    t0 = time.time()
    restore_run(snap, "template", base)  # makes the template memory
    make_ms = (time.time() - t0) * 1000
    for mode in ["eager", "lazy", "template"]:
        firsts, bytes_, loaded = [], [], []
        for _ in range(RUNS):
            t = restore_run(snap, mode, base, 0 if mode == "template" else 0.5)
            if t:
                firsts.append(t[0])
                bytes_.append(t[1])
                if t[2] is not None:
                    loaded.append(t[2])
        res[mode] = (med(firsts), med(bytes_), med(loaded) if loaded else None)
    return res, make_ms


def repause_bench(snap, base, mode):
    """Restore snap (mode), then at once pause it to a file: total_ms."""
    times = []
    apath = os.path.join(WORK, "rp.api")
    out = os.path.join(WORK, "rp.snap")
    for _ in range(RUNS):
        r, w = os.pipe()
        p = subprocess.Popen(base + ["--api-sock", apath, "--restore", snap, "--restore-mode", mode],
                             stdin=r, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(r)
        end = time.time() + 30
        res = None
        while time.time() < end:
            try:
                res = api(apath, {"op": "snapshot", "path": out, "resume": False})
                break
            except OSError:
                time.sleep(0.002)
        if res and res.get("ok"):
            times.append(res["total_ms"])
        p.kill()
        p.wait()
        os.close(w)
    return med(times)


def rss(pid):
    v = {}
    for f in ("status", "smaps_rollup"):
        for line in open("/proc/%d/%s" % (pid, f)):
            k, _, rest = line.partition(":")
            if k in ("RssAnon", "RssShmem", "RssFile", "Pss"):
                v[k] = int(rest.split()[0])
    return v


def clones_bench(snap, base):
    for f in os.listdir(WORK):
        if f.startswith("c") and f.endswith(".out"):
            os.unlink(os.path.join(WORK, f))
    procs, pipes = [], []
    outs = []
    t0 = time.time()
    for i in range(CLONES):
        r, w = os.pipe()
        out = os.path.join(WORK, "c%d.out" % i)
        p = subprocess.Popen(base + ["--restore", snap, "--restore-mode", "template",
                                     "--template-dir", WORK],
                             stdin=r, stdout=open(out, "wb"), stderr=subprocess.DEVNULL)
        os.close(r)
        os.write(w, b"up\n")
        procs.append(p)
        pipes.append(w)
        outs.append(out)
    for out in outs:
        wait_file(out, "echo up")
    wall = time.time() - t0
    time.sleep(1)
    mem = [rss(p.pid) for p in procs]
    for w in pipes:
        os.close(w)
    for p in procs:
        p.wait()
    tpl = os.path.join(WORK, "kiln-template-%s.mem" % snap_id(snap))
    tpl_kib = os.stat(tpl).st_blocks * 512 // 1024 if os.path.exists(tpl) else 0
    return mem, wall, tpl_kib


def snap_id(snap):
    for line in subprocess.run([os.path.join(os.path.dirname(VMM), "kiln-snapshot"), "inspect",
                                "--no-verify", snap], capture_output=True, text=True).stdout.splitlines():
        if line.split()[:1] == ["id"]:
            return line.split()[1]
    return "?"


def report(title, guest, ready, base, timeout=60, judged=True):
    print(title)
    snap, pauses, totals, sizes, touched, last, reused = make_snapshot(guest, ready, "t", timeout)
    size = med(sizes)
    ratio = size / (touched * 1024)
    p = med(totals)
    print("  %-46s %8.2f ms" % ("quiesce (API pause: all vCPUs parked)", med(pauses)))
    print("  %-46s %8.1f ms%s" % ("pause to a file (snapshot of a running VM)", p,
                                  held_to(p, "pause", judged)))
    print("  %-46s %8.1f ms (nothing to reuse: all compressed)" % ("  the first one", totals[0]))
    print("  %-46s %8.1f ms (median; %d of %d data chunks reused)"
          % ("  the later ones", med(totals[1:]), med(reused[1:]), last["chunks"]["data"]))
    print("  %-46s %8.1f ms compressing and writing memory, %.1f ms fsync"
          % ("  of which (last run)", last["memory_ms"], last["sync_ms"]))
    for mode in ("eager", "lazy"):
        print("  %-46s %8.1f ms" % ("pause to a file right after a %s restore" % mode,
                                    repause_bench(snap, base, mode)))
    print("  %-46s %8.1f MiB for %.1f MiB touched: %.2fx%s"
          % ("snapshot file", size / 2**20, touched / 1024, ratio,
             held_to(ratio, "ratio", judged, "%.1fx")))
    res, make_ms = resume_bench(snap, base)
    for mode, goal in (("eager", "eager"), ("lazy", "lazy"), ("template", "clone")):
        first, byte, loaded = res[mode]
        what = "clone from the template" if mode == "template" else "restore " + mode
        print("  %-46s %8.2f ms%s" % (what + ": to the first instruction", first,
                                      held_to(first, goal, judged)))
        print("  %-46s %8.2f ms" % ("  to the guest's first answer on the console", byte))
        if loaded is not None:
            print("  %-46s %8.2f ms (loaded while the guest runs)"
                  % ("  to all memory resident", loaded))
        elif mode == "eager":
            print("  %-46s %8.2f ms (all loaded before the guest ran)"
                  % ("  to all memory resident", first))
    print("  %-46s %8.1f ms (once per template and host)" % ("making the template memory", make_ms))
    mem, wall, tpl_kib = clones_bench(snap, base)
    print("  %-46s %8d KiB PSS (RssAnon %d, RssShmem %d KiB; medians)"
          % ("%d idle clones: each" % len(mem), med([m["Pss"] for m in mem]),
             med([m["RssAnon"] for m in mem]), med([m["RssShmem"] for m in mem])))
    print("  %-46s %8d KiB PSS together, plus the template memory, once:"
          % ("  all of them", sum(m["Pss"] for m in mem)))
    print("  %-46s %8d KiB (a file on tmpfs, shared by every clone)" % ("  template memory", tpl_kib))
    r = len(mem) / wall
    print("  %-46s %8.1f clones/s (%d started and answering in %.2f s)   goal >= %d/s: %s"
          % ("clones started", r, len(mem), wall, GOAL_RATE,
             "meets goal" if r >= GOAL_RATE else "MISSES goal"))


def main():
    print("  times in ms from the kiln-vmm command, medians of %d runs (%d clones)" % (RUNS, CLONES))
    report("  256 MiB guest, %d MiB touched by snaptest (guest-like data):" % TOUCH,
           BASE + ["--mem", "256M", "--", "/bin/snaptest", "touch", str(TOUCH)], "touched", BASE)
    if PYIMG:
        pybase = [VMM, "--kernel", KERNEL, "--image", PYIMG]
        print()
        report("  1 GiB guest, python3 with pandas imported (base image; the goals above are for"
               " 256 MiB):",
               pybase + ["--mem", "1G", "--", "/usr/bin/python3", "-c", PY_WARM], "ready", pybase,
               timeout=120, judged=False)


if __name__ == "__main__":
    main()
