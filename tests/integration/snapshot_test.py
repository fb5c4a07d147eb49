#!/usr/bin/env python3
"""Snapshots end to end: pause, snapshot, kill, restore, again (snapshot.sh).

    snapshot_test.py VMM KERNEL INITRD SNAPSHOT_TOOL WORKDIR [CASE...]

Cases (all by default; each prints ok/FAIL):
  cycles     a busybox shell with a background loop writing a counter to a
             tmpfs file every 50 ms, a variable and an open file it reads a
             line from per status line, and a vsock listener: ten times
             pause -> snapshot -> SIGKILL the VMM -> restore (eager, lazy and
             template in turn), checking every status line: nothing lost or
             repeated, the fd's offset, the variable, the counter going up,
             the guest's clock stepped to the host's after a 3 s pause,
             vsock connections reset and the listener still there
  pause      pause/resume in the same VM, with the API's state answers
  killed     later snapshots of a VM to one file (each adds a generation to
             it), and the VMM killed (SIGKILL) in the middle of one; six
             times, restoring (eager, lazy) from that file: the guest goes on
             from the last snapshot or the one cut short, nothing else
  later      two snapshots of a booted VM: the first reads all of memory,
             the second copies the chunks KVM's dirty log (on from the
             first snapshot) saw nobody write (4 MiB of tmpfs at least)
  clones     clones of one template (template, eager and lazy restores) get
             different getrandom and /dev/urandom output
  diff       a clone's diff snapshot against its template restores (template
             and eager), and is smaller than a full one
  corrupt    damaged files (a byte flipped in the header, a section, a chunk;
             truncated at several points), snapshots of another kernel or
             initramfs, other memory size or devices: kiln-vmm refuses each
             with a precise message (exit 1, no crash), kiln-snapshot
             inspect reports each
  api        malformed requests get error replies and the VM runs on
  lazy       24 lazy restores, each snapshotted right away (memory still
             loading) and after the guest ran, restoring one of the two
             next: no hang (API timeout), the guest's memory hashes the
             same every time, chunks not loaded yet copied as they are
  thp        guest RAM in anonymous huge pages (--mem-backing thp): the
             snapshot skips memory never touched without reading it, and
             restores (eager) into either backing go on where it stopped
  lateram    a guest snapshotted before it asked for the RAM past its early
             part (kiln,early-ram-end) gets it after restores (eager,
             template), which register it only when it asks, as after its
             boot: a program touching 100 MiB of 256 runs;
             100 MiB of tmpfs data written then survives another snapshot
             and restore
  abi        a kernel whose boot note says KILN_BOOT_VERSION_MIN (as one
             kept for a snapshot from before an upgrade) boots, snapshots
             with that version and restores; one version below or above
             is refused
  python     (when $KILN_SNAPSHOT_IMAGE names the base image) a python3
             process with a variable and an open tmpfs file, through ten
             pause -> snapshot -> kill -> restore cycles
"""
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

VMM, KERNEL, INITRD, INSPECT, WORK = sys.argv[1:6]
IMAGE = os.environ.get("KILN_SNAPSHOT_IMAGE")
CASES = sys.argv[6:] or ["pause", "later", "killed", "cycles", "lazy", "clones", "diff", "corrupt", "api", "thp",
                         "lateram", "abi"] + \
    (["python"] if IMAGE else [])
failures = []
procs = []


def ok(name):
    print("ok   snapshot-%s" % name, flush=True)


def fail(name, why, *files):
    failures.append(name)
    print("FAIL snapshot-%s: %s" % (name, why), flush=True)
    for f in files:
        try:
            lines = open(f, errors="replace").read().splitlines()[-15:]
        except OSError:
            continue
        print("    %s:" % os.path.basename(f))
        for line in lines:
            print("    | " + line)


def path(name):
    return os.path.join(WORK, name)


class VM:
    """One kiln-vmm process: console output and stderr in files, an API."""

    n = 0

    def __init__(self, args, stdin=None, api=True, vsock=None, boot=None, env=None):
        VM.n += 1
        self.name = "vm%d" % VM.n
        self.out, self.err = path(self.name + ".out"), path(self.name + ".err")
        self.api_path = path(self.name + ".api") if api else None
        cmd = [VMM] + (boot or ["--kernel", KERNEL, "--initrd", INITRD])
        if self.api_path:
            cmd += ["--api-sock", self.api_path]
        if vsock:
            cmd += ["--vsock", "3," + vsock]
        cmd += args
        self.p = subprocess.Popen(cmd, stdin=stdin if stdin is not None else subprocess.DEVNULL,
                                  stdout=open(self.out, "wb"), stderr=open(self.err, "wb"),
                                  env=env)
        procs.append(self.p)
        self.sock = None

    def text(self):
        return open(self.out, errors="replace").read().replace("\r\n", "\n")

    def wait_for(self, pred, timeout=20):
        end = time.time() + timeout
        while time.time() < end:
            t = self.text()
            if pred(t):
                return t
            if self.p.poll() is not None:
                t = self.text()
                return t if pred(t) else None
            time.sleep(0.02)
        return None

    def api(self, req, timeout=30):
        if not self.sock:
            end = time.time() + 10
            while not os.path.exists(self.api_path) and time.time() < end:
                time.sleep(0.01)
            self.sock = socket.socket(socket.AF_UNIX)
            self.sock.settimeout(timeout)
            while True:
                # The socket file appears at bind(), a moment before listen().
                try:
                    self.sock.connect(self.api_path)
                    break
                except ConnectionRefusedError:
                    if time.time() > end:
                        raise
                    time.sleep(0.005)
            self.buf = b""
        data = req if isinstance(req, bytes) else json.dumps(req).encode() + b"\n"
        self.sock.settimeout(timeout)
        self.sock.sendall(data)
        while b"\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError("API socket closed")
            self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\n")
        return json.loads(line)

    def kill(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGKILL)
        self.p.wait()
        if self.sock:
            self.sock.close()
            self.sock = None

    def stop(self, timeout=10):
        try:
            self.api({"op": "stop"})
        except (OSError, EOFError):
            pass
        try:
            return self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return None


