#!/usr/bin/env python3
"""kiln-image-import end to end: image archives made here (no registry is
reachable), imported, and booted as kiln images; hostile archives refused
without writing outside the image cache.

    image_import_test.py IMPORT VMM KERNEL WORKDIR

The good image has two layers, as `docker save` writes them: the first with
busybox, a symlink, a hard link, a directory of files, a file with an
xattr-free odd mode and an owner; the second replaces a file, removes one
(.wh.NAME) and makes a directory opaque (.wh..wh..opq) while adding to it.
The same image as an OCI layout (index.json, blobs/sha256, gzip layers)
must import the same. Prints ok/FAIL lines; exits 1 if any failed.
"""
import gzip
import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile

IMPORT, VMM, KERNEL, WORK = sys.argv[1:5]
BUSYBOX = "/bin/busybox"
failures = 0


def ok(name):
    print("ok   import-%s" % name)


def fail(name, why):
    global failures
    failures += 1
    print("FAIL import-%s: %s" % (name, why))


def tar_bytes(entries):
    """entries: (name, kind, data_or_target, mode, uid) -> tar bytes."""
    bio = io.BytesIO()
    with tarfile.open(fileobj=bio, mode="w", format=tarfile.PAX_FORMAT) as t:
        for name, kind, data, mode, uid in entries:
            ti = tarfile.TarInfo(name)
            ti.mode, ti.uid, ti.gid, ti.mtime = mode, uid, uid, 1700000000
            if kind == "dir":
                ti.type = tarfile.DIRTYPE
                t.addfile(ti)
            elif kind == "sym":
                ti.type, ti.linkname = tarfile.SYMTYPE, data
                t.addfile(ti)
            elif kind == "hard":
                ti.type, ti.linkname = tarfile.LNKTYPE, data
                t.addfile(ti)
            else:
                ti.size = len(data)
                t.addfile(ti, io.BytesIO(data))
    return bio.getvalue()


def layers_good():
    bb = open(BUSYBOX, "rb").read()
    one = [
        ("bin", "dir", None, 0o755, 0), ("bin/busybox", "file", bb, 0o755, 0),
        ("bin/sh", "sym", "busybox", 0o777, 0),
        ("etc", "dir", None, 0o755, 0), ("etc/motd", "file", b"layer one\n", 0o644, 0),
        ("etc/hard", "hard", "etc/motd", 0o644, 0),
        ("data", "dir", None, 0o755, 0), ("data/keep", "file", b"keep\n", 0o600, 1000),
        ("data/gone", "file", b"gone\n", 0o644, 0),
        ("opaque", "dir", None, 0o755, 0), ("opaque/old", "file", b"old\n", 0o644, 0),
        ("home", "dir", None, 0o755, 0), ("home/user", "dir", None, 0o750, 1000),
    ]
    two = [
        ("etc", "dir", None, 0o755, 0), ("etc/motd", "file", b"layer two\n", 0o644, 0),
        ("data", "dir", None, 0o755, 0), ("data/.wh.gone", "file", b"", 0o644, 0),
        ("opaque", "dir", None, 0o755, 0), ("opaque/.wh..wh..opq", "file", b"", 0o644, 0),
        ("opaque/new", "file", b"new\n", 0o644, 0),
    ]
    return [tar_bytes(one), tar_bytes(two)]


CONFIG = {"architecture": "amd64", "os": "linux",
          "config": {"Env": ["PATH=/bin", "GREETING=hello"], "Cmd": ["/bin/sh"],
                     "WorkingDir": "/home/user", "User": "1000"},
          "rootfs": {"type": "layers", "diff_ids": []}}


def docker_archive(path, layers, manifest=None, config=CONFIG, extra=()):
    with tarfile.open(path, "w") as t:
        def add(name, data):
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            t.addfile(ti, io.BytesIO(data))
        cfg = json.dumps(config).encode()
        cname = "blobs/sha256/" + hashlib.sha256(cfg).hexdigest()
        add(cname, cfg)
        names = []
        for data in layers:
            n = "blobs/sha256/" + hashlib.sha256(data).hexdigest()
            add(n, data)
            names.append(n)
        for name, data in extra:
            add(name, data)
        m = manifest if manifest is not None else [
            {"Config": cname, "RepoTags": ["example.org/team/App:1.0"], "Layers": names}]
        add("manifest.json", json.dumps(m).encode())


