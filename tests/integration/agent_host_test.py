#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Host-side test of kiln-agent: runs the agent on this machine in unix-socket
mode (--no-init) and drives it as kilnd would, over the protocol of
include/kiln/agent.h (message numbers are read from that header).

    python3 tests/integration/agent_host_test.py AGENT_BINARY [CASE-SUBSTRING...]

Prints one "ok NAME" or "FAIL NAME: why" line per case and exits non-zero if
any case failed or the agent did not exit cleanly (the ASan build reports
leaks and memory errors at exit). Needs root for the uid case (skipped
otherwise) and a working /dev/ptmx for the pty cases.
"""
import errno
import hashlib
import io
import os
import pwd
import re
import shutil
import signal
import socket
import stat
import struct
import tarfile
import subprocess
import sys
import tempfile
import threading
import time
import traceback

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def load_header():
    text = open(os.path.join(ROOT, "include/kiln/agent.h")).read()
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    k = {}
    for m in re.finditer(r"enum\s+(\w+)\s*\{(.*?)\}", text, re.S):
        val = 0
        for item in m.group(2).split(","):
            item = item.strip()
            if not item:
                continue
            name, _, v = item.partition("=")
            if v.strip():
                val = int(v.strip(), 0)
            k[name.strip()] = val
            val += 1
    for m in re.finditer(r"#define\s+(KILN_\w+)\s+\(?(0x[0-9a-fA-F]+|\d+)u?(?:\s*<<\s*(\d+))?\)?", text):
        k[m.group(1)] = int(m.group(2), 0) << int(m.group(3) or 0)
    return k


K = load_header()
globals().update(K)  # KILN_MSG_HELLO, KILN_STREAM_EXEC, KILN_FRAME_MAX, ...
HELLO_FLAGS = KILN_HELLO_USERS | KILN_HELLO_PROCS | KILN_HELLO_PEER  # what every HELLO answer says


def u16(v):
    return struct.pack("<H", v)


def u32(v):
    return struct.pack("<I", v & 0xFFFFFFFF)


def sstr(s):
    if isinstance(s, str):
        s = s.encode()
    return u32(len(s)) + s


def slist(items):
    return u32(len(items)) + b"".join(sstr(i) for i in items)


def start_payload(argv, env=(), cwd="", uid=0, timeout_ms=0, cols=0, rows=0, user=None,
                  user_flags=0, rlimits=None, root=None, tag=None, pidns=None):
    p = (slist(argv) + slist(list(env)) + sstr(cwd) + u32(uid) + u32(timeout_ms)
         + u16(cols) + u16(rows))
    if pidns is not None:  # after a tag trailer, which may be 0
        tag = tag or 0
    if tag is not None:  # after a root trailer, which may be empty
        root = root or ""
    if root is not None:  # after an rlimits trailer, which may have none
        rlimits = rlimits or []
    if rlimits is not None:  # after a user trailer, which may name nobody
        user = user or ""
    if user is not None:
        p += sstr(user) + u32(user_flags)
    if rlimits is not None:
        p += u32(len(rlimits)) + b"".join(
            struct.pack("<IQQ", r, soft, hard) for r, soft, hard in rlimits)
    if root is not None:
        p += sstr(root)
    if tag is not None:
        p += struct.pack("<Q", tag)
    if pidns is not None:
        p += sstr(pidns)
    return p


class Conn:
    def __init__(self, path, kind=None, version=KILN_AGENT_VERSION, timeout=30):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.settimeout(timeout)
        self.s.connect(path)
        self.rbuf = b""
        if kind is not None:
            self.send(KILN_MSG_HELLO, u32(version) + u32(kind))
            t, p = self.expect_frame()
            if t != KILN_MSG_HELLO:
                raise AssertionError("HELLO answered with %s" % describe(t, p))
            if struct.unpack("<II", p) != (KILN_AGENT_VERSION, HELLO_FLAGS):
                raise AssertionError("bad HELLO payload %r" % p)

    def send(self, t, payload=b"", flags=0):
        self.s.sendall(struct.pack("<IHH", len(payload), t, flags) + payload)

    def raw(self, b):
        self.s.sendall(b)

    def _fill(self, n):
        while len(self.rbuf) < n:
            x = self.s.recv(1 << 20)
            if not x:
                return False
            self.rbuf += x
        return True

    def recv(self):
        """(type, payload), or None at EOF."""
        if not self._fill(8):
            if self.rbuf:
                raise AssertionError("EOF inside a frame header")
            return None
        ln, t, fl = struct.unpack("<IHH", self.rbuf[:8])
        if ln > KILN_FRAME_MAX:
            raise AssertionError("agent sent len %d" % ln)
        if not self._fill(8 + ln):
            raise AssertionError("EOF inside a frame payload")
        p = self.rbuf[8:8 + ln]
        self.rbuf = self.rbuf[8 + ln:]
        return t, p

    def expect_frame(self):
        f = self.recv()
        if f is None:
            raise AssertionError("unexpected EOF")
        return f

    def expect_eof(self):
        f = self.recv()
        if f is not None:
            raise AssertionError("expected EOF, got %s" % describe(*f))

    def close(self):
        self.s.close()


NAMES = {v: k for k, v in K.items() if k.startswith("KILN_MSG_")}


def parse_error(p):
    err, n = struct.unpack("<II", p[:8])
    return err, p[8:8 + n].decode(errors="replace")


def describe(t, p):
    if t == KILN_MSG_ERROR:
        return "ERROR %s %r" % parse_error(p)
    return "%s(%d bytes)" % (NAMES.get(t, t), len(p))


def parse_stat(p):
    mode, size, mtime = struct.unpack("<IQq", p[:20])
    n = struct.unpack("<I", p[20:24])[0]
    name = p[24:24 + n].decode()
    o = 24 + n
    m = struct.unpack("<I", p[o:o + 4])[0]
    link = p[o + 4:o + 4 + m].decode()
    o += 4 + m
    assert o + 4 == len(p), "STAT payload length"
    nsec = struct.unpack("<I", p[o:o + 4])[0]
    assert nsec < 1000000000, "STAT mtime nanoseconds"
    return dict(mode=mode, size=size, mtime=mtime, nsec=nsec, name=name, link=link)


class Result:
    def __init__(self):
        self.pid = None
        self.out = bytearray()
        self.err = bytearray()
        self.exit = None
        self.error = None
        self.order = []


def collect(c, r, until_exit=True):
    while True:
        f = c.recv()
        if f is None:
            return r
        t, p = f
        r.order.append(t)
        if t == KILN_MSG_STARTED:
            assert r.pid is None, "STARTED twice"
            r.pid = struct.unpack("<I", p)[0]
        elif t == KILN_MSG_STDOUT:
            assert r.pid is not None, "output before STARTED"
            assert 0 < len(p) <= KILN_DATA_CHUNK, "data frame of %d bytes" % len(p)
            r.out += p
        elif t == KILN_MSG_STDERR:
            assert r.pid is not None, "output before STARTED"
            r.err += p
        elif t == KILN_MSG_EXIT:
            r.exit = struct.unpack("<iII", p)
            c.expect_eof()
            return r
        elif t == KILN_MSG_ERROR:
            r.error = parse_error(p)
            c.expect_eof()
            return r
        else:
            raise AssertionError("unexpected %s" % describe(t, p))


class Agent:
    """The agent under test. With pid1, it runs as PID 1 of new PID, mount and
    UTS namespaces, with its boot setup (mounts stay in the namespace)."""

    def __init__(self, binary, workdir, pid1=False):
        self.path = os.path.join(workdir, "agent.sock")
        self.log = open(os.path.join(workdir, "agent.log"), "w+")
        self.pid1 = pid1
        env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:exitcode=99")
        argv = [binary, "--listen", "unix:" + self.path]
        if pid1:
            argv = ["unshare", "--pid", "--mount", "--uts", "--propagation", "private",
                    "--kill-child"] + argv
        else:
            argv.append("--no-init")
        self.p = subprocess.Popen(argv, stderr=self.log, stdout=self.log, env=env, cwd=workdir)
        for _ in range(500):  # until it accepts: the socket file exists before listen()
            try:
                socket.socket(socket.AF_UNIX).connect(self.path)
                break
            except OSError:
                time.sleep(0.02)
        else:
            raise RuntimeError("agent did not start")
        self.pid = self.p.pid
        if pid1:  # the agent is unshare's only child
            with open("/proc/%d/task/%d/children" % (self.p.pid, self.p.pid)) as f:
                self.pid = int(f.read().split()[0])

    def conn(self, kind=None, **kw):
        return Conn(self.path, kind, **kw)

    def run(self, argv, stdin=None, kind=KILN_STREAM_EXEC, **kw):
        c = self.conn(kind)
        c.send(KILN_MSG_START, start_payload(argv, **kw))
        if stdin is not None:
            if stdin:
                c.send(KILN_MSG_STDIN, stdin)
            c.send(KILN_MSG_STDIN_EOF)
        return collect(c, Result())

    def alive(self):
        return self.p.poll() is None

    def stop(self):
        if self.pid1:  # PID 1 ignores SIGTERM; unshare's death kills the namespace
            self.p.kill()
            self.p.wait(30)
            wait_for(lambda: not os.path.exists("/proc/%d" % self.pid), what="the agent to die")
            return 0
        self.p.send_signal(signal.SIGTERM)
        try:
            return self.p.wait(30)
        except subprocess.TimeoutExpired:
            self.p.kill()
            return "hung"

    def rss_kb(self):
        for line in open("/proc/%d/status" % self.pid):
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        return 0


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


def eq(got, want, what):
    if got != want:
        g, w = repr(got), repr(want)
        raise AssertionError("%s: got %s, want %s" % (what, g[:300], w[:300]))


def agent_limit(name):
    text = open(os.path.join(ROOT, "initramfs/agent/agent.h")).read()
    return int(re.search(r"#define\s+%s\s+(\d+)" % name, text).group(1))


def wait_for(pred, secs=5.0, what="condition"):
    end = time.monotonic() + secs
    while time.monotonic() < end:
        if pred():
            return
        time.sleep(0.02)
    raise AssertionError("timed out waiting for " + what)


def host_pid(a, pid):
    """The host's pid of a process the agent reports (pid namespaces in PID-1 mode)."""
    if not a.pid1:
        return pid
    ns = os.readlink("/proc/%d/ns/pid" % a.pid)
    for p in os.listdir("/proc"):
        try:
            if not p.isdigit() or os.readlink("/proc/%s/ns/pid" % p) != ns:
                continue
            for line in open("/proc/%s/status" % p):
                if line.startswith("NSpid:") and int(line.split()[-1]) == pid:
                    return int(p)
        except OSError:
            continue
    return None


