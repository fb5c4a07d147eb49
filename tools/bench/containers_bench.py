#!/usr/bin/env python3
"""kiln beside the containers users would run instead (issue 19), same run.

    containers_bench.py --kilnd SOCK --kilnd-data DIR --docker SOCK --image TAG
                        --root ROOT [--runtimes runc,crun] [--runs N] [--idle N]

Both sides run the very same userland: TAG is the base image's root
(ROOT, from tools/mkimage/extract-root) imported into Docker, and kiln boots
base.erofs made from it. Both are driven through their HTTP APIs over unix
sockets (kilnd's, the Docker Engine's), so no client start-up is counted.
Containers get no network (NetworkMode none; kiln sandboxes have no NIC) and
the limits of a kiln sandbox here: one CPU (NanoCpus) and 512 MiB.

Lines (medians of --runs):
  create -> first exec   kiln: a clone of a template of base (and a cold boot of
                         base, and a clone taken from a warm pool); docker:
                         create + start + exec of `true`
  exec round trip        `true` in a running sandbox / container; the host's own
                         fork+exec+wait of /bin/true beside them
  python data script     tests/integration/data/analysis.py in a running one
  one-shot               kiln create + exec + delete (a template clone, and one
                         from a warm pool) against bubblewrap --unshare-all
                         running `true` in a chroot of ROOT
  creates per second     --idle at once, from as many threads
  idle memory            --idle sandboxes each holding python3 with pandas
                         imported: PSS per sandbox (kiln: the VMM processes,
                         plus a share of the template's memory file in the page
                         cache; docker: the container's processes and its
                         shim), and how many fit in 20 GiB
  pause + resume         kiln: to a snapshot on disk and back; docker: the
                         cgroup freezer (memory stays in RAM)
"""
import argparse
import http.client
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ANALYSIS = os.path.join(HERE, "..", "..", "tests", "integration", "data", "analysis.py")
IDLE_PY = ("import os, time, numpy, pandas\n"
           "open('/tmp/ready', 'w').close()\n"
           "time.sleep(1e6)\n")
GIB20 = 20 << 30
MEM_MB = 512  # each sandbox's and container's memory


class UnixHTTP(http.client.HTTPConnection):
    def __init__(self, path, timeout=300):
        super().__init__("localhost", timeout=timeout)
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.path)


class Api:
    """One kept-alive connection per thread to an HTTP API on a unix socket."""

    def __init__(self, path):
        self.path = path
        self.local = threading.local()

    def call(self, method, url, body=None, raw=None, ctype="application/json"):
        for attempt in range(2):
            c = getattr(self.local, "c", None)
            if c is None:
                c = self.local.c = UnixHTTP(self.path)
            try:
                data = raw if raw is not None else (json.dumps(body) if body is not None else None)
                hdrs = {"Content-Type": ctype} if data is not None else {}
                c.request(method, url, body=data, headers=hdrs)
                r = c.getresponse()
                out = r.read()
                return r.status, out
            except (http.client.HTTPException, OSError):
                c.close()
                self.local.c = None
                if attempt:
                    raise
        raise RuntimeError("unreachable")

    def json(self, method, url, body=None, want=(200, 201, 204)):
        st, out = self.call(method, url, body)
        if st not in want:
            raise RuntimeError("%s %s: %d %s" % (method, url, st, out[:300]))
        return json.loads(out) if out.strip() else None


def median_ms(xs):
    return statistics.median(xs) * 1000


def timed(fn):
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


# ---------------------------------------------------------------- kiln