def restore(snap, mode="eager", extra=(), **kw):
    return VM(["--restore", snap, "--restore-mode", mode, "--template-dir", WORK] + list(extra),
              **kw)


# ---------------------------------------------------------------- cycles

STATUS_SCRIPT = r"""
/bin/vsocktest serve 1024 &
(i=0; while :; do i=$((i+1)); echo $i >/tmp/counter; sleep 0.05; done) &
secret=v$$-$RANDOM; seq 1 100000 >/tmp/lines; exec 4</tmp/lines; n=0
while :; do
	n=$((n+1)); read -r l <&4
	echo "S n=$n line=$l count=$(cat /tmp/counter) secret=$secret t=$(date +%s)"
	sleep 0.2
done
"""


def status_lines(text):
    out = []
    for line in text.splitlines():
        if line.startswith("S n="):
            f = dict(kv.split("=", 1) for kv in line.split()[1:] if "=" in kv)
            if len(f) == 5:
                out.append(f)
    return out


def vsock_cmd(sock_path, cmd, timeout=10):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(timeout)
    s.connect(sock_path)
    s.sendall(b"CONNECT 1024\n")
    buf = b""
    while buf.count(b"\n") < 1:
        buf += s.recv(4096)
    if not buf.startswith(b"OK "):
        raise RuntimeError("vsock handshake: %r" % buf)
    buf = buf.partition(b"\n")[2]
    s.sendall(cmd + b"\n")
    while b"\n" not in buf:
        chunk = s.recv(4096)
        if not chunk:
            break
        buf += chunk
    return s, buf.decode().strip()


def case_cycles():
    name = "cycles"
    vs = path("v0.sock")
    vm = VM(["--", "/bin/sh", "-c", STATUS_SCRIPT], vsock=vs)
    if not vm.wait_for(lambda t: len(status_lines(t)) >= 2 and "listening 1024" in t):
        return fail(name, "the guest did not start", vm.out, vm.err)
    hold, got = vsock_cmd(vs, b"HOLD")
    if got != "holding":
        return fail(name, "vsock HOLD answered %r" % got, vm.out)
    outputs = [vm.out]
    modes = ["eager", "lazy", "template"]
    for cycle in range(10):
        snap = path("cycle%d.snap" % cycle)
        r = vm.api({"op": "pause"})
        if not r.get("ok"):
            return fail(name, "cycle %d: pause: %s" % (cycle, r), vm.err)
        r = vm.api({"op": "snapshot", "path": snap, "no_fsync": True})
        if not r.get("ok") or r.get("state") != "paused":
            return fail(name, "cycle %d: snapshot: %s" % (cycle, r), vm.err)
        before = len(status_lines(vm.text()))
        vm.kill()
        if cycle == 4:
            time.sleep(3)  # the guest's clock must catch up by itself
        mode = modes[cycle % 3]
        vs = path("v%d.sock" % (cycle + 1))
        vm = restore(snap, mode, vsock=vs)
        outputs.append(vm.out)
        if not vm.wait_for(lambda t: len(status_lines(t)) >= 2):
            return fail(name, "cycle %d (%s): no status after the restore" % (cycle, mode),
                        vm.out, vm.err)
        if cycle == 0:
            # The held connection's host side died with the old VMM: the
            # guest must see it reset, and its listener must still work.
            if not vm.wait_for(lambda t: "HOLD read: ECONNRESET" in t, 5):
                return fail(name, "the held vsock connection was not reset", vm.out, vm.err)
        s, got = vsock_cmd(vs, b"PING")
        s.close()
        if got != "pong":
            return fail(name, "cycle %d: vsock after restore answered %r" % (cycle, got),
                        vm.out, vm.err)
        if cycle == 4:
            last = status_lines(vm.text())[-1]
            if abs(int(last["t"]) - time.time()) > 2:
                return fail(name, "the guest's clock is %d s off the host's after a pause"
                            % (int(last["t"]) - time.time()), vm.out)
        del before
    lines = []
    for f in outputs:
        lines += status_lines(open(f, errors="replace").read())
    vm.stop()
    for prev, cur in zip(lines, lines[1:]):
        if int(cur["n"]) != int(prev["n"]) + 1:
            return fail(name, "status line %s follows %s (lost or repeated)" % (cur["n"], prev["n"]))
        if cur["line"] != cur["n"]:
            return fail(name, "the open file's offset moved: line %s at status %s"
                        % (cur["line"], cur["n"]))
        if cur["secret"] != lines[0]["secret"]:
            return fail(name, "the shell variable changed: %s -> %s" % (lines[0]["secret"], cur["secret"]))
        if int(cur["count"]) < int(prev["count"]):
            return fail(name, "the tmpfs counter went back: %s -> %s" % (prev["count"], cur["count"]))
    if int(lines[-1]["count"]) <= int(lines[0]["count"]) + 10:
        return fail(name, "the background counter stalled (%s -> %s)" % (lines[0]["count"], lines[-1]["count"]))
    ok("%s (%d status lines over 10 restores)" % (name, len(lines)))