def pid_gone(a, pid):
    hp = host_pid(a, pid)
    try:
        with open("/proc/%d/stat" % hp) as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"  # a zombie of someone else
    except (OSError, TypeError):  # gone, or exiting right now (ESRCH)
        return True


def start(agent, argv, kind=KILN_STREAM_EXEC, **kw):
    """A connection with a started command; returns (conn, Result)."""
    c = agent.conn(kind)
    c.send(KILN_MSG_START, start_payload(argv, **kw))
    r = Result()
    t, p = c.expect_frame()
    check(t == KILN_MSG_STARTED, "expected STARTED, got %s" % describe(t, p))
    r.pid = struct.unpack("<I", p)[0]
    return c, r


def read_until(c, r, needle, secs=10):
    """Read output frames until needle shows up in stdout."""
    c.s.settimeout(secs)
    while needle not in r.out:
        t, p = c.expect_frame()
        check(t == KILN_MSG_STDOUT, "expected STDOUT, got %s" % describe(t, p))
        r.out += p


def expect_error(c, err, substr=None):
    t, p = c.expect_frame()
    check(t == KILN_MSG_ERROR, "expected ERROR, got %s" % describe(t, p))
    e, msg = parse_error(p)
    eq((errno.errorcode.get(e, e), msg), (errno.errorcode.get(err, err), msg), "errno")
    if substr:
        check(substr in msg, "message %r lacks %r" % (msg, substr))
    c.expect_eof()
    return msg


def expect_done(c):
    t, p = c.expect_frame()
    check(t == KILN_MSG_DONE and not p, "expected DONE, got %s" % describe(t, p))
    c.expect_eof()


def file_req(agent, op, path, extra=b""):
    c = agent.conn(KILN_STREAM_FILE)
    c.send(KILN_MSG_FILE_REQUEST, u32(op) + sstr(path) + extra)
    return c


def upload(agent, path, data, mode=0o644, chunk=KILN_DATA_CHUNK, done=True):
    c = file_req(agent, KILN_FILE_WRITE, path, u32(mode))
    view = memoryview(data)
    for i in range(0, len(data), chunk):
        c.send(KILN_MSG_DATA, bytes(view[i:i + chunk]))
    if done:
        c.send(KILN_MSG_DONE)
    return c


def download(agent, path):
    """(stat, sha256 hex, length) of a READ, streamed."""
    c = file_req(agent, KILN_FILE_READ, path)
    t, p = c.expect_frame()
    check(t == KILN_MSG_STAT, "expected STAT, got %s" % describe(t, p))
    st = parse_stat(p)
    h, n = hashlib.sha256(), 0
    while True:
        t, p = c.expect_frame()
        if t == KILN_MSG_DONE:
            break
        check(t == KILN_MSG_DATA and 0 < len(p) <= KILN_DATA_CHUNK, "bad %s" % describe(t, p))
        h.update(p)
        n += len(p)
    c.expect_eof()
    return st, h.hexdigest(), n


def no_temp_files(d):
    left = [f for f in os.listdir(d) if f.startswith(".kiln-upload.")]
    eq(left, [], "temporary files left in " + d)


# ---------------------------------------------------------------- exec

def case_exec_echo(a, d):
    r = a.run(["echo", "hi"])
    eq(r.error, None, "error")
    eq(bytes(r.out), b"hi\n", "stdout")
    eq(r.exit, (0, 0, 0), "exit")
    eq(r.order[0], KILN_MSG_STARTED, "first frame")


def case_exec_interleaved(a, d):
    script = 'i=0; while [ $i -lt 300 ]; do echo out$i; echo err$i >&2; i=$((i+1)); done'
    r = a.run(["sh", "-c", script])
    eq(bytes(r.out), b"".join(b"out%d\n" % i for i in range(300)), "stdout")
    eq(bytes(r.err), b"".join(b"err%d\n" % i for i in range(300)), "stderr")
    eq(r.exit, (0, 0, 0), "exit")


def case_exit_codes(a, d):
    for code in (0, 3, 255):
        eq(a.run(["sh", "-c", "exit %d" % code]).exit, (code, 0, 0), "exit %d" % code)


def case_exit_signal(a, d):
    eq(a.run(["sh", "-c", "kill -TERM $$"]).exit, (-1, 15, 0), "exit")


def case_env_cwd(a, d):
    r = a.run(["sh", "-c", 'echo "$FOO"; pwd; echo "$HOME"'], env=["FOO=bar baz", "HOME=/h"],
              cwd="/tmp")
    eq(bytes(r.out), b"bar baz\n/tmp\n/h\n", "stdout")
    # argv[0] is searched in the request's PATH, not the agent's
    r = a.run(["sh", "-c", "true"], env=["PATH=/nonexistent"])
    eq(r.error, (errno.ENOENT, "cannot run 'sh': No such file or directory"), "error")
    r = a.run(["true"], cwd="/nonexistent")
    eq(r.error[0], errno.ENOENT, "errno")
    check("/nonexistent" in r.error[1], "message names the directory: %r" % r.error[1])
    c = a.conn(KILN_STREAM_EXEC)
    c.send(KILN_MSG_START, start_payload(["true"], env=["NOEQUALS"]))
    expect_error(c, errno.EINVAL, "NOEQUALS")


def case_exec_missing(a, d):
    r = a.run(["no-such-program-kiln"])
    eq(r.error, (errno.ENOENT, "cannot run 'no-such-program-kiln': No such file or directory"),
       "error")
    eq(r.pid, None, "STARTED")
    r = a.run(["/nonexistent/prog"])
    eq(r.error[0], errno.ENOENT, "errno")
    r = a.run(["/etc/passwd"])
    eq(r.error[0], errno.EACCES, "errno")


def case_uid(a, d):
    if os.getuid() != 0:
        return "not root"
    r = a.run(["sh", "-c", "id -u; id -g"], uid=65534)
    eq(bytes(r.out), b"65534\n65534\n", "stdout")


def case_rlimits(a, d):
    """START's rlimits trailer: set as root, before the uid change."""
    if os.getuid() != 0:
        return "not root"
    nofile = 7  # RLIMIT_NOFILE
    r = a.run(["sh", "-c", "ulimit -n; ulimit -Hn; id -u"], uid=65534,
              rlimits=[(nofile, 64, 128)])
    eq(bytes(r.out), b"64\n128\n65534\n", "stdout")
    r = a.run(["true"], rlimits=[(99, 1, 1)])
    eq(r.error[0], errno.EINVAL, "an rlimit that is none")
    check("rlimit '99'" in r.error[1], "names it: %s" % r.error[1])
    r = a.run(["true"], rlimits=[(nofile, 64, 32)])
    eq(r.error[0], errno.EINVAL, "soft above hard")
    r = a.run(["true"], rlimits=[(nofile, 64, 64)] * 17)
    eq(r.error[0], errno.EINVAL, "more than 16")