class Kiln:
    def __init__(self, sock, data):
        self.api = Api(sock)
        self.data = data

    def template(self, name, warmup, pool=0):
        self.api.json("POST", "/templates", {"name": name, "image": "base", "warmup": warmup,
                                             "memoryMB": MEM_MB, "pool": pool})

    def pool_ready(self, name):
        """Waits (at most 10 s) until the template's pool is full, so that no
        refill competes with what is timed next."""
        for _ in range(100):
            t = self.api.json("GET", "/templates/" + name)
            if t.get("poolReady", 0) >= t.get("pool", 1):
                return
            time.sleep(0.1)
        raise RuntimeError("template %s: its pool was not refilled in 10 s" % name)

    def create(self, body):
        return self.api.json("POST", "/sandboxes", body)["sandboxID"]

    def exec(self, sid, cmd):
        st, out = self.api.call("POST", "/sandboxes/%s/exec" % sid, {"cmd": cmd})
        if st != 200 or b'"exitCode":0' not in out:
            raise RuntimeError("kiln exec %s: %d %s" % (cmd, st, out[-300:]))
        return out

    def put(self, sid, path, data):
        st, out = self.api.call("PUT", "/sandboxes/%s/files?path=%s" % (sid, path), raw=data,
                                ctype="application/octet-stream")
        if st not in (200, 201, 204):
            raise RuntimeError("kiln put: %d %s" % (st, out[:200]))

    def delete(self, sid):
        self.api.call("DELETE", "/sandboxes/" + sid)

    def pause(self, sid):
        self.api.json("POST", "/sandboxes/%s/pause" % sid)

    def resume(self, sid):
        self.api.json("POST", "/sandboxes/%s/resume" % sid, {})

    def pids(self, sid):
        with open(os.path.join(self.data, "sandboxes", sid, "run", "vmm.pid")) as f:
            return [int(f.read().split()[0])]


# ---------------------------------------------------------------- docker


class Docker:
    def __init__(self, sock, image, runtime):
        self.api = Api(sock)
        self.image = image
        self.runtime = runtime

    def create(self, cmd, binds=None):
        # the limits a kiln sandbox has here: one vCPU, MEM_MB of memory
        host = {"NetworkMode": "none", "Runtime": self.runtime, "NanoCpus": 10**9,
                "Memory": MEM_MB << 20}
        if binds:
            host["Binds"] = binds
        j = self.api.json("POST", "/containers/create",
                          {"Image": self.image, "Cmd": cmd, "HostConfig": host})
        cid = j["Id"]
        self.api.json("POST", "/containers/%s/start" % cid)
        return cid

    def exec(self, cid, cmd):
        j = self.api.json("POST", "/containers/%s/exec" % cid,
                          {"Cmd": cmd, "AttachStdout": True, "AttachStderr": True})
        st, out = self.api.call("POST", "/exec/%s/start" % j["Id"], {"Detach": False, "Tty": False})
        if st != 200:
            raise RuntimeError("docker exec start: %d %s" % (st, out[:200]))
        code = self.api.json("GET", "/exec/%s/json" % j["Id"])["ExitCode"]
        if code != 0:
            raise RuntimeError("docker exec %s: exit %s: %s" % (cmd, code, out[-300:]))
        return out

    def delete(self, cid):
        self.api.call("DELETE", "/containers/%s?force=1" % cid)

    def pause(self, cid):
        self.api.json("POST", "/containers/%s/pause" % cid)

    def resume(self, cid):
        self.api.json("POST", "/containers/%s/unpause" % cid)

    def pids(self, cid):
        top = self.api.json("GET", "/containers/%s/top?ps_args=-o%%20pid" % cid)
        pids = [int(p[0]) for p in top.get("Processes") or []]
        # the container's shim (containerd-shim-runc-v2 -id ID)
        out = subprocess.run(["pgrep", "-f", "containerd-shim.*-id %s" % cid],
                             capture_output=True, text=True).stdout.split()
        return pids + [int(p) for p in out]


# ---------------------------------------------------------------- lines


def pss_kib(pid):
    try:
        with open("/proc/%d/smaps_rollup" % pid) as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def line(name, *cols):
    print("  %-34s %s" % (name, "   ".join(cols)))


def ms(v):
    return "%8.1f ms" % v if v is not None else "       -   "


def ratio(a, b):
    return "%.2fx" % (a / b) if a and b else "-"


def host_spawn(runs):
    return median_ms([timed(lambda: subprocess.run(["/bin/true"])) for _ in range(runs * 5)])


def bench_create_exec(side, runs, make, ready=lambda: None):
    xs = []
    for _ in range(runs):
        ready()
        t = time.perf_counter()
        sid = make()
        side.exec(sid, ["true"])
        xs.append(time.perf_counter() - t)
        side.delete(sid)
    return median_ms(xs)


def bench_exec(side, sid, runs):
    side.exec(sid, ["true"])
    return median_ms([timed(lambda: side.exec(sid, ["true"])) for _ in range(runs * 3)])


def bench_analysis(side, sid, runs, path):
    side.exec(sid, ["python3", path, "/tmp/chart.png"])  # a first run warms caches
    return median_ms([timed(lambda: side.exec(sid, ["python3", path, "/tmp/chart.png"]))
                      for _ in range(runs)])