# ---------------------------------------------------------------- lazy cycles

LAZY_CYCLES = 24


def thread_stacks(pid):
    """Each thread's kernel stack, for a VMM that stopped answering."""
    out = []
    try:
        for tid in sorted(os.listdir("/proc/%d/task" % pid)):
            try:
                st = open("/proc/%d/task/%s/stack" % (pid, tid)).read().split("\n")[:6]
            except OSError:
                st = ["?"]
            out.append("thread %s: %s" % (tid, " < ".join(l.split()[-1] for l in st if l)))
    except OSError:
        pass
    return "; ".join(out)


def sum_line(vm, w, n):
    """Ask snaptest for the hash of its memory; the nth answer."""
    os.write(w, b"sum\n")
    t = vm.wait_for(lambda t: t.count("\nsum ") + t.startswith("sum ") >= n, 20)
    if not t:
        return None
    return [l.split()[1] for l in t.splitlines() if l.startswith("sum ")][n - 1]


def case_lazy():
    """Lazy and eager restores (both load memory while the guest runs)
    snapshotted again, LAZY_CYCLES times: once right after the restore
    (memory still loading from the snapshot, much of it not there yet) and
    once after the guest ran; the next cycle restores one of the two. A hang (the VMM waiting on its own userfaultfd) fails by the
    API timeout; the guest's memory must hash the same every time."""
    name = "lazy"
    r, w = os.pipe()
    vm = VM(["--", "/bin/snaptest", "touch", "24"], stdin=r)
    os.close(r)
    if not vm.wait_for(lambda t: "touched 24" in t, 60):
        os.close(w)
        return fail(name, "the guest did not start", vm.out, vm.err)
    want = sum_line(vm, w, 1)
    snap = path("lazy0.snap")
    res = vm.api({"op": "snapshot", "path": snap, "resume": False, "no_fsync": True})
    vm.kill()
    os.close(w)
    if not want or not res.get("ok"):
        return fail(name, "first snapshot: %s (sum %s)" % (res, want), vm.err)
    early_reused = 0
    for cycle in range(LAZY_CYCLES):
        r, w = os.pipe()
        vm = restore(snap, "eager" if cycle % 2 else "lazy", stdin=r)
        os.close(r)
        snaps = []
        try:
            for when in ("early", "late"):
                if when == "late":
                    got = sum_line(vm, w, 1)
                    if got != want:
                        return fail(name, "cycle %d: memory hash %s, expected %s"
                                    % (cycle, got, want), vm.out, vm.err)
                p = path("lazy%d-%s.snap" % (cycle + 1, when))
                res = vm.api({"op": "snapshot", "path": p, "no_fsync": True,
                              "resume": when == "early"}, timeout=20)
                if not res.get("ok"):
                    return fail(name, "cycle %d: %s snapshot: %s" % (cycle, when, res), vm.err)
                if when == "early":
                    early_reused += res["chunks"]["reused"]
                    # Memory not loaded yet was not read through the
                    # mapping (each page would have waited on the
                    # userfaultfd thread, and been allocated): the VMM
                    # holds about what the guest uses, not all 256 MiB.
                    rss = vm.api({"op": "metrics"}, timeout=20)["RssShmem_kib"]
                    if rss > 160 * 1024:
                        return fail(name, "cycle %d: %d KiB of guest memory after a "
                                    "snapshot while loading" % (cycle, rss), vm.err)
                snaps.append(p)
        except (OSError, EOFError) as e:  # socket.timeout is an OSError
            return fail(name, "cycle %d: the VMM did not answer (%s): %s"
                        % (cycle, e, thread_stacks(vm.p.pid)), vm.err)
        finally:
            vm.kill()
            os.close(w)
        for p in ([snap] if cycle else []):
            os.unlink(p)
        snap = snaps[cycle % 2]
        for p in snaps:
            if p != snap:
                os.unlink(p)
    # The early snapshots copied the chunks not loaded yet (or unchanged)
    # from the snapshot being loaded instead of compressing them.
    if early_reused == 0:
        return fail(name, "no chunk was reused from the snapshot being loaded")
    ok("%s (%d lazy and eager restores, each snapshotted while loading and after; "
       "%d chunks reused)"
       % (name, LAZY_CYCLES, early_reused))


