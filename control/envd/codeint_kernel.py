# The Python side of kilnd's code interpreter (control/envd/codeint.c): one
# process per code context, run in the sandbox as `python3 -c <this>`.
#
# Requests arrive on stdin, one JSON object per line:
#   {"code": "...", "env_vars": {...}}
# Answers go to the original stdout, one JSON object per line, in the shape
# the E2B code-interpreter SDK reads from POST /execute: "stdout"/"stderr"
# (text as it is written), "result" (the value of a final expression, and
# each matplotlib figure, in the formats the object offers), "error" (name,
# value, traceback), "number_of_executions", then "end_of_execution".
# Before the first request: {"type": "ready"}; {"ping": true} is answered
# {"type": "pong"} (kilnd's marker after attaching again).
#
# File descriptors 1 and 2 are pipes read by two threads, so output of
# subprocesses and C extensions is caught as well as print(). SIGINT
# (kilnd sends it when the client goes away) interrupts the running code.
import ast
import base64
import codecs
import json
import linecache
import os
import signal
import sys
import threading
import traceback

# first, so that a failure still goes to the original stderr (kilnd's message)
_cwd = os.environ.pop("KILN_CI_CWD", "/")
os.makedirs(_cwd, exist_ok=True)
os.chdir(_cwd)
os.environ["PWD"] = _cwd

_proto = os.fdopen(os.dup(1), "w", encoding="utf-8", errors="replace")
_lock = threading.Lock()
_SYNC = b"\x00kiln-sync\x00"


def _send(*msgs):
    text = "".join(json.dumps(m, ensure_ascii=False, default=str) + "\n" for m in msgs)
    with _lock:
        _proto.write(text)
        _proto.flush()


def _partial(data):
    """How many bytes at the end of data may begin a sync marker."""
    for k in range(min(len(data), len(_SYNC) - 1), 0, -1):
        if data.endswith(_SYNC[:k]):
            return k
    return 0


class _Pipe(threading.Thread):
    """Reads one of fd 1 and 2 and sends what arrives as stdout/stderr."""

    def __init__(self, fd, kind):
        super().__init__(daemon=True)
        r, w = os.pipe()
        os.dup2(w, fd)
        os.close(w)
        self.r, self.kind = r, kind
        self.synced = threading.Event()
        self.start()

    def run(self):
        # SIGINT is for the main thread, which runs the code
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        dec = codecs.getincrementaldecoder("utf-8")("replace")
        pend = b""
        while True:
            data = os.read(self.r, 65536)
            if not data:
                return
            parts = (pend + data).split(_SYNC)
            pend = parts.pop()
            # held back: only what may be the start of a marker
            keep = _partial(pend)
            text = dec.decode(b"".join(parts) + pend[:len(pend) - keep])
            pend = pend[len(pend) - keep:]
            if text:
                _send({"type": self.kind, "text": text})
            if parts:
                self.synced.set()


def _sync():
    """Wait until everything written to fds 1 and 2 so far has been sent."""
    for fd, pipe in enumerate(_pipes, 1):
        pipe.synced.clear()
        os.write(fd, _SYNC)
    for pipe in _pipes:
        pipe.synced.wait()


_pipes = (_Pipe(1, "stdout"), _Pipe(2, "stderr"))
sys.stdout = open(1, "w", encoding="utf-8", errors="replace", buffering=1, closefd=False)
sys.stderr = open(2, "w", encoding="utf-8", errors="replace", buffering=1, closefd=False)

_FORMATS = (
    ("html", "_repr_html_"),
    ("markdown", "_repr_markdown_"),
    ("svg", "_repr_svg_"),
    ("png", "_repr_png_"),
    ("jpeg", "_repr_jpeg_"),
    ("pdf", "_repr_pdf_"),
    ("latex", "_repr_latex_"),
    ("json", "_repr_json_"),
    ("javascript", "_repr_javascript_"),
)


def _result(obj, main):
    msg = {"type": "result", "is_main_result": main, "text": repr(obj)}
    for key, meth in _FORMATS:
        fn = getattr(obj, meth, None)
        if not callable(fn) or isinstance(obj, type):
            continue
        try:
            val = fn()
        except Exception:
            continue
        if isinstance(val, tuple):  # (data, metadata)
            val = val[0]
        if val is None:
            continue
        if isinstance(val, bytes):
            val = base64.b64encode(val).decode()
        msg[key] = val
    _send(msg)


def display(*objs):
    """IPython's display(): each object as a result that is not the main one."""
    for obj in objs:
        _result(obj, False)


def _figures():
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None:
        return
    import io

    for num in plt.get_fignums():
        fig = plt.figure(num)
        buf = io.BytesIO()
        try:
            fig.savefig(buf, format="png", bbox_inches="tight")
        except Exception:
            continue
        _send({
            "type": "result",
            "is_main_result": False,
            "text": repr(fig),
            "png": base64.b64encode(buf.getvalue()).decode(),
        })
    plt.close("all")


_ns = {"__name__": "__main__", "__builtins__": __builtins__, "display": display}
_count = 0


def _run(code):
    # each cell has its own name, known to linecache for tracebacks
    name = "<cell-%d>" % _count
    linecache.cache[name] = (len(code), None, code.splitlines(True), name)
    tree = ast.parse(code, name, "exec")
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    exec(compile(tree, name, "exec"), _ns)
    if last is not None:
        value = eval(compile(last, name, "eval"), _ns)
        if value is not None:
            _ns["_"] = value
            _result(value, True)


def _interrupt(signum, frame):
    # only the code of an execution is interrupted, never the loop around it
    if _busy:
        raise KeyboardInterrupt


_busy = False
signal.signal(signal.SIGINT, _interrupt)


def _execute(req):
    global _count, _busy
    _count += 1
    saved = {}
    for k, v in (req.get("env_vars") or {}).items():
        saved[k] = os.environ.get(k)
        os.environ[k] = str(v)
    try:
        _busy = True
        try:
            _run(req.get("code", ""))
            _figures()
        finally:
            _busy = False
    except BaseException as e:
        if isinstance(e, SystemExit) and not e.code:
            pass
        else:
            tb = e.__traceback__
            # leave out this file's frames: the user's code starts in a cell
            while tb is not None and not tb.tb_frame.f_code.co_filename.startswith("<cell-"):
                tb = tb.tb_next
            lines = traceback.format_exception(type(e), e, tb)
            _send({
                "type": "error",
                "name": type(e).__name__,
                "value": str(e),
                "traceback": "".join(lines),
            })
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        _sync()
    _send({"type": "number_of_executions", "execution_count": _count},
          {"type": "end_of_execution"})


def main():
    # requests come on a private copy of stdin; the code gets /dev/null
    stdin = os.fdopen(os.dup(0), "rb", buffering=0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    sys.stdin = open(0, "r", closefd=False)
    _send({"type": "ready"})
    buf = b""
    while True:
        chunk = stdin.read(65536)
        if not chunk:
            return
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            try:
                req = json.loads(line)
            except ValueError:
                continue
            if req.get("ping"):
                _send({"type": "pong"})
                continue
            _execute(req)


main()