def case_user(a, d):
    """The user trailer: an account of /etc/passwd (the host's here)."""
    if os.getuid() != 0:
        return "not root"
    try:
        pw = pwd.getpwnam("nobody")
    except KeyError:
        return "no user nobody"
    r = a.run(["sh", "-c", 'id -u; id -g; echo "$HOME $USER $LOGNAME"'], user="nobody",
              env=["LOGNAME=asked"])
    want = "%d\n%d\n%s nobody asked\n" % (pw.pw_uid, pw.pw_gid, pw.pw_dir)
    eq(bytes(r.out), want.encode(), "stdout")
    r = a.run(["sh", "-c", "id -u; echo $HOME"], user="root")
    eq(bytes(r.out), b"0\n%s\n" % pwd.getpwnam("root").pw_dir.encode(), "root")
    r = a.run(["true"], user="no-such-user-kiln")
    eq(r.error, (errno.ESRCH, "no user 'no-such-user-kiln' in the sandbox's /etc/passwd"),
       "unknown user")
    r = a.run(["sh", "-c", "id -u"], user="no-such-user-kiln", user_flags=KILN_USER_OR_ROOT)
    eq(bytes(r.out), b"0\n", "unknown user, or root")
    r = a.run(["true"], user="a:b")
    eq(r.error[0], errno.EINVAL, "a name that is none")


def case_stdin_1mib(a, d):
    data = os.urandom(1 << 20)
    c, r = start(a, ["cat"])

    def writer():
        for i in range(0, len(data), 50000):
            c.send(KILN_MSG_STDIN, data[i:i + 50000])
        c.send(KILN_MSG_STDIN_EOF)
    t = threading.Thread(target=writer)
    t.start()
    collect(c, r)
    t.join()
    eq(len(r.out), len(data), "length")
    check(bytes(r.out) == data, "stdout differs from stdin")
    eq(r.exit, (0, 0, 0), "exit")


def case_stdin_big_frames(a, d):
    # frames of KILN_FRAME_MAX bytes, far above the agent's stdin queue limit
    data = os.urandom(8 << 20)
    c, r = start(a, ["sha256sum"])

    def writer():
        for i in range(0, len(data), KILN_FRAME_MAX):
            c.send(KILN_MSG_STDIN, data[i:i + KILN_FRAME_MAX])
        c.send(KILN_MSG_STDIN_EOF)
    t = threading.Thread(target=writer)
    t.start()
    collect(c, r)
    t.join()
    eq(bytes(r.out).split()[0].decode(), hashlib.sha256(data).hexdigest(), "sha256")


def case_stdin_under_output_flood(a, d):
    # stdout and stderr both busy, so the output queue is often full while
    # stdin data waits: none of it may be lost
    data = os.urandom(4 << 20)
    c, r = start(a, ["sh", "-c", "(yes err | head -c 30000000 >&2) & cat; wait"])

    def writer():
        for i in range(0, len(data), 30000):
            c.send(KILN_MSG_STDIN, data[i:i + 30000])
        c.send(KILN_MSG_STDIN_EOF)
    t = threading.Thread(target=writer)
    t.start()
    collect(c, r)
    t.join()
    eq((len(r.out), len(r.err), r.exit), (len(data), 30000000, (0, 0, 0)), "lengths, exit")
    check(bytes(r.out) == data, "stdout differs from stdin")


def case_timeout(a, d):
    t0 = time.monotonic()
    r = a.run(["sleep", "10"], timeout_ms=200)
    eq(r.exit, (-1, 9, KILN_EXIT_TIMEOUT), "exit")
    check(time.monotonic() - t0 < 3, "took %.1fs" % (time.monotonic() - t0))
    r = a.run(["sh", "-c", "echo before; sleep 10"], timeout_ms=300)
    eq((bytes(r.out), r.exit), (b"before\n", (-1, 9, KILN_EXIT_TIMEOUT)), "output, exit")


def case_signal(a, d):
    c, r = start(a, ["sleep", "10"])
    c.send(KILN_MSG_SIGNAL, u32(15))
    eq(collect(c, r).exit, (-1, 15, 0), "exit")
    # the whole process group gets it
    c, r = start(a, ["sh", "-c", "sleep 30 & echo $!; wait"])
    read_until(c, r, b"\n")
    bg = int(r.out)
    c.send(KILN_MSG_SIGNAL, u32(9))
    eq(collect(c, r).exit, (-1, 9, 0), "exit")
    wait_for(lambda: pid_gone(a, bg), what="background sleep to die")


def case_disconnect_kills(a, d):
    c, r = start(a, ["sh", "-c", "sleep 30 & echo $!; sleep 30"])
    read_until(c, r, b"\n")
    bg = int(r.out)
    c.close()
    wait_for(lambda: pid_gone(a, r.pid) and pid_gone(a, bg), what="the command to be killed")


def kept(a, argv, kind=KILN_STREAM_EXEC, **kw):
    """A command started with KILN_FRAME_KEEP; returns (conn, Result)."""
    c = a.conn(kind)
    c.send(KILN_MSG_START, start_payload(argv, **kw), flags=KILN_FRAME_KEEP)
    r = Result()
    t, p = c.expect_frame()
    check(t == KILN_MSG_STARTED, "expected STARTED, got %s" % describe(t, p))
    r.pid = struct.unpack("<I", p)[0]
    return c, r


def attach(a, pid, kind=KILN_STREAM_EXEC):
    c = a.conn(kind)
    c.send(KILN_MSG_ATTACH, u32(pid))
    return c


def case_keep_attach(a, d):
    # output made while nobody is attached is kept for the next stream
    c, r = kept(a, ["sh", "-c", "echo one; read x; echo two $x; exit 3"])
    read_until(c, r, b"one\n")
    c.close()
    time.sleep(0.3)
    check(not pid_gone(a, r.pid), "the kept command was killed with its stream")
    c = attach(a, r.pid)
    c.send(KILN_MSG_STDIN, b"three\n")
    r2 = collect(c, Result())
    eq((r2.pid, bytes(r2.out), r2.exit), (r.pid, b"two three\n", (3, 0, 0)), "attached")
    # exited while detached: EXIT waits for a stream
    c, r = kept(a, ["sh", "-c", "sleep 0.2; echo late"])
    c.close()
    time.sleep(0.6)
    r2 = collect(attach(a, r.pid), Result())
    eq((bytes(r2.out), r2.exit), (b"late\n", (0, 0, 0)), "exited while detached")
    # once attached, it is no one else's
    expect_error(attach(a, r.pid), errno.ESRCH)


def case_keep_signal_and_reattach(a, d):
    c, r = kept(a, ["sh", "-c", "while :; do echo x; sleep 0.02; done"])
    read_until(c, r, b"x\n")
    c.close()
    c = attach(a, r.pid)
    r2 = Result()
    t, p = c.expect_frame()
    eq((t, struct.unpack("<I", p)[0]), (KILN_MSG_STARTED, r.pid), "STARTED")
    r2.pid = r.pid
    read_until(c, r2, b"x\n")
    c.close()  # detached again
    c = attach(a, r.pid)
    c.send(KILN_MSG_SIGNAL, u32(9))
    eq(collect(c, Result()).exit, (-1, 9, 0), "exit")


def case_keep_output_bounded(a, d):
    # a detached command is never blocked by its output: the oldest goes
    size = 8 << 20
    c, r = kept(a, ["head", "-c", str(size), "/dev/zero"])
    c.close()
    wait_for(lambda: pid_gone(a, r.pid), what="the command to finish unread")
    r2 = collect(attach(a, r.pid), Result())
    check(r2.exit == (0, 0, 0), "exit %r" % (r2.exit,))
    check(0 < len(r2.out) <= KILN_KEEP_OUTPUT, "kept %d bytes" % len(r2.out))


def case_keep_errors(a, d):
    expect_error(attach(a, 999999), errno.ESRCH)
    # without the flag the command dies with its stream (case disconnect-kills);
    # a pty process is not attachable from an exec stream
    c, r = kept(a, ["sleep", "30"], kind=KILN_STREAM_PTY)
    c.close()
    time.sleep(0.2)
    expect_error(attach(a, r.pid), errno.ESRCH)
    c = attach(a, r.pid, kind=KILN_STREAM_PTY)
    t, p = c.expect_frame()
    check(t == KILN_MSG_STARTED, "pty attach: %s" % describe(t, p))
    c.send(KILN_MSG_SIGNAL, u32(9))
    eq(collect(c, Result()).exit, (-1, 9, 0), "exit")
    # the host's ERROR aborts a kept command
    c, r = kept(a, ["sleep", "30"])
    c.send(KILN_MSG_ERROR, u32(errno.ECANCELED) + sstr("give up"))
    wait_for(lambda: pid_gone(a, r.pid), what="the aborted command to be killed")


def procs_list(a):
    """The procs stream's entries: {tag: (pid, kind, state, flags)}, and those
    without a tag under their pids."""
    c = a.conn(KILN_STREAM_PROCS)
    got = {}
    while True:
        t, p = c.expect_frame()
        if t == KILN_MSG_DONE:
            eq(p, b"", "DONE payload")
            c.expect_eof()
            return got
        check(t == KILN_MSG_PROC, "expected PROC or DONE, got %s" % describe(t, p))
        pid, tag, kind, state, flags = struct.unpack("<IQIII", p)
        got[tag or ("pid", pid)] = (pid, kind, state, flags)