# ---------------------------------------------------------------- thp


def case_thp():
    name = "thp"
    backings = ["thp", "memfd", "thp"]
    vm = VM(["--mem-backing", "thp", "--", "/bin/sh", "-c", STATUS_SCRIPT])
    if not vm.wait_for(lambda t: len(status_lines(t)) >= 2):
        return fail(name, "the guest did not start", vm.out, vm.err)
    outputs = [vm.out]
    for cycle, backing in enumerate(backings):
        snap = path("thp%d.snap" % cycle)
        r = vm.api({"op": "snapshot", "path": snap, "resume": False, "no_fsync": True})
        vm.kill()
        if not r.get("ok"):
            return fail(name, "cycle %d: snapshot: %s" % (cycle, r), vm.err)
        # A fresh 256 MiB guest touched a few MiB: the rest must be known
        # untouched (holes), not read and found zero.
        chunks = r["chunks"]
        if chunks["holes"] < chunks["total"] // 2:
            return fail(name, "cycle %d: only %d of %d chunks were holes"
                        % (cycle, chunks["holes"], chunks["total"]))
        vm = restore(snap, "eager", ["--mem-backing", backing])
        outputs.append(vm.out)
        if not vm.wait_for(lambda t: len(status_lines(t)) >= 2):
            return fail(name, "cycle %d (%s): no status after the restore" % (cycle, backing),
                        vm.out, vm.err)
    vm.stop()
    lines = []
    for f in outputs:
        lines += status_lines(open(f, errors="replace").read())
    for prev, cur in zip(lines, lines[1:]):
        if int(cur["n"]) != int(prev["n"]) + 1 or cur["line"] != cur["n"] or \
                cur["secret"] != lines[0]["secret"]:
            return fail(name, "after S %s: %s" % (prev, cur))
    ok("%s (%d status lines over 3 restores)" % (name, len(lines)))


# ---------------------------------------------------------------- late RAM

LATE_SCRIPT = """echo ready; read l; /bin/memtouch 100 >/tmp/m && echo memtouch-ok
dd if=/dev/urandom of=/tmp/big bs=1M count=100 2>/dev/null; echo sum1 $(md5sum </tmp/big)
read l; echo sum2 $(md5sum </tmp/big); exit 7"""


def sum_of(text, key):
    for line in text.splitlines():
        if line.startswith(key + " "):
            return line.split()[1]
    return None


def case_lateram():
    name = "lateram"
    r, w = os.pipe()
    vm = VM(["--mem", "256M", "--stats", "--", "/bin/sh", "-c", LATE_SCRIPT], stdin=r)
    os.close(r)
    if not vm.wait_for(lambda t: "ready" in t):
        os.close(w)
        return fail(name, "the guest did not start", vm.out, vm.err)
    res = vm.api({"op": "snapshot", "path": path("late.snap"), "resume": False,
                  "no_fsync": True})
    vm.stop()
    os.close(w)
    if not res.get("ok"):
        return fail(name, "snapshot: %s" % res, vm.err)
    if not re.search(r"late RAM \(from \d+ MiB\): not asked for", open(vm.err).read()):
        return fail(name, "the guest had its late RAM before the snapshot", vm.err)
    for mode in ("eager", "template"):
        r, w = os.pipe()
        rvm = restore(path("late.snap"), mode, ["--stats"], stdin=r)
        os.close(r)
        os.write(w, b"go\n")
        t = rvm.wait_for(lambda t: "sum1 " in t, 60)
        sum1 = sum_of(t or "", "sum1")
        if not t or "memtouch-ok" not in t or not sum1:
            rvm.kill()
            os.close(w)
            return fail(name, "%s restore: no memtouch-ok and sum1" % mode, rvm.out, rvm.err)
        res = rvm.api({"op": "snapshot", "path": path("late2.snap"), "resume": False,
                       "no_fsync": True})
        rvm.stop()
        os.close(w)
        if not res.get("ok"):
            return fail(name, "%s restore: snapshot: %s" % (mode, res), rvm.err)
        # Registered when the restored guest asked, as after a boot.
        if not re.search(r"late RAM \(from \d+ MiB\): asked for at", open(rvm.err).read()):
            return fail(name, "%s restore: the late RAM was not left for the guest to ask"
                        % mode, rvm.err)
        r, w = os.pipe()
        rvm = restore(path("late2.snap"), "eager", stdin=r)
        os.close(r)
        os.write(w, b"go\n")
        t = rvm.wait_for(lambda t: "sum2 " in t, 60)
        try:
            rc = rvm.p.wait(30)
        except subprocess.TimeoutExpired:
            rc = None
        os.close(w)
        if sum_of(t or "", "sum2") != sum1 or rc != 7:
            rvm.kill()
            return fail(name, "after a %s restore: sum %s, then %s, exit status %s"
                        % (mode, sum1, sum_of(t or "", "sum2"), rc), rvm.out, rvm.err)
    ok("%s (eager and template restores, then 100 MiB of tmpfs through another)" % name)