def oci_archive(path, layers):
    with tarfile.open(path, "w") as t:
        def add(name, data):
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            t.addfile(ti, io.BytesIO(data))

        def blob(data):
            d = hashlib.sha256(data).hexdigest()
            add("blobs/sha256/" + d, data)
            return "sha256:" + d
        cfg = blob(json.dumps(CONFIG).encode())
        lays = [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                 "digest": blob(gzip.compress(l, mtime=0))} for l in layers]
        man = blob(json.dumps({"schemaVersion": 2, "config": {"digest": cfg}, "layers": lays}).encode())
        add("oci-layout", b'{"imageLayoutVersion":"1.0.0"}')
        add("index.json", json.dumps({"schemaVersion": 2, "manifests": [
            {"digest": man, "annotations": {"org.opencontainers.image.ref.name": "ocitest"}}]}).encode())


def run_import(archive, name, *extra):
    return subprocess.run([IMPORT, "--cache", os.path.join(WORK, "cache"), "--out",
                           os.path.join(WORK, "images"), "--name", name, *extra, archive],
                          capture_output=True, text=True, timeout=120)


def boot(image, script):
    r = subprocess.run([VMM, "--kernel", KERNEL, "--image", image, "--", "/bin/busybox", "sh",
                        "-c", script], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    return r.stdout.replace("\r", ""), r.returncode


CHECK = ("cat /etc/motd; cat /etc/hard; ls /data; ls /opaque; readlink /bin/sh; "
         "busybox stat -c '%a %u' /data/keep /home/user; grep GREETING /etc/kiln-env")
WANT = ["layer two", "layer one", "keep", "new", "busybox", "600 1000", "750 1000",
        "GREETING=hello"]


def case_good(kind):
    arc = os.path.join(WORK, kind + ".tar")
    (docker_archive if kind == "docker" else oci_archive)(arc, layers_good())
    name = "imp" + kind
    r = run_import(arc, name)
    img = os.path.join(WORK, "images", name + ".erofs")
    if r.returncode != 0 or not os.path.exists(img):
        return fail(kind, "import failed (%d): %s" % (r.returncode, r.stderr.strip()))
    if "layer 2 of 2" not in r.stdout:
        return fail(kind, "no progress per layer: %r" % r.stdout)
    man = json.load(open(os.path.join(WORK, "images", name + ".json")))
    if man.get("cmd") != ["/bin/sh"] or "GREETING=hello" not in man.get("env", []) \
            or man.get("workingDir") != "/home/user" or man.get("user") != "1000":
        return fail(kind, "the manifest lost the image config: %r" % man)
    out, rc = boot(img, CHECK)
    lines = [l for l in out.split("\n") if l]
    if rc != 0 or lines != WANT:
        return fail(kind, "the guest saw %r (status %d), wanted %r" % (lines, rc, WANT))
    r2 = run_import(arc, name)
    if r2.returncode != 0 or "cached" not in r2.stdout:
        return fail(kind, "a second import did not use the cache: %r" % r2.stdout)
    ok("%s (2 layers: whiteout, opaque dir, hard link, owners and modes, config; cached again)" % kind)


def outside_untouched(marker):
    return not os.path.exists(marker)


def case_hostile():
    """Each archive must be refused with a message, and write nothing out of
    the cache; the marker is where an escape would land."""
    marker_dir = os.path.join(WORK, "outside")
    os.makedirs(marker_dir, exist_ok=True)
    marker = os.path.join(marker_dir, "pwned")
    rel = os.path.relpath(marker, "/")
    bb = [("bin", "dir", None, 0o755, 0)]
    cases = {
        "dotdot": [tar_bytes(bb + [("../../../../../../../" + rel, "file", b"x", 0o644, 0)])],
        "symlink-escape": [tar_bytes([("evil", "sym", marker_dir, 0o777, 0),
                                      ("evil/pwned", "file", b"x", 0o644, 0)])],
        "symlink-then-layer": [tar_bytes([("evil", "sym", marker_dir, 0o777, 0)]),
                               tar_bytes([("evil/pwned", "file", b"x", 0o644, 0)])],
        "hardlink-out": [tar_bytes([("h", "hard", "../../../../../../../etc/passwd", 0o644, 0)])],
        "hardlink-through-symlink": [tar_bytes([("evil", "sym", "/etc", 0o777, 0),
                                                ("h", "hard", "evil/passwd", 0o644, 0)])],
        "whiteout-through-symlink": [tar_bytes([("evil", "sym", marker_dir, 0o777, 0)]),
                                     tar_bytes([("evil/.wh.keepme", "file", b"", 0o644, 0)])],
    }
    keep = os.path.join(marker_dir, "keepme")
    open(keep, "w").write("must stay")
    for name, layers in cases.items():
        arc = os.path.join(WORK, name + ".tar")
        docker_archive(arc, layers)
        r = run_import(arc, "hostile")
        escaped = not outside_untouched(marker) or not os.path.exists(keep)
        refused = r.returncode != 0 and "kiln-image-import:" in r.stderr
        # A whiteout through a symlink has nothing below it to remove, and
        # an entry under a symlink replaces the link with a directory of
        # the image's (libarchive's secure unlink): either may succeed, as
        # long as nothing outside the root was written or removed.
        if name in ("whiteout-through-symlink", "symlink-escape", "symlink-then-layer") \
                and r.returncode == 0 and not escaped:
            ok("hostile-%s (contained: nothing outside touched)" % name)
            continue
        if escaped:
            fail("hostile-" + name, "wrote or removed outside the image root")
        elif not refused:
            fail("hostile-" + name, "not refused (%d): %s %s" % (r.returncode, r.stdout, r.stderr))
        else:
            ok("hostile-%s (%s)" % (name, r.stderr.strip().splitlines()[-1][:100]))
    # Archives that are not images, or lie about their contents.
    bad = os.path.join(WORK, "bad.tar")
    for name, make in {
        "no-index": lambda: docker_archive(bad, layers_good(), manifest=[]),
        "config-outside": lambda: docker_archive(bad, layers_good(), manifest=[
            {"Config": "../../etc/passwd", "Layers": []}]),
        "layer-missing": lambda: docker_archive(bad, [], manifest=[
            {"Config": "blobs/sha256/" + hashlib.sha256(json.dumps(CONFIG).encode()).hexdigest(),
             "Layers": ["blobs/sha256/" + "0" * 64]}]),
        "truncated": lambda: (docker_archive(bad, layers_good()),
                              os.truncate(bad, os.path.getsize(bad) // 2)),
        "garbage": lambda: open(bad, "wb").write(os.urandom(10000)),
    }.items():
        make()
        r = run_import(bad, "bad")
        if r.returncode == 0 or "kiln-image-import:" not in r.stderr:
            fail("bad-" + name, "not refused (%d): %s" % (r.returncode, r.stderr))
        else:
            ok("bad-%s (%s)" % (name, r.stderr.strip().splitlines()[-1][:100]))
    # Nothing is left behind in the cache but finished images.
    stray = [f for f in os.listdir(os.path.join(WORK, "cache", "images")) if f.startswith(".import")]
    if stray:
        fail("cleanup", "staging directories left in the cache: %r" % stray)
    else:
        ok("cleanup (no staging directory left after refusals)")


def case_limit():
    arc = os.path.join(WORK, "big.tar")
    docker_archive(arc, [tar_bytes([("big", "file", b"\0" * (3 << 20), 0o644, 0)])])
    r = run_import(arc, "big", "--max-size", "2")
    if r.returncode == 0 or "limit" not in r.stderr:
        return fail("max-size", "a 3 MiB image passed --max-size 2: %s" % r.stderr)
    ok("max-size (%s)" % r.stderr.strip()[:100])


case_good("docker")
case_good("oci")
case_hostile()
case_limit()
sys.exit(1 if failures else 0)