def case_procs_stream(a, d):
    # nothing runs: DONE alone; the host may send nothing else on the stream
    eq(procs_list(a), {}, "no processes")
    c = a.conn(KILN_STREAM_PROCS)
    c.send(KILN_MSG_STDIN, b"x")
    t, p = c.recv()
    check(t == KILN_MSG_DONE or t == KILN_MSG_ERROR, "procs stream: %s" % describe(t, p))
    # a tagged command, attached; another one detached, and one that exited
    tag = 0x7123456789ABCDEF
    c1, r1 = kept(a, ["sleep", "30"], tag=tag)
    c2, r2 = kept(a, ["sleep", "30"], kind=KILN_STREAM_PTY, tag=5)
    c2.close()
    c3, r3 = kept(a, ["sleep", "0.3"], tag=6)
    c3.close()
    c4, r4 = start(a, ["sleep", "30"])  # untagged, not kept
    wait_for(lambda: procs_list(a).get(6, (0, 0, 0))[2] == KILN_PROC_EXITED,
             what="the exited command to be listed so")
    got = procs_list(a)
    eq(got.get(tag), (r1.pid, KILN_STREAM_EXEC, KILN_PROC_RUNNING, 0), "attached exec")
    eq(got.get(5), (r2.pid, KILN_STREAM_PTY, KILN_PROC_RUNNING, KILN_PROC_DETACHED),
       "detached pty")
    eq(got.get(6), (r3.pid, KILN_STREAM_EXEC, KILN_PROC_EXITED, KILN_PROC_DETACHED),
       "exited, detached")
    eq(got.get(("pid", r4.pid)), (r4.pid, KILN_STREAM_EXEC, KILN_PROC_RUNNING, 0), "untagged")
    eq(len(got), 4, "entries")
    # once its EXIT went out, a process is no longer listed
    eq(collect(attach(a, r3.pid), Result()).exit, (0, 0, 0), "exited one")
    c1.send(KILN_MSG_SIGNAL, u32(9))
    eq(collect(c1, Result()).exit, (-1, 9, 0), "exit")
    c4.close()
    c = attach(a, r2.pid, kind=KILN_STREAM_PTY)
    c.send(KILN_MSG_SIGNAL, u32(9))
    collect(c, Result())
    wait_for(lambda: procs_list(a) == {}, what="the listing to empty")


def case_started_delay(a, d):
    # the test hook holds STARTED; the command runs meanwhile
    env = ["KILN_TEST_STARTED_DELAY_MS=600", "D=" + d]
    c = a.conn(KILN_STREAM_EXEC)
    t0 = time.monotonic()
    c.send(KILN_MSG_START, start_payload(["sh", "-c", "echo $$ >$D/held.pid; echo out"], env=env,
                                         tag=9), flags=KILN_FRAME_KEEP)
    wait_for(lambda: os.path.exists(os.path.join(d, "held.pid")), what="the command to run")
    eq(procs_list(a).get(9, (0, 0, 0))[2], KILN_PROC_STARTING, "listed as starting")
    r = collect(c, Result())
    check(time.monotonic() - t0 >= 0.55, "STARTED came after %.3f s" % (time.monotonic() - t0))
    eq((r.order[0], bytes(r.out), r.exit), (KILN_MSG_STARTED, b"out\n", (0, 0, 0)), "held exec")
    # the host goes away inside the window: the command is kept, STARTED
    # goes to whoever attaches, once
    c = a.conn(KILN_STREAM_EXEC)
    c.send(KILN_MSG_START, start_payload(["sh", "-c", "read x; echo got $x"],
                                         env=["KILN_TEST_STARTED_DELAY_MS=5000"], tag=10),
           flags=KILN_FRAME_KEEP)
    wait_for(lambda: 10 in procs_list(a), what="the held command to be listed")
    c.close()
    # (STARTING until its execve, if the stream went before that)
    wait_for(lambda: procs_list(a).get(10, (0, 0, 0, 0))[2:] ==
             (KILN_PROC_RUNNING, KILN_PROC_DETACHED), what="the held command to be detached")
    pid = procs_list(a)[10][0]
    c = attach(a, pid)
    c.send(KILN_MSG_STDIN, b"in\n")
    r = collect(c, Result())
    eq((r.pid, bytes(r.out), r.exit, r.order.count(KILN_MSG_STARTED)),
       (pid, b"got in\n", (0, 0, 0), 1), "attached inside the window")
    # values out of range are no delay; without KEEP the held command dies
    # with its stream
    for v in ("0", "-1", "10001", "1x", ""):
        t0 = time.monotonic()
        r = a.run(["true"], env=["KILN_TEST_STARTED_DELAY_MS=" + v])
        check(r.exit == (0, 0, 0) and time.monotonic() - t0 < 2.0, "delay %r held it" % v)
    c = a.conn(KILN_STREAM_EXEC)
    c.send(KILN_MSG_START, start_payload(["sleep", "30"], env=["KILN_TEST_STARTED_DELAY_MS=5000"],
                                         tag=11))
    wait_for(lambda: 11 in procs_list(a), what="the unkept held command")
    pid = procs_list(a)[11][0]
    c.close()
    wait_for(lambda: pid_gone(a, pid), what="the unkept held command to be killed")


def case_start_tag_malformed(a, d):
    # a tag trailer cut short, or bytes after it
    for extra in (b"\x01\x02\x03", struct.pack("<Q", 1) + b"\x00"):
        c = a.conn(KILN_STREAM_EXEC)
        c.send(KILN_MSG_START, start_payload(["true"], root="") + extra)
        expect_error(c, errno.EPROTO, "START")
    eq(a.run(["true"], tag=0).exit, (0, 0, 0), "tag 0")


def case_start_pidns(a, d):
    # the pidns trailer: a relative root is refused, one cut short is
    # malformed; on Linux (no kiln namespaces) a command that joins a root's
    # namespace runs in the agent's, as one with its own root's does
    c = a.conn(KILN_STREAM_EXEC)
    c.send(KILN_MSG_START, start_payload(["true"], pidns="rel"))
    expect_error(c, errno.EINVAL, "pidns")
    c = a.conn(KILN_STREAM_EXEC)
    c.send(KILN_MSG_START, start_payload(["true"], tag=0) + b"\x05\x00\x00\x00/")
    expect_error(c, errno.EPROTO, "START")
    r = a.run(["sh", "-c", "echo $$"], root="/", pidns="/")
    eq(r.exit, (0, 0, 0), "a pidns trailer naming a root")
    check(int(bytes(r.out)) > 1, "its pid is the agent's namespace's (%r)" % bytes(r.out))
    eq(a.run(["true"], tag=7, pidns="").exit, (0, 0, 0), "an empty pidns trailer")


def case_exec_backpressure(a, d):
    size = 64 << 20
    c, r = start(a, ["head", "-c", str(size), "/dev/zero"])
    base = a.rss_kb()
    time.sleep(1.0)  # not reading: the agent must stop reading the pipe
    grown = a.rss_kb() - base
    check(grown < 32 << 10, "agent RSS grew by %d KiB while the host did not read" % grown)
    eq(bytes(a.run(["echo", "others"]).out), b"others\n", "another stream meanwhile")
    collect(c, r)
    eq((len(r.out), r.exit), (size, (0, 0, 0)), "length, exit")


# ---------------------------------------------------------------- pty

def case_pty_tty(a, d):
    r = a.run(["tty"], kind=KILN_STREAM_PTY)
    check(re.fullmatch(rb"/dev/pts/\d+\r\n", bytes(r.out)), "tty printed %r" % bytes(r.out))
    eq(r.exit, (0, 0, 0), "exit")
    eq(bytes(r.err), b"", "stderr")
    r = a.run(["sh", "-c", 'echo "$TERM"'], kind=KILN_STREAM_PTY)
    eq(bytes(r.out), b"xterm-256color\r\n", "TERM")


def case_pty_size(a, d):
    eq(bytes(a.run(["stty", "size"], kind=KILN_STREAM_PTY, cols=100, rows=30).out), b"30 100\r\n",
       "requested size")
    eq(bytes(a.run(["stty", "size"], kind=KILN_STREAM_PTY).out), b"24 80\r\n", "default size")


def case_pty_resize(a, d):
    c, r = start(a, ["sh", "-c", "stty size; read x; stty size"], kind=KILN_STREAM_PTY)
    read_until(c, r, b"24 80\r\n")
    c.send(KILN_MSG_RESIZE, u16(132) + u16(43))
    c.send(KILN_MSG_STDIN, b"go\n")
    collect(c, r)
    check(bytes(r.out).endswith(b"43 132\r\n"), "output %r" % bytes(r.out))
    eq(r.exit, (0, 0, 0), "exit")