# ---------------------------------------------------------------- pause


def case_pause():
    name = "pause"
    vm = VM(["--", "/bin/sh", "-c", STATUS_SCRIPT])
    if not vm.wait_for(lambda t: len(status_lines(t)) >= 1):
        return fail(name, "the guest did not start", vm.out, vm.err)
    for i in range(5):
        r = vm.api({"op": "pause"})
        st = vm.api({"op": "state"})
        n = len(status_lines(vm.text()))
        time.sleep(0.5)
        if not r.get("ok") or st.get("state") != "paused" or len(status_lines(vm.text())) != n:
            return fail(name, "pause %d: %s / %s, or output went on" % (i, r, st), vm.err)
        again = vm.api({"op": "pause"})
        r = vm.api({"op": "resume"})
        if not again.get("already") or not r.get("ok") or vm.api({"op": "state"})["state"] != "running":
            return fail(name, "resume %d: %s %s" % (i, again, r), vm.err)
        if not vm.wait_for(lambda t: len(status_lines(t)) >= n + 2, 5):
            return fail(name, "no output after resume %d" % i, vm.out, vm.err)
    m = vm.api({"op": "metrics"})
    rc = vm.stop()
    if m.get("pauses") != 5 or rc != 0:
        return fail(name, "metrics %s, exit status %s" % (m, rc), vm.err)
    ok("%s (5 pauses, last %d us)" % (name, m["last_pause_us"]))


# ---------------------------------------------------------------- clones

RAND_SCRIPT = "echo ready; while read l; do /bin/snaptest rand; done"


def template(script, snapname, wait):
    """Boot script with a console that stays open, wait, snapshot paused."""
    r, w = os.pipe()
    vm = VM(["--", "/bin/sh", "-c", script], stdin=r)
    os.close(r)
    if not vm.wait_for(wait):
        os.close(w)
        return None, vm
    time.sleep(0.3)
    res = vm.api({"op": "snapshot", "path": path(snapname), "resume": False, "no_fsync": True})
    vm.kill()
    os.close(w)
    return (path(snapname) if res.get("ok") else None), vm


def case_clones():
    name = "clones"
    snap, tvm = template(RAND_SCRIPT, "rand.snap", lambda t: "ready" in t)
    if not snap:
        return fail(name, "could not make the template", tvm.out, tvm.err)
    seen = {}
    for i, mode in enumerate(["template", "template", "template", "eager", "lazy"]):
        inp = path("x.in")
        open(inp, "w").write("x\n")
        vm = restore(snap, mode, stdin=open(inp), api=False)
        try:
            rc = vm.p.wait(30)
        except subprocess.TimeoutExpired:
            vm.kill()
            rc = None
        lines = [l for l in vm.text().splitlines() if l.startswith("rand ")]
        if rc != 0 or len(lines) != 1 or "FAIL" in lines[0]:
            return fail(name, "clone %d (%s): status %s, output %r" % (i, mode, rc, lines), vm.err)
        for kv in lines[0].split()[1:]:
            if kv in seen:
                return fail(name, "clone %d (%s) repeats %s of clone %d" % (i, mode, kv, seen[kv]))
            seen[kv] = i
    ok("%s (5 clones, all random output distinct)" % name)


# ---------------------------------------------------------------- diff


# The template holds 4 MiB of random bytes in a tmpfs file: memory a full
# snapshot has to store and a clone's diff does not (the rest of a small
# guest's memory fits in a few chunks, which the clone dirties anyway).
DIFF_SCRIPT = ('head -c 4194304 /dev/urandom >/tmp/ballast; echo ready; n=0; '
               'while read l; do n=$((n+1)); echo "got $n $l"; done')


def case_later():
    """Each way: with KILN_SNAP_CHECK_WRITTEN=1 the VMM reads the chunks the
    log calls unwritten and fails the snapshot if one changed (correct);
    without, it copies them unread (used: counted in chunks.unwritten)."""
    name = "later"
    unread = []
    for check in ("1", "0"):
        r, w = os.pipe()
        vm = VM(["--", "/bin/sh", "-c", DIFF_SCRIPT], stdin=r,
                env=dict(os.environ, KILN_SNAP_CHECK_WRITTEN=check))
        os.close(r)
        if not vm.wait_for(lambda t: "ready" in t):
            os.close(w)
            return fail(name, "the guest did not start", vm.out, vm.err)
        # A booted VM's RAM logs writes only from its first snapshot on.
        snaps = [vm.api({"op": "snapshot", "path": path("later%d.snap" % i), "no_fsync": True})
                 for i in range(2)]
        os.write(w, b"x\n")
        alive = vm.wait_for(lambda t: "got 1 x" in t, 5)
        os.close(w)
        rc = vm.stop()
        if not alive or rc != 0 or not all(r.get("ok") for r in snaps):
            return fail(name, "check %s: snapshots %s, answer after them %s, exit status %s"
                        % (check, snaps, bool(alive), rc), vm.err)
        unread.append([r["chunks"]["unwritten"] for r in snaps])
    if unread[0] != [0, 0] or unread[1][0] != 0 or unread[1][1] < 16:
        return fail(name, "chunks copied unread (checked, then not): %s" % unread)
    ok("%s (the second snapshot copied %d chunks unread, the first none)" % (name, unread[1][1]))


