# Shared memory from Python, as the base image's python3 uses it: prints
# the same on the host and in the guest (tests/integration/cases/shm.sh).
import mmap
import multiprocessing as mp
import os
import sqlite3
from multiprocessing import shared_memory


def shm_child(name):
    s = shared_memory.SharedMemory(name=name)
    s.buf[:5] = b"child"
    s.close()


def value_child(v, a):
    for _ in range(500):
        with v.get_lock():
            v.value += 1
    with a.get_lock():
        for i in range(len(a)):
            a[i] *= 2


def run(ctx, target, *args):
    p = ctx.Process(target=target, args=args)
    p.start()
    p.join()
    return p.exitcode


def square(x):
    return x * x


def sqlite_child(db):
    con = sqlite3.connect(db, timeout=10)
    con.executemany("insert into t values (?)", [(i,) for i in range(100, 150)])
    con.commit()
    con.close()


def main():
    for method in ("fork", "forkserver", "spawn"):
        ctx = mp.get_context(method)
        s = shared_memory.SharedMemory(create=True, size=8192)
        s.buf[4096:4101] = b"first"
        code = run(ctx, shm_child, s.name)
        print(method, "shared_memory:", bytes(s.buf[:5]), bytes(s.buf[4096:4101]), code)
        s.close()
        s.unlink()
        v, a = ctx.Value("i", 0), ctx.Array("d", [1.0, 2.5, 4.0])
        procs = [ctx.Process(target=value_child, args=(v, a)) for _ in range(2)]
        for p in procs:
            p.start()
        for p in procs:
            p.join()
        print(method, "Value/Array:", v.value, list(a), [p.exitcode for p in procs])
    with mp.get_context("forkserver").Pool(2) as pool:
        print("Pool:", pool.map(square, range(8)))

    path = "/tmp/kiln-shm-mmap"
    with open(path, "wb") as f:
        f.write(b"\0" * 8192)
    with open(path, "r+b") as f:
        m = mmap.mmap(f.fileno(), 8192)
        m[100:105] = b"hello"
        m.flush()
        print("mmap: pread", os.pread(f.fileno(), 5, 100))
        pid = os.fork()
        if pid == 0:
            m[4096:4100] = b"fork"
            os._exit(0)
        os.waitpid(pid, 0)
        print("mmap: child's write", m[4096:4100], os.pread(f.fileno(), 4, 4096))
        f.write(b"via write")
        f.flush()
        print("mmap: sees write()", m[:9])
        m.resize(16384)
        m[16000:16003] = b"end"
        print("mmap: resized", os.fstat(f.fileno()).st_size, os.pread(f.fileno(), 3, 16000))
        m.close()
    os.unlink(path)
    anon = mmap.mmap(-1, 4096)
    pid = os.fork()
    if pid == 0:
        anon[:4] = b"anon"
        os._exit(0)
    os.waitpid(pid, 0)
    print("mmap: anonymous shared", anon[:4])

    db = "/tmp/kiln-shm-wal.db"
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(db + suffix):
            os.unlink(db + suffix)
    con = sqlite3.connect(db)
    print("sqlite: journal_mode", con.execute("pragma journal_mode=wal").fetchone()[0])
    con.execute("create table t (x integer)")
    con.executemany("insert into t values (?)", [(i,) for i in range(100)])
    con.commit()
    reader = sqlite3.connect(db)
    reader.execute("begin")
    print("sqlite: reader sees", reader.execute("select count(*) from t").fetchone()[0])
    code = run(mp.get_context("fork"), sqlite_child, db)
    print("sqlite: child", code, "reader's snapshot", reader.execute("select count(*) from t").fetchone()[0])
    reader.execute("commit")
    print("sqlite: after", reader.execute("select count(*), sum(x) from t").fetchone())
    print("sqlite: checkpoint", con.execute("pragma wal_checkpoint(truncate)").fetchone())
    print("sqlite: -shm exists", os.path.exists(db + "-shm"))
    reader.close()
    con.close()
    print("done")


if __name__ == "__main__":
    main()