def case_pty_echo_eof(a, d):
    c, r = start(a, ["cat"], kind=KILN_STREAM_PTY)
    c.send(KILN_MSG_STDIN, b"hello\n")
    read_until(c, r, b"hello\r\nhello\r\n")  # the terminal's echo, then cat's copy
    c.send(KILN_MSG_STDIN_EOF)  # ^D at the start of a line: cat reads EOF
    collect(c, r)
    eq(r.exit, (0, 0, 0), "exit")


def case_pty_ctrl_c(a, d):
    c, r = start(a, ["sleep", "10"], kind=KILN_STREAM_PTY)
    time.sleep(0.1)
    c.send(KILN_MSG_STDIN, b"\x03")  # the controlling terminal signals its foreground group
    eq(collect(c, r).exit, (-1, 2, 0), "exit")


# ---------------------------------------------------------------- files

def case_file_roundtrip(a, d):
    for size in (0, 1, 100 << 20):
        data = os.urandom(size)
        path = os.path.join(d, "f%d" % size)
        expect_done(upload(a, path, data, mode=0o640))
        eq(stat.S_IMODE(os.stat(path).st_mode), 0o640, "mode")
        st, digest, n = download(a, path)
        eq((n, st["size"], st["name"]), (size, size, "f%d" % size), "length, size, name")
        eq(digest, hashlib.sha256(data).hexdigest(), "sha256 of %d bytes" % size)
        check(stat.S_ISREG(st["mode"]), "mode %o" % st["mode"])
    no_temp_files(d)