def case_killed():
    name = "killed"
    snap = path("killed.snap")
    vm = VM(["--", "/bin/sh", "-c", STATUS_SCRIPT])
    if not vm.wait_for(lambda t: len(status_lines(t)) >= 2):
        return fail(name, "the guest did not start", vm.out, vm.err)
    secret = status_lines(vm.text())[0]["secret"]
    appended = 0
    for rnd in range(6):
        for i in range(4):
            r = vm.api({"op": "snapshot", "path": snap})
            if not r.get("ok"):
                return fail(name, "round %d: snapshot: %s" % (rnd, r), vm.err)
            appended += bool(r.get("appended"))
            time.sleep(0.1)
        last_n = int(status_lines(vm.text())[-1]["n"])
        # One more, the VMM killed while it writes it.
        vm.sock.sendall(json.dumps({"op": "snapshot", "path": snap}).encode() + b"\n")
        time.sleep(random.uniform(0, 0.015))
        vm.kill()
        mode = ("eager", "lazy")[rnd % 2]
        vm = restore(snap, mode)
        if not vm.wait_for(lambda t: len(status_lines(t)) >= 2):
            return fail(name, "round %d (%s): no status after the restore" % (rnd, mode),
                        vm.out, vm.err)
        first = status_lines(vm.text())[0]
        if first["secret"] != secret or not last_n - 2 <= int(first["n"]) <= last_n + 2:
            return fail(name, "round %d: after the restore status %s (secret %s), before the "
                        "kill %d (secret %s)" % (rnd, first["n"], first["secret"], last_n, secret),
                        vm.out)
    vm.stop()
    if appended < 12:
        return fail(name, "only %d of 24 later snapshots were added to the file" % appended)
    ok("%s (6 kills mid-snapshot, each restored; %d of 24 later snapshots appended)"
       % (name, appended))


# ---------------------------------------------------------------- abi

def kernel_with_version(version):
    """A copy of KERNEL whose boot note says another KILN_BOOT_VERSION."""
    boot_h = open(os.path.join(os.path.dirname(__file__), "../../include/kiln/boot.h")).read()
    cur = int(re.search(r"#define KILN_BOOT_VERSION (\d+)", boot_h).group(1))
    data = bytearray(open(KERNEL, "rb").read())
    note = (0x4b494c4e).to_bytes(4, "little") + cur.to_bytes(4, "little")
    at = data.find(note)
    if at < 0 or data.find(note, at + 1) >= 0:
        return None, cur
    data[at + 4:at + 8] = version.to_bytes(4, "little")
    out = path("kernel-v%d" % version)
    open(out, "wb").write(data)
    return out, cur


def case_abi():
    """A kernel of the oldest boot ABI the VMM still serves (what kilnd
    keeps pinned for snapshots taken before an upgrade) boots, its snapshot
    records that version and restores; versions outside are refused."""
    name = "abi"
    boot_h = open(os.path.join(os.path.dirname(__file__), "../../include/kiln/boot.h")).read()
    oldest = int(re.search(r"#define KILN_BOOT_VERSION_MIN (\d+)", boot_h).group(1))
    old, cur = kernel_with_version(oldest)
    if not old:
        return fail(name, "the kernel's boot note (version %d) was not found once" % cur)
    # (No console input: a restored VM's stdin is /dev/null.)
    vm = VM(["--", "/bin/sh", "-c", "echo ready; while :; do sleep 1; done"],
            boot=["--kernel", old, "--initrd", INITRD])
    if not vm.wait_for(lambda t: "ready" in t):
        return fail(name, "a version %d kernel did not boot" % oldest, vm.out, vm.err)
    res = vm.api({"op": "snapshot", "path": path("abi.snap"), "resume": False, "no_fsync": True})
    vm.kill()
    insp = subprocess.run([INSPECT, "inspect", path("abi.snap")], capture_output=True, text=True,
                          timeout=60)
    if not res.get("ok") or not re.search(r"boot ABI\s+%d\b" % oldest, insp.stdout):
        return fail(name, "snapshot %s; inspect says %s" % (res, insp.stdout[-300:]), vm.err)
    back = restore(path("abi.snap"), boot=["--kernel", old, "--initrd", INITRD])
    try:
        st = back.api({"op": "state"})
    except (OSError, EOFError) as e:
        back.kill()
        return fail(name, "restore of the version %d snapshot: %s" % (oldest, e), back.err)
    rc = back.stop()
    if st.get("state") != "running" or rc not in (0, None):
        return fail(name, "restore of the version %d snapshot: %s, exit %s" % (oldest, st, rc),
                    back.err)
    for bad in (oldest - 1, cur + 1):
        k, _ = kernel_with_version(bad)
        p = subprocess.run([VMM, "--kernel", k, "--initrd", INITRD, "--", "/bin/true"],
                           capture_output=True, text=True, timeout=30)
        if p.returncode == 0 or "wrong magic or version" not in p.stderr:
            return fail(name, "a version %d kernel: exit %d, %s" % (bad, p.returncode,
                                                                 p.stderr[-200:]))
    ok("%s (version %d boots, snapshots as %d and restores; %d and %d are refused)"
       % (name, oldest, oldest, oldest - 1, cur + 1))