def bench_burst(n, make, delete):
    ids, errs = [None] * n, []

    def one(i):
        try:
            ids[i] = make()
        except Exception as e:  # noqa: BLE001 (reported below)
            errs.append(e)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    t = time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    dt = time.perf_counter() - t
    if errs:
        raise RuntimeError("burst: %s" % errs[0])
    return n / dt, ids


def idle_pss(side, ids, wait, shared=None):
    for sid in ids:
        wait(sid)
    time.sleep(2)  # page cache and lazy faults settle
    total = sum(pss_kib(p) for sid in ids for p in side.pids(sid))
    # memory no process maps yet that they all share (kiln: the template's
    # memory file in the page cache, which clones map as they touch it)
    return (total + (shared() if shared else 0)) / len(ids)


def resident_kib(paths):
    """Page cache held by these files (fincore), KiB."""
    kib = 0
    for p in paths:
        out = subprocess.run(["fincore", "-b", "-n", "-o", "RES", p], capture_output=True,
                             text=True).stdout.split()
        kib += int(out[0]) // 1024 if out and out[0].isdigit() else 0
    return kib


def bench_pause(side, sid, runs):
    p, r = [], []
    for _ in range(runs):
        p.append(timed(lambda: side.pause(sid)))
        r.append(timed(lambda: side.resume(sid)))
        side.exec(sid, ["true"])
    return median_ms(p), median_ms(r)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kilnd", required=True)
    ap.add_argument("--kilnd-data", required=True)
    ap.add_argument("--docker", required=True)
    ap.add_argument("--image", required=True)
    ap.add_argument("--root", required=True)
    ap.add_argument("--runtimes", default="runc")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--idle", type=int, default=10)
    a = ap.parse_args()
    runs = max(3, a.runs)
    kiln = Kiln(a.kilnd, a.kilnd_data)
    dockers = []
    for rt in a.runtimes.split(","):
        d = Docker(a.docker, a.image, rt)
        try:  # a runtime this host cannot run is left out, with the reason
            d.delete(d.create(["true"]))
            dockers.append(d)
        except RuntimeError as e:
            print("containers bench: docker/%s left out: %s" % (rt, str(e)[-160:].strip()))
    if not dockers:
        raise RuntimeError("no container runtime works here")
    analysis = open(ANALYSIS, "rb").read()
    idle_warm = ["sh", "-c", "python3 -c \"$0\" </dev/null >/dev/null 2>&1 & "
                 "while [ ! -e /tmp/ready ]; do sleep 0.02; done", IDLE_PY]
    print("containers bench: kiln vs %s on the same root (%s), %d runs"
          % (", ".join("docker/" + d.runtime for d in dockers), os.path.basename(a.root), runs))
    kiln.template("cbpy", ["true"])
    kiln.template("cbidle", idle_warm)
    kiln.template("cbpool", ["true"], pool=2)
    names = ["kiln"] + ["docker/" + d.runtime for d in dockers]
    print("  %-34s %s" % ("", "   ".join("%11s" % n for n in names)) + "   kiln/" + names[-1])

    # create -> first exec
    k = bench_create_exec(kiln, runs, lambda: kiln.create({"templateID": "cbpy"}))
    kc = bench_create_exec(kiln, max(3, runs // 3),
                           lambda: kiln.create({"image": "base", "memoryMB": MEM_MB}))
    ds = [bench_create_exec(d, runs, lambda d=d: d.create(["sleep", "infinity"])) for d in dockers]
    line("create -> first exec", *[ms(v) for v in [k] + ds], ratio(k, ds[-1]))
    line("  kiln from a cold boot of base", ms(kc))
    kp = bench_create_exec(kiln, runs, lambda: kiln.create({"templateID": "cbpool"}),
                           lambda: kiln.pool_ready("cbpool"))
    line("  kiln from the template's warm pool", ms(kp))

    # exec round trip, python script, pause/resume on one running each
    ks = kiln.create({"templateID": "cbpy"})
    kiln.put(ks, "/tmp/analysis.py", analysis)
    dcs = [d.create(["sleep", "infinity"], [os.path.abspath(ANALYSIS) + ":/tmp/analysis.py:ro"])
           for d in dockers]
    try:
        k = bench_exec(kiln, ks, runs)
        ds = [bench_exec(d, c, runs) for d, c in zip(dockers, dcs)]
        line("exec round trip (true)", *[ms(v) for v in [k] + ds], ratio(k, ds[-1]))
        line("  the host's own fork+exec+wait", ms(host_spawn(runs)))
        k = bench_analysis(kiln, ks, max(3, runs // 2), "/tmp/analysis.py")
        ds = [bench_analysis(d, c, max(3, runs // 2), "/tmp/analysis.py")
              for d, c in zip(dockers, dcs)]
        line("python data script (analysis.py)", *[ms(v) for v in [k] + ds], ratio(k, ds[-1]))
        kp = bench_pause(kiln, ks, max(3, runs // 2))
        dp = [bench_pause(d, c, max(3, runs // 2)) for d, c in zip(dockers, dcs)]
        line("pause (kiln: to disk)", *[ms(v) for v in [kp[0]] + [x[0] for x in dp]],
             ratio(kp[0], dp[-1][0]))
        line("resume", *[ms(v) for v in [kp[1]] + [x[1] for x in dp]], ratio(kp[1], dp[-1][1]))
    finally:
        kiln.delete(ks)
        for d, c in zip(dockers, dcs):
            d.delete(c)

    # one-shot against bubblewrap
    bw = shutil.which("bwrap")
    k = median_ms([timed(lambda: one_shot(kiln, "cbpy")) for _ in range(runs)])
    kp = []
    for _ in range(runs):
        kiln.pool_ready("cbpool")
        kp.append(timed(lambda: one_shot(kiln, "cbpool")))
    kp = median_ms(kp)
    kiln.api.call("DELETE", "/templates/cbpool")
    if bw:
        b = median_ms([timed(lambda: subprocess.run(
            [bw, "--unshare-all", "--die-with-parent", "--ro-bind", a.root, "/", "--proc", "/proc",
             "--dev", "/dev", "--tmpfs", "/tmp", "/bin/true"], check=True)) for _ in range(runs)])
        line("one-shot true (create+exec+delete)", ms(k), "bubblewrap " + ms(b).strip(),
             "kiln/bubblewrap " + ratio(k, b))
        line("  kiln from the template's warm pool", ms(kp), "", "kiln/bubblewrap " + ratio(kp, b))
    else:
        line("one-shot true (create+exec+delete)", ms(k), "bubblewrap not installed")
        line("  kiln from the template's warm pool", ms(kp))

    # creates per second and idle memory
    n = a.idle
    rate, kids = bench_burst(n, lambda: kiln.create({"templateID": "cbidle"}), kiln.delete)
    try:
        tdir = os.path.join(a.kilnd_data, "templates", "cbidle")
        mems = [os.path.join(tdir, f) for f in os.listdir(tdir) if f.endswith(".mem")]
        kpss = idle_pss(kiln, kids, lambda sid: None, lambda: resident_kib(mems))
    finally:
        for sid in kids:
            kiln.delete(sid)
    rates, psss = [], []
    for d in dockers:
        r, dids = bench_burst(n, lambda d=d: d.create(["python3", "-c", IDLE_PY]), d.delete)
        try:
            psss.append(idle_pss(d, dids, lambda cid, d=d: wait_ready(d, cid)))
        finally:
            for cid in dids:
                d.delete(cid)
        rates.append(r)
    line("creates per second (%d at once)" % n, *["%8.1f/s  " % v for v in [rate] + rates],
         ratio(rate, rates[-1]))
    line("idle python+pandas: PSS each (%d)" % n, *["%8.1f MiB" % (v / 1024) for v in [kpss] + psss],
         ratio(kpss, psss[-1]))
    line("  that many in 20 GiB", *["%10d " % (GIB20 // (v * 1024)) for v in [kpss] + psss])
    print("  (docker pause freezes the processes in memory; kiln's pause writes the VM to disk"
          " and frees its memory)")


def one_shot(kiln, template):
    sid = kiln.create({"templateID": template})
    kiln.exec(sid, ["true"])
    kiln.delete(sid)


def wait_ready(d, cid):
    for _ in range(600):
        try:
            d.exec(cid, ["test", "-e", "/tmp/ready"])
            return
        except RuntimeError:
            time.sleep(0.1)
    raise RuntimeError("container %s: python did not start" % cid[:12])


if __name__ == "__main__":
    try:
        main()
    except (RuntimeError, OSError) as e:
        print("containers bench: %s" % e)
        sys.exit(1)