def case_file_atomic(a, d):
    path = os.path.join(d, "target")
    old = b"old content\n" * 1000
    new = os.urandom(16 << 20)
    with open(path, "wb") as f:
        f.write(old)
    seen, stop = set(), threading.Event()

    def reader():
        while not stop.is_set():
            try:
                with open(path, "rb") as f:
                    b = f.read()
            except FileNotFoundError:
                b = None
            seen.add("old" if b == old else "new" if b == new else "PARTIAL %r" % (b or b"")[:20])
    t = threading.Thread(target=reader)
    t.start()
    c = upload(a, path, new[:len(new) // 2], done=False)
    time.sleep(0.2)
    st, digest, n = download(a, path)  # another stream, meanwhile
    eq((n, digest), (len(old), hashlib.sha256(old).hexdigest()), "content during the upload")
    view = memoryview(new)
    for i in range(len(new) // 2, len(new), KILN_DATA_CHUNK):
        c.send(KILN_MSG_DATA, bytes(view[i:i + KILN_DATA_CHUNK]))
    c.send(KILN_MSG_DONE)
    expect_done(c)
    time.sleep(0.1)
    stop.set()
    t.join()
    check(all(s in ("old", "new") for s in seen), "a reader saw %s" % seen)
    check(open(path, "rb").read() == new, "new content")
    # a broken upload leaves the path untouched and no temporary file
    c = upload(a, path, b"x" * 300000, done=False)
    time.sleep(0.1)
    c.close()
    c = upload(a, path, b"y" * 1000, done=False)
    c.send(KILN_MSG_ERROR, u32(errno.ECANCELED) + sstr("host gave up"))
    c.expect_eof()
    wait_for(lambda: not [f for f in os.listdir(d) if f.startswith(".kiln-upload.")],
             what="temporary files to go")
    check(open(path, "rb").read() == new, "content after broken uploads")


def case_file_list(a, d):
    os.mkdir(os.path.join(d, "sub"))
    with open(os.path.join(d, "a"), "w") as f:
        f.write("12345")
    open(os.path.join(d, ".hidden"), "w").close()
    os.symlink("a", os.path.join(d, "ln"))
    c = file_req(a, KILN_FILE_LIST, d)
    ents = {}
    while True:
        t, p = c.expect_frame()
        if t == KILN_MSG_DONE:
            break
        check(t == KILN_MSG_ENTRY, "expected ENTRY, got %s" % describe(t, p))
        e = parse_stat(p)
        ents[e["name"]] = e
    c.expect_eof()
    eq(sorted(ents), [".hidden", "a", "ln", "sub"], "names")
    check(stat.S_ISDIR(ents["sub"]["mode"]), "sub is a directory")
    check(stat.S_ISLNK(ents["ln"]["mode"]) and ents["ln"]["link"] == "a", "ln: %s" % ents["ln"])
    eq((ents["a"]["size"], ents["a"]["link"]), (5, ""), "a")
    # a large directory streams through backpressure
    big = os.path.join(d, "sub")
    for i in range(2000):
        open(os.path.join(big, "file-%05d-%s" % (i, "x" * 100)), "w").close()
    c = file_req(a, KILN_FILE_LIST, big)
    n = 0
    while c.expect_frame()[0] == KILN_MSG_ENTRY:
        n += 1
    c.expect_eof()
    eq(n, 2000, "entries")


def case_file_stat(a, d):
    path = os.path.join(d, "s")
    with open(path, "w") as f:
        f.write("abc")
    os.symlink("/some/where", os.path.join(d, "sl"))
    for p, want in ((path, ("s", 3, "")), (os.path.join(d, "sl"), ("sl", None, "/some/where")),
                    ("/", ("/", None, "")), (d + "/", (os.path.basename(d), None, ""))):
        c = file_req(a, KILN_FILE_STAT, p)
        t, pl = c.expect_frame()
        check(t == KILN_MSG_STAT, "expected STAT, got %s" % describe(t, pl))
        st = parse_stat(pl)
        c.expect_eof()
        eq((st["name"], st["size"] if want[1] is not None else None, st["link"]), want, p)
        eq(st["mtime"], int(os.lstat(p).st_mtime), "mtime")
    expect_error(file_req(a, KILN_FILE_STAT, d + "/missing"), errno.ENOENT, d + "/missing")


def case_file_mkdir(a, d):
    p = os.path.join(d, "x/y/z")
    expect_done(file_req(a, KILN_FILE_MKDIR, p, u32(0o700)))
    eq(stat.S_IMODE(os.stat(p).st_mode), 0o700, "mode")
    expect_done(file_req(a, KILN_FILE_MKDIR, p + "/", u32(0o700)))  # exists: fine, like -p
    open(os.path.join(d, "file"), "w").close()
    expect_error(file_req(a, KILN_FILE_MKDIR, os.path.join(d, "file"), u32(0o755)), errno.EEXIST)
    expect_error(file_req(a, KILN_FILE_MKDIR, os.path.join(d, "file/sub"), u32(0o755)),
                 errno.ENOTDIR, "file/sub")


def tar_of(entries, fmt=tarfile.PAX_FORMAT):
    """A tar stream of (name, type, data/linkname, mode, uid) entries."""
    bio = io.BytesIO()
    with tarfile.open(fileobj=bio, mode="w", format=fmt) as t:
        for name, kind, data, mode, uid in entries:
            ti = tarfile.TarInfo(name)
            ti.mode, ti.uid, ti.gid, ti.mtime = mode, uid, uid, 1700000000
            if kind == "file":
                ti.size = len(data)
                t.addfile(ti, io.BytesIO(data))
                continue
            ti.type = {"dir": tarfile.DIRTYPE, "sym": tarfile.SYMTYPE, "hard": tarfile.LNKTYPE,
                       "fifo": tarfile.FIFOTYPE}[kind]
            if kind in ("sym", "hard"):
                ti.linkname = data
            t.addfile(ti)
    return bio.getvalue()


def untar(a, path, data, flags=0, chunk=1000):
    c = file_req(a, KILN_FILE_UNTAR, path, u32(flags))
    for i in range(0, len(data), chunk):
        c.send(KILN_MSG_DATA, data[i:i + chunk])
    c.send(KILN_MSG_DONE)
    return c


def case_file_untar(a, d):
    """UNTAR: a tar stream unpacked as it arrives (odd chunk sizes), long
    names, links, modes, owners; fifos left out; KILN_UNTAR_DEV."""
    long = "l" * 60 + "/" + "m" * 70 + "/file"
    root = os.path.join(d, "new/root")
    data = tar_of([("./", "dir", b"", 0o755, 0), ("etc", "dir", b"", 0o750, 0),
                   ("etc/motd", "file", b"hello\n" * 3000, 0o640, 1234),
                   (long, "file", b"deep", 0o600, 0), ("bin/sh", "file", b"#!", 0o4755, 0),
                   ("bin/ls", "sym", "sh", 0o777, 0), ("etc/hard", "hard", "etc/motd", 0o640, 0),
                   ("fifo", "fifo", b"", 0o644, 0), ("empty", "file", b"", 0o644, 0)])
    expect_done(untar(a, root, data, KILN_UNTAR_DEV))
    eq(open(os.path.join(root, "etc/motd"), "rb").read(), b"hello\n" * 3000, "content")
    st = os.stat(os.path.join(root, "etc/motd"))
    eq((stat.S_IMODE(st.st_mode), st.st_uid, int(st.st_mtime)), (0o640, 1234, 1700000000),
       "mode, owner, mtime")
    eq(stat.S_IMODE(os.stat(os.path.join(root, "etc")).st_mode), 0o750, "a directory's mode")
    eq(open(os.path.join(root, long), "rb").read(), b"deep", "a pax long name")
    eq(stat.S_IMODE(os.stat(os.path.join(root, "bin/sh")).st_mode), 0o4755, "set-uid kept")
    eq(os.readlink(os.path.join(root, "bin/ls")), "sh", "symlink")
    eq(os.stat(os.path.join(root, "etc/hard")).st_ino, st.st_ino, "hard link")
    check(not os.path.lexists(os.path.join(root, "fifo")), "a fifo is left out")
    eq(os.path.getsize(os.path.join(root, "empty")), 0, "an empty file")
    check(stat.S_ISCHR(os.stat(os.path.join(root, "dev/null")).st_mode), "dev/null linked in")
    # GNU long names too, and a chunk per frame as large as the agent takes
    gnu = tar_of([("g" * 150, "file", b"gnu", 0o644, 0)], tarfile.GNU_FORMAT)
    expect_done(untar(a, root, gnu, chunk=KILN_DATA_CHUNK))
    eq(open(os.path.join(root, "g" * 150), "rb").read(), b"gnu", "a GNU long name")


def case_file_untar_proc(a, d):
    """UNTAR with KILN_UNTAR_PROC mounts a procfs on DIR/proc; REMOVE
    recursive unmounts it before it empties the tree."""
    if os.geteuid() != 0:
        return  # mount(2) is root's
    root = os.path.join(d, "root")
    expect_done(untar(a, root, tar_of([("proc", "dir", b"", 0o555, 0)]), KILN_UNTAR_PROC))
    try:
        r = a.run(["sh", "-c", "head -c 9 %s/proc/meminfo" % root])
        eq((bytes(r.out), bytes(r.err), r.error), (b"MemTotal:", b"", None), "the procfs answers")
    finally:
        expect_done(file_req(a, KILN_FILE_REMOVE, root, u32(1)))
    check(not os.path.lexists(root), "removed, mount and all")


def case_file_untar_refused(a, d):
    """UNTAR refuses what would leave its directory and broken streams."""
    root = os.path.join(d, "r")
    for name in ("../evil", "a/../../evil", "/abs-evil"):
        expect_error(untar(a, root, tar_of([(name, "file", b"x", 0o644, 0)])), errno.EPERM,
                     "leaves the directory")
    check(not os.path.exists(os.path.join(d, "evil")), "nothing written outside")
    expect_error(untar(a, root, tar_of([("h", "hard", "../../etc/passwd", 0o644, 0)])),
                 errno.EPERM, "outside")
    # a symlink as a parent: refused, not followed
    os.mkdir(os.path.join(d, "out"))
    expect_error(untar(a, root, tar_of([("l", "sym", os.path.join(d, "out"), 0o777, 0),
                                        ("l/x", "file", b"x", 0o644, 0)])), errno.ENOTDIR)
    eq(os.listdir(os.path.join(d, "out")), [], "nothing written through the symlink")
    good = tar_of([("f", "file", b"y" * 2000, 0o644, 0)])
    expect_error(untar(a, root, good[:1200]), errno.EPROTO, "ended inside an entry")
    bad = bytearray(good)
    bad[0] ^= 1
    expect_error(untar(a, root, bytes(bad)), errno.EPROTO, "checksum")
    huge = tar_of([("p", "file", b"", 0o644, 0)])
    hdr = bytearray(huge[:512])
    hdr[156:157] = b"x"
    hdr[124:136] = b"%011o\0" % (1 << 20)
    hdr[148:156] = b"        "
    hdr[148:156] = b"%06o\0 " % sum(hdr)
    expect_error(untar(a, root, bytes(hdr)), errno.E2BIG, "64 KiB")


def case_start_root(a, d):
    """START's root trailer: the command runs chrooted, cwd and PATH inside."""
    r = os.path.join(d, "root")
    os.makedirs(os.path.join(r, "bin"))
    os.makedirs(os.path.join(r, "sub"))
    shutil.copy("/bin/busybox", os.path.join(r, "bin/busybox"))
    os.symlink("busybox", os.path.join(r, "bin/sh"))
    res = a.run(["sh", "-c", "echo $(busybox ls /) $(busybox pwd)"], root=r, cwd="/sub",
                env=["PATH=/bin"])
    if os.geteuid() != 0:
        eq(res.error[0], errno.EPERM, "chroot as non-root")
        return
    eq(bytes(res.out), b"bin sub /sub\n", "stdout")
    # a terminal: its node is there in the root too (for ttyname)
    res = a.run(["sh", "-c", "busybox ls /dev/pts; busybox stat -c %t /dev/pts/*"],
                kind=KILN_STREAM_PTY, root=r, env=["PATH=/bin"])
    check(re.match(rb"\d+\r?\n[0-9a-f]+\r?\n$", bytes(res.out)),
          "the terminal's node in the root: %r" % ((bytes(res.out), res.error),))
    # root "/" (the shim's for a container whose rootfs is the VM's, for
    # its PID namespace): no chroot elsewhere, and the terminal's own node
    # is not linked over itself (unlinked, it could not be opened)
    res = a.run(["sh", "-c", "tty; echo x >$(tty) && echo still"], kind=KILN_STREAM_PTY,
                root="/")
    check(re.match(rb"/dev/pts/\d+\r?\nx\r?\nstill\r?\n$", bytes(res.out)),
          "root /, a terminal: %r" % ((bytes(res.out), res.error),))
    res = a.run(["true"], root="relative")
    eq(res.error[0], errno.EINVAL, "a relative root")
    res = a.run(["true"], root=os.path.join(d, "missing"))
    eq(res.error[0], errno.ENOENT, "a missing root")
    check("cannot change root" in res.error[1], "says so: %r" % (res.error[1],))


def case_file_freeze(a, d):
    """FREEZE, LIMIT, CPU and SHARES: a root with no PID namespace (none on
    Linux) is ESRCH, even one a command ran under; a FREEZE other than 0 and
    1 EINVAL, as SHARES outside 2..262144."""
    expect_error(file_req(a, KILN_FILE_FREEZE, "/run/kiln/containers/none", u32(1)),
                 errno.ESRCH, "none")
    a.run(["true"], root="/")
    expect_error(file_req(a, KILN_FILE_FREEZE, "/", u32(1)), errno.ESRCH, "/")
    expect_error(file_req(a, KILN_FILE_FREEZE, "/", u32(2)), errno.EINVAL, "0 or 1")
    expect_error(file_req(a, KILN_FILE_LIMIT, "/", u32(64)), errno.ESRCH, "bound")
    expect_error(file_req(a, KILN_FILE_CPU, "/", u32(500)), errno.ESRCH, "bound")
    expect_error(file_req(a, KILN_FILE_SHARES, "/", u32(512)), errno.ESRCH, "bound")
    for bad in (0, 1, 262145):
        expect_error(file_req(a, KILN_FILE_SHARES, "/", u32(bad)), errno.EINVAL, "2 to 262144")


def case_file_changes(a, d):
    """CHANGES: a kernel that does not note changes (Linux) is ENOSYS, saying
    so; a malformed excluded list is EPROTO."""
    expect_error(file_req(a, KILN_FILE_CHANGES, "/", u32(1) + u32(4) + b"/dev"), errno.ENOSYS,
                 "does not note")
    expect_error(file_req(a, KILN_FILE_CHANGES, "/", u32(5)), errno.EPROTO)


def case_file_base(a, d):
    """BASE: a kernel that does not note changes (Linux) is ENOSYS, saying
    so; a root that is missing or not a directory says which; a user
    trailer is EINVAL; operation 14 (not defined) is an unknown one."""
    os.makedirs(os.path.join(d, "root/a/b"))
    open(os.path.join(d, "root/f"), "w").close()
    expect_error(file_req(a, KILN_FILE_BASE, os.path.join(d, "root")), errno.ENOSYS,
                 "does not note")
    expect_error(file_req(a, KILN_FILE_BASE, os.path.join(d, "none")), errno.ENOENT, "none")
    expect_error(file_req(a, KILN_FILE_BASE, os.path.join(d, "root/f")), errno.ENOTDIR, "root/f")
    expect_error(file_req(a, KILN_FILE_BASE, d, sstr("root") + u32(0)), errno.EINVAL, "no user")
    expect_error(file_req(a, KILN_FILE_MAX, d), errno.EINVAL, "unknown file operation 15")
    assert KILN_FILE_BASE == 13 and KILN_FILE_CHANGES == 12 and KILN_FILE_MAX == 15


def case_file_remove(a, d):
    t = os.path.join(d, "t")
    os.makedirs(os.path.join(t, "b/c/d/e"))
    os.makedirs(os.path.join(d, "outside"))
    open(os.path.join(d, "outside/keep"), "w").close()
    for f in ("a", "b/f", "b/c/d/e/g"):
        open(os.path.join(t, f), "w").close()
    os.symlink(os.path.join(d, "outside"), os.path.join(t, "b/ln"))
    expect_error(file_req(a, KILN_FILE_REMOVE, t, u32(0)), errno.ENOTEMPTY, t)
    expect_done(file_req(a, KILN_FILE_REMOVE, t, u32(1)))
    check(not os.path.lexists(t), "tree removed")
    check(os.path.exists(os.path.join(d, "outside/keep")), "the symlink was followed")
    os.mkdir(os.path.join(d, "empty"))
    expect_done(file_req(a, KILN_FILE_REMOVE, os.path.join(d, "empty"), u32(0)))
    expect_done(file_req(a, KILN_FILE_REMOVE, os.path.join(d, "outside/keep"), u32(0)))
    expect_error(file_req(a, KILN_FILE_REMOVE, os.path.join(d, "gone"), u32(1)), errno.ENOENT,
                 os.path.join(d, "gone"))


def case_file_rename(a, d):
    src, dst = os.path.join(d, "from"), os.path.join(d, "to")
    with open(src, "w") as f:
        f.write("r")
    expect_done(file_req(a, KILN_FILE_RENAME, src, sstr(dst)))
    check(not os.path.exists(src) and open(dst).read() == "r", "renamed")
    msg = expect_error(file_req(a, KILN_FILE_RENAME, src, sstr(dst)), errno.ENOENT)
    check(src in msg and dst in msg, "message names both paths: %r" % msg)


def case_file_errors(a, d):
    missing = os.path.join(d, "missing")
    expect_error(file_req(a, KILN_FILE_READ, missing), errno.ENOENT, missing)
    expect_error(file_req(a, KILN_FILE_READ, d), errno.EISDIR, d)
    expect_error(file_req(a, KILN_FILE_READ, "/dev/null"), errno.EINVAL, "/dev/null")
    open(os.path.join(d, "f"), "w").close()
    expect_error(file_req(a, KILN_FILE_LIST, os.path.join(d, "f")), errno.ENOTDIR)
    expect_error(upload(a, os.path.join(d, "nodir/f"), b"x"), errno.ENOENT, "nodir/f")
    expect_error(upload(a, d + "/", b"x"), errno.EISDIR)
    expect_error(upload(a, d, b"x"), errno.EISDIR, d)
    expect_error(file_req(a, 99, d), errno.EINVAL)
    expect_error(file_req(a, KILN_FILE_WRITE, os.path.join(d, "f2")), errno.EPROTO)  # no mode
    c = file_req(a, KILN_FILE_WRITE, os.path.join(d, "f3"), u32(0o644))
    c.send(KILN_MSG_DATA, b"x" * (KILN_DATA_CHUNK + 1))
    expect_error(c, errno.EPROTO)
    no_temp_files(d)


# ---------------------------------------------------------------- protocol

def case_info(a, d):
    c = a.conn(KILN_STREAM_INFO)
    t, p = c.expect_frame()
    check(t == KILN_MSG_INFO, "expected INFO, got %s" % describe(t, p))
    n = struct.unpack("<I", p[:4])[0]
    version = p[4:4 + n].decode()
    uptime, total, free, procs = struct.unpack("<QQQI", p[4 + n:])
    c.expect_eof()
    check(version.startswith("kiln-agent"), "version %r" % version)
    check(uptime > 0 and 0 < free <= total and procs > 0, "%r" % ((uptime, total, free, procs),))


def case_hello(a, d):
    expect_error(hello(a, 99, KILN_STREAM_EXEC), errno.EPROTONOSUPPORT)
    expect_error(hello(a, KILN_AGENT_VERSION, 77), errno.EINVAL)
    expect_error(hello(a, KILN_AGENT_VERSION, 0), errno.EINVAL)
    c = a.conn(None)
    c.send(KILN_MSG_START, start_payload(["true"]))
    expect_error(c, errno.EPROTO, "HELLO")


def reuse_hello(c, kind):
    """HELLO with KILN_FRAME_REUSE on c; the agent must promise to keep it."""
    c.send(KILN_MSG_HELLO, u32(KILN_AGENT_VERSION) + u32(kind), KILN_FRAME_REUSE)
    t, p = c.expect_frame()
    check(t == KILN_MSG_HELLO, "HELLO answered with %s" % describe(t, p))
    eq(struct.unpack("<II", p), (KILN_AGENT_VERSION, KILN_HELLO_REUSE | HELLO_FLAGS),
       "HELLO answer")


def reused_exec(c, argv, stdin=b""):
    """One exec on a kept connection: its frames up to EXIT, which must be the
    last frame of the stream (nothing follows it, not even EOF)."""
    reuse_hello(c, KILN_STREAM_EXEC)
    c.send(KILN_MSG_START, start_payload(argv))
    for i in range(0, len(stdin), KILN_DATA_CHUNK):
        c.send(KILN_MSG_STDIN, stdin[i:i + KILN_DATA_CHUNK])
    c.send(KILN_MSG_STDIN_EOF)
    r = Result()
    while r.exit is None:
        t, p = c.expect_frame()
        if t == KILN_MSG_STDOUT:
            r.out += p
        elif t == KILN_MSG_EXIT:
            r.exit = struct.unpack("<iII", p)
        elif t != KILN_MSG_STARTED:
            raise AssertionError("unexpected %s" % describe(t, p))
    return r


def case_reuse(a, d):
    c = a.conn(None)
    for i in range(3):
        r = reused_exec(c, ["sh", "-c", "echo run%d" % i])
        eq((bytes(r.out), r.exit), (b"run%d\n" % i, (0, 0, 0)), "exec %d" % i)
    # Input the command never read (more than the agent buffers) is dropped
    # with its stream, and so is a frame that comes late: the next HELLO
    # starts a new stream.
    r = reused_exec(c, ["true"], stdin=b"x" * (3 << 20))
    eq(r.exit, (0, 0, 0), "exec with unread input")
    c.send(KILN_MSG_SIGNAL, u32(9))  # late, for the stream that ended
    reuse_hello(c, KILN_STREAM_INFO)
    t, p = c.expect_frame()
    check(t == KILN_MSG_INFO, "expected INFO, got %s" % describe(t, p))
    r = reused_exec(c, ["echo", "after"])
    eq(bytes(r.out), b"after\n", "exec after info")
    # File streams: an upload ends with DONE, a stat with its STAT.
    path = os.path.join(d, "kept")
    reuse_hello(c, KILN_STREAM_FILE)
    c.send(KILN_MSG_FILE_REQUEST, u32(KILN_FILE_WRITE) + sstr(path) + u32(0o644))
    c.send(KILN_MSG_DATA, b"abc")
    c.send(KILN_MSG_DONE)
    t, p = c.expect_frame()
    check(t == KILN_MSG_DONE and not p, "expected DONE, got %s" % describe(t, p))
    reuse_hello(c, KILN_STREAM_FILE)
    c.send(KILN_MSG_FILE_REQUEST, u32(KILN_FILE_STAT) + sstr(path))
    t, p = c.expect_frame()
    check(t == KILN_MSG_STAT, "expected STAT, got %s" % describe(t, p))
    eq((parse_stat(p)["name"], parse_stat(p)["size"]), ("kept", 3), "stat after upload")
    # Without the flag the stream ends as usual, and so does the connection.
    c.send(KILN_MSG_HELLO, u32(KILN_AGENT_VERSION) + u32(KILN_STREAM_EXEC))
    t, p = c.expect_frame()
    eq((t, p), (KILN_MSG_HELLO, u32(KILN_AGENT_VERSION) + u32(HELLO_FLAGS)),
       "plain HELLO answer")
    c.send(KILN_MSG_START, start_payload(["true"]))
    c.send(KILN_MSG_STDIN_EOF)
    r = collect(c, Result())  # EXIT, then EOF
    eq(r.exit, (0, 0, 0), "plain exec")


def case_reuse_ends(a, d):
    # A stream that fails ends its connection even with the flag.
    c = a.conn(None)
    reuse_hello(c, KILN_STREAM_EXEC)
    c.send(KILN_MSG_START, start_payload(["/nonexistent/cmd"]))
    expect_error(c, errno.ENOENT)
    # The host's ERROR while the connection waits for its next HELLO ends it.
    c = a.conn(None)
    reused_exec(c, ["true"])
    c.send(KILN_MSG_ERROR, u32(errno.ECANCELED) + sstr("gone"))
    c.expect_eof()
    # A protocol error there is still one.
    c = a.conn(None)
    reused_exec(c, ["true"])
    c.raw(struct.pack("<IHH", 0, 999, 0))
    expect_error(c, errno.EPROTO)


def hello(a, version, kind):
    c = a.conn(None)
    c.send(KILN_MSG_HELLO, u32(version) + u32(kind))
    return c


def malformed(a, kind, data):
    c = a.conn(kind)
    c.raw(data)
    return c


def case_malformed(a, d):
    keep, kr = start(a, ["cat"])  # must keep working throughout
    hdr = lambda ln, t: struct.pack("<IHH", ln, t, 0)  # noqa: E731
    expect_error(malformed(a, None, hdr(KILN_FRAME_MAX + 1, KILN_MSG_HELLO)), errno.EPROTO)
    expect_error(malformed(a, KILN_STREAM_EXEC, hdr(0xFFFFFFFF, KILN_MSG_STDIN)), errno.EPROTO)
    expect_error(malformed(a, None, hdr(0, 999)), errno.EPROTO, "unknown")
    expect_error(malformed(a, None, hdr(0, 0)), errno.EPROTO)
    expect_error(malformed(a, None, hdr(4, KILN_MSG_HELLO) + u32(1)), errno.EPROTO, "short")
    expect_error(malformed(a, None, hdr(12, KILN_MSG_HELLO) + u32(1) + u32(1) + u32(0)),
                 errno.EPROTO, "trailing")
    start_bad = [
        u32(1) + u32(1000) + b"echo",                          # string runs past the payload
        u32(1) + sstr(b"x" * (KILN_MAX_STRING + 1)),           # string too long
        u32(KILN_MAX_ARGS + 1) + sstr("x") * (KILN_MAX_ARGS + 1),  # argc beyond the limit
        u32(0xFFFFFFFF) + sstr("x"),                           # absurd count: no allocation
        u32(1000) + sstr("x"),                                 # count beyond the payload
        u32(0) + u32(0) + sstr("") + u32(0) * 2 + u16(0) * 2,  # no argv
        u32(1) + sstr(b"ec\0ho") + u32(0) + sstr("") + u32(0) * 2 + u16(0) * 2,  # NUL
        start_payload(["true"])[:-2],                          # truncated
        start_payload(["true"]) + b"\0",                       # trailing byte
    ]
    for i, p in enumerate(start_bad):
        c = malformed(a, KILN_STREAM_EXEC, hdr(len(p), KILN_MSG_START) + p)
        expect_error(c, errno.EPROTO)
    for kind, frames, err in (
            (KILN_STREAM_EXEC, [(KILN_MSG_STDIN, b"x")], errno.EPROTO),
            (KILN_STREAM_EXEC, [(KILN_MSG_FILE_REQUEST, u32(1) + sstr("/"))], errno.EPROTO),
            (KILN_STREAM_EXEC, [(KILN_MSG_START, start_payload(["sleep", "5"])),
                                (KILN_MSG_RESIZE, u16(1) + u16(1))], errno.EPROTO),
            (KILN_STREAM_EXEC, [(KILN_MSG_START, start_payload(["sleep", "5"])),
                                (KILN_MSG_SIGNAL, u32(0))], errno.EINVAL),
            (KILN_STREAM_PTY, [(KILN_MSG_START, start_payload(["sleep", "5"])),
                               (KILN_MSG_SIGNAL, u16(9))], errno.EPROTO),
            (KILN_STREAM_PTY, [(KILN_MSG_START, start_payload(["sleep", "5"])),
                               (KILN_MSG_START, start_payload(["sleep", "5"]))], errno.EPROTO),
            (KILN_STREAM_FILE, [(KILN_MSG_DATA, b"x")], errno.EPROTO),
            (KILN_STREAM_FILE, [(KILN_MSG_FILE_REQUEST, u32(KILN_FILE_STAT) + sstr("/") + b"x")],
             errno.EPROTO),
            (KILN_STREAM_INFO, [], None)):
        c = a.conn(kind)
        for t, p in frames:
            c.send(t, p)
        if err is None:
            continue
        while True:  # STARTED may come first
            t, p = c.expect_frame()
            if t != KILN_MSG_STARTED:
                break
        check(t == KILN_MSG_ERROR, "expected ERROR, got %s" % describe(t, p))
        eq(errno.errorcode.get(parse_error(p)[0]), errno.errorcode[err], "errno for %s" % frames)
        c.expect_eof()
    # a frame cut short by a disconnect, and plain garbage
    c = malformed(a, KILN_STREAM_EXEC, hdr(100, KILN_MSG_START) + b"y" * 50)
    c.close()
    c = a.conn(None)
    try:
        c.raw(os.urandom(70000))
        f = c.recv()
        check(f is None or f[0] == KILN_MSG_ERROR, "garbage answered with %s" % (f,))
    except (BrokenPipeError, ConnectionResetError):
        pass
    keep.send(KILN_MSG_STDIN, b"still here\n")
    read_until(keep, kr, b"still here\n")
    keep.send(KILN_MSG_STDIN_EOF)
    eq(collect(keep, kr).exit, (0, 0, 0), "the other stream's exit")


def case_concurrent_20(a, d):
    results, errors = {}, []

    def one(i):
        try:
            results[i] = a.run(["sh", "-c", "echo start-%d; sleep 0.5; echo end-%d >&2; exit %d"
                                % (i, i, i)])
        except Exception as e:  # noqa: BLE001
            errors.append(e)
    t0 = time.monotonic()
    threads = [threading.Thread(target=one, args=(i,)) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    eq(errors, [], "errors")
    for i in range(20):
        r = results[i]
        eq((bytes(r.out), bytes(r.err), r.exit), (b"start-%d\n" % i, b"end-%d\n" % i, (i, 0, 0)),
           "stream %d" % i)
    check(time.monotonic() - t0 < 5, "took %.1fs: not concurrent" % (time.monotonic() - t0))


def case_busy(a, d):
    limit = agent_limit("AGENT_MAX_STREAMS")
    held = [start(a, ["sleep", "30"]) for _ in range(limit)]
    c = a.conn(None)
    expect_error(c, errno.EBUSY)
    for c, r in held:
        c.close()
    pids = [r.pid for c, r in held]
    wait_for(lambda: all(pid_gone(a, p) for p in pids), what="the held commands to be killed")
    eq(bytes(a.run(["echo", "free"]).out), b"free\n", "a stream after the limit cleared")


def agent_children(a):
    """{pid: state} of the agent's children, seen from the host."""
    kids = {}
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                f = open("/proc/%s/stat" % p).read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(f[1]) == a.pid:
                kids[int(p)] = f[0]
    return kids


def case_pid1(a, d):
    if not a.pid1:
        return "not PID 1 (KILN_AGENT_PID1=1 runs the agent as PID 1 of a namespace)"
    r = a.run(["sh", "-c", 'hostname; echo "$PATH:$HOME:$LANG"; test -r /proc/1/stat && echo proc'])
    eq(bytes(r.out), b"kiln\n/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
       b":/root:C.UTF-8\nproc\n", "environment")
    # an orphan is reparented to PID 1, which must reap it
    before = set(agent_children(a))
    a.run(["sh", "-c", "sleep 0.5 >/dev/null 2>&1 &"])
    time.sleep(0.2)
    orphans = set(agent_children(a)) - before
    check(orphans, "no orphan was reparented to the agent")
    wait_for(lambda: not orphans & set(agent_children(a)), what="the orphan to be reaped")


def case_no_zombies(a, d):
    wait_for(lambda: "Z" not in agent_children(a).values(), secs=3,
             what="the agent's zombies to go")


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import agent_port_cases  # noqa: E402 - uses the helpers above (as __main__)

globals().update({n: f for n, f in vars(agent_port_cases).items() if n.startswith("case_")})
CASES = [(n[5:].replace("_", "-"), f) for n, f in list(globals().items())
         if n.startswith("case_")]


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    binary = os.path.abspath(sys.argv[1])
    only = sys.argv[2:]
    failed = 0
    with tempfile.TemporaryDirectory(prefix="kiln-agent-test.") as work:
        agent = Agent(binary, work, pid1=os.environ.get("KILN_AGENT_PID1") == "1")
        for name, fn in CASES:
            if only and not any(o in name for o in only):
                continue
            scratch = tempfile.mkdtemp(dir=work, prefix=name + ".")
            t0 = time.monotonic()
            try:
                skip = fn(agent, scratch)
                if not agent.alive():
                    raise AssertionError("the agent died")
                print("ok   %-28s %6.2fs%s" % (name, time.monotonic() - t0,
                                              "  (skipped: %s)" % skip if skip else ""))
            except Exception as e:  # noqa: BLE001 - report any failure as FAIL
                failed += 1
                where = traceback.extract_tb(e.__traceback__)[-1]
                print("FAIL %-28s %s: %s (line %d)" % (name, type(e).__name__, e, where.lineno))
            sys.stdout.flush()
            if not agent.alive():
                break
        status = agent.stop()
        agent.log.seek(0)
        log = agent.log.read()
        if status != 0:
            failed += 1
            print("FAIL %-28s agent exit status %s; its log:\n%s" % ("agent-exit", status, log))
        else:
            print("ok   %-28s" % "agent-exit")
        if "ERROR: AddressSanitizer" in log or "runtime error" in log:
            failed += 1
            print("FAIL %-28s sanitizer report:\n%s" % ("sanitizers", log))
    print("%s%s: %d failed" % (os.path.basename(binary), " (PID 1)" if agent.pid1 else "", failed))
    return 1 if failed else 0


if __name__ == "__main__":
    rc = main()
    sys.stdout.flush()
    # a failed case can leave a reader thread blocked on its socket: do not
    # wait for it at interpreter exit
    os._exit(rc)