def case_diff():
    name = "diff"
    snap, tvm = template(DIFF_SCRIPT, "base.snap", lambda t: "ready" in t)
    if not snap:
        return fail(name, "could not make the template", tvm.out, tvm.err)
    r, w = os.pipe()
    clone = restore(snap, "template", stdin=r)
    os.close(r)
    os.write(w, b"a\n")
    if not clone.wait_for(lambda t: "got 1 a" in t):
        os.close(w)
        return fail(name, "the clone did not run", clone.out, clone.err)
    d = clone.api({"op": "snapshot", "path": path("clone.diff"), "diff": True, "resume": False,
                   "no_fsync": True})
    f = clone.api({"op": "snapshot", "path": path("clone.full"), "resume": False, "no_fsync": True})
    clone.kill()
    os.close(w)
    if not d.get("ok") or not f.get("ok"):
        return fail(name, "snapshots: %s / %s" % (d, f), clone.err)
    if d["file_size"] * 2 > f["file_size"]:
        return fail(name, "the diff (%d bytes) is not much smaller than a full snapshot (%d)"
                    % (d["file_size"], f["file_size"]))
    open(path("b.in"), "w").write("b\n")
    for mode in ["template", "eager", "lazy"]:
        vm = restore(path("clone.diff"), mode, ["--parent", snap], stdin=open(path("b.in")),
                     api=False)
        try:
            rc = vm.p.wait(30)
        except subprocess.TimeoutExpired:
            vm.kill()
            rc = None
        if rc != 0 or "got 2 b" not in vm.text():
            return fail(name, "restoring the diff (%s): status %s" % (mode, rc), vm.out, vm.err)
    vm = restore(path("clone.diff"), "eager", api=False)
    vm.p.wait(20)
    if vm.p.returncode != 1 or "--parent" not in open(vm.err).read():
        return fail(name, "a diff without --parent: status %s" % vm.p.returncode, vm.err)
    ok("%s (diff %d bytes, full %d)" % (name, d["file_size"], f["file_size"]))


# ---------------------------------------------------------------- corrupt


def refuse(name, snap, want, extra=(), kernel=None, initrd=None):
    """kiln-vmm must exit 1 naming the problem; inspect must not crash."""
    cmd = [VMM, "--restore", snap, "--kernel", kernel or KERNEL, "--initrd", initrd or INITRD]
    p = subprocess.run(cmd + list(extra), stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
    err = p.stderr.decode(errors="replace").strip()
    if p.returncode != 1 or want not in err:
        fail("corrupt-" + name, "kiln-vmm status %d, stderr %r (wanted %r)" % (p.returncode, err, want))
        return False
    q = subprocess.run([INSPECT, "inspect", snap], capture_output=True, timeout=60)
    if q.returncode < 0 or q.returncode >= 128:
        fail("corrupt-" + name, "kiln-snapshot inspect crashed (status %d)" % q.returncode)
        return False
    return True


def flip(src, dst, off):
    b = bytearray(open(src, "rb").read())
    b[off] ^= 0x40
    open(dst, "wb").write(b)


def case_corrupt():
    snap, tvm = template(RAND_SCRIPT, "good.snap", lambda t: "ready" in t)
    if not snap:
        return fail("corrupt", "could not make a snapshot", tvm.out, tvm.err)
    data = open(snap, "rb").read()
    insp = subprocess.run([INSPECT, "inspect", snap], capture_output=True, text=True, timeout=60)
    # The layout, from the inspector: section offsets and the data section.
    secs = {}
    for line in insp.stdout.splitlines():
        w = line.split()
        if len(w) >= 6 and w[0].isdigit() and w[1] in ("vcpu", "vm", "device", "memory"):
            kind = w[1] if w[1] != "memory" else "memory " + w[2]
            off = int(w[-3] if kind.startswith("memory") else w[4])
            secs.setdefault(kind, off)
    if "vcpu" not in secs or "memory data" not in secs:
        return fail("corrupt", "cannot read the layout from kiln-snapshot inspect", )
    n = 0
    cases = [("header", 100, "header"), ("section-vcpu", secs["vcpu"] + 200, "vcpu"),
             ("section-device", secs["device"] + 4, "section")]
    for tag, off, want in cases:
        flip(snap, path(tag + ".snap"), off)
        n += refuse(tag, path(tag + ".snap"), "snapshot '")
    # A chunk: found by the restore itself (eager) with its number.
    flip(snap, path("chunk.snap"), secs["memory data"] + 64)
    n += refuse("chunk", path("chunk.snap"), "chunk 0")
    for cut in [0, 7, 300, 700, secs["vcpu"] + 10, secs["memory data"] + 5000, len(data) - 1]:
        open(path("cut.snap"), "wb").write(data[:cut])
        n += refuse("truncated-%d" % cut, path("cut.snap"), "snapshot '")
    # Another kernel build (one byte more) and another initramfs.
    k2, i2 = path("kernel2"), path("initrd2")
    shutil.copy(KERNEL, k2)
    open(k2, "ab").write(b"\0")
    shutil.copy(INITRD, i2)
    open(i2, "ab").write(b"\0" * 512)
    n += refuse("other-kernel", snap, "kernel image differs", kernel=k2)
    n += refuse("other-initramfs", snap, "initramfs differs", initrd=i2)
    n += refuse("other-memory", snap, "memory differs", ["--mem", "512M"])
    n += refuse("other-devices", snap, "device slot 2 differs", ["--vsock", "3," + path("x.sock")])
    n += refuse("not-a-snapshot", KERNEL, "snapshot '")
    if n == len(cases) + 1 + 7 + 5:
        ok("corrupt (%d damaged or mismatched snapshots refused)" % n)


# ---------------------------------------------------------------- api


def case_api():
    name = "api"
    vm = VM(["--", "/bin/sh", "-c", "while :; do echo tick; sleep 0.1; done"])
    if not vm.wait_for(lambda t: "tick" in t):
        return fail(name, "the guest did not start", vm.out, vm.err)
    bad = [b"{nope\n", b"[1,2]\n", b'{"op":42}\n', b'{"op":"frobnicate"}\n',
           b'{"op":"snapshot"}\n', b'{"op":"snapshot","path":"/nonexistent/dir/x"}\n',
           b'{"op":"snapshot","path":"x","level":99}\n', b"x" * 5000 + b"\n"]
    for req in bad:
        r = vm.api(req)
        if r.get("ok") is not False or not r.get("error"):
            return fail(name, "%r got %r" % (req[:40], r), vm.err)
    if vm.api({"op": "state"}).get("state") != "running":
        return fail(name, "the VM is not running after bad requests", vm.err)
    n = vm.text().count("tick")
    if not vm.wait_for(lambda t: t.count("tick") > n + 2, 5):
        return fail(name, "the guest stopped", vm.out, vm.err)
    rc = vm.stop()
    if rc != 0:
        return fail(name, "stop: exit status %s" % rc, vm.err)
    ok("%s (%d malformed requests answered with errors)" % (name, len(bad)))


# ---------------------------------------------------------------- python

PY_SCRIPT = r"""
import os, time
secret = os.urandom(8).hex()
f = open("/tmp/py.log", "w+")
n = 0
while True:
    n += 1
    f.write("%d\n" % n)
    f.flush()
    f.seek(0)
    lines = len(f.read().split())
    print("P n=%d lines=%d secret=%s t=%d" % (n, lines, secret, time.time()), flush=True)
    time.sleep(0.2)
"""


def py_lines(text):
    return [dict(kv.split("=", 1) for kv in l.split()[1:]) for l in text.splitlines()
            if l.startswith("P n=") and len(l.split()) == 5]


def case_python():
    name = "python"
    boot = ["--kernel", KERNEL, "--image", IMAGE, "--mem", "1G"]
    vm = VM(["--", "/usr/bin/python3", "-c", PY_SCRIPT], boot=boot)
    if not vm.wait_for(lambda t: len(py_lines(t)) >= 2, 120):
        return fail(name, "python did not start", vm.out, vm.err)
    outs = [vm.out]
    for cycle in range(10):
        snap = path("py%d.snap" % cycle)
        r = vm.api({"op": "snapshot", "path": snap, "resume": False, "no_fsync": True})
        vm.kill()
        if not r.get("ok"):
            return fail(name, "cycle %d: snapshot: %s" % (cycle, r), vm.err)
        mode = ["eager", "lazy", "template"][cycle % 3]
        vm = VM(["--restore", snap, "--restore-mode", mode, "--template-dir", WORK], boot=boot)
        outs.append(vm.out)
        if not vm.wait_for(lambda t: len(py_lines(t)) >= 2, 30):
            return fail(name, "cycle %d (%s): no output after the restore" % (cycle, mode),
                        vm.out, vm.err)
    vm.stop()
    lines = []
    for f in outs:
        lines += py_lines(open(f, errors="replace").read())
    for prev, cur in zip(lines, lines[1:]):
        if int(cur["n"]) != int(prev["n"]) + 1 or cur["lines"] != cur["n"] or \
                cur["secret"] != lines[0]["secret"]:
            return fail(name, "after P %s: %s" % (prev, cur))
    ok("%s (%d lines from one python3 process over 10 restores)" % (name, len(lines)))


def main():
    try:
        for c in CASES:
            globals()["case_" + c]()
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
