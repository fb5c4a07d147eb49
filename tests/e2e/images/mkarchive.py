#!/usr/bin/env python3
"""A small container image archive in `docker save`'s layout, built here
(no registry is reachable): one layer with the host's static busybox, its
applets as links, an /etc/passwd and /etc/group with a user "app"
(1000:1000), and the directories given; the image config from the
options. Both kiln-image-import and `ctr image import` read it (the config's
rootfs.diff_ids are the layers' digests, which containerd checks).

    mkarchive.py OUT.tar --tag NAME:TAG [--workdir DIR] [--user USER]
                 [--entrypoint JSON] [--cmd JSON] [--env K=V]... [--dir DIR]...
                 [--file PATH=CONTENT]...
"""
import argparse
import hashlib
import io
import json
import tarfile

APPLETS = ["sh", "echo", "cat", "id", "pwd", "sleep", "ls", "true", "false", "kill", "env",
           "ps", "head", "wc", "yes", "seq", "wget", "nslookup", "nc", "printf"]


def layer(dirs, files):
    bio = io.BytesIO()
    with tarfile.open(fileobj=bio, mode="w", format=tarfile.PAX_FORMAT) as t:
        def add(name, kind, data=b"", mode=0o644, uid=0):
            ti = tarfile.TarInfo(name)
            ti.mode, ti.uid, ti.gid, ti.mtime = mode, uid, uid, 1700000000
            if kind == "dir":
                ti.type = tarfile.DIRTYPE
                t.addfile(ti)
            elif kind == "sym":
                ti.type, ti.linkname = tarfile.SYMTYPE, data
                t.addfile(ti)
            else:
                ti.size = len(data)
                t.addfile(ti, io.BytesIO(data))
        for d in ["bin", "etc", "tmp", "root", "home", "proc", "dev", "sys"]:
            add(d, "dir", mode=0o1777 if d == "tmp" else 0o755)
        add("home/app", "dir", mode=0o755, uid=1000)
        add("bin/busybox", "file", open("/bin/busybox", "rb").read(), 0o755)
        for a in APPLETS:
            add("bin/" + a, "sym", "busybox", 0o777)
        add("etc/passwd", "file", b"root:x:0:0:root:/root:/bin/sh\n"
            b"app:x:1000:1000:app:/home/app:/bin/sh\n")
        add("etc/group", "file", b"root:x:0:\napp:x:1000:\nstaff:x:50:\n")
        made = set()
        for d in dirs:
            parts = d.strip("/").split("/")
            for i in range(1, len(parts) + 1):
                p = "/".join(parts[:i])
                if p not in made and p not in ("bin", "etc", "tmp", "root", "home"):
                    made.add(p)
                    add(p, "dir", mode=0o777)
        for f in files:
            path, content = f.split("=", 1)
            add(path.strip("/"), "file", content.encode(), 0o644)
    return bio.getvalue()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--tag", required=True)
    ap.add_argument("--workdir")
    ap.add_argument("--user")
    ap.add_argument("--entrypoint")
    ap.add_argument("--cmd")
    ap.add_argument("--env", action="append", default=[])
    ap.add_argument("--dir", action="append", default=[])
    ap.add_argument("--file", action="append", default=[])
    a = ap.parse_args()
    lay = layer(a.dir, a.file)
    diff = "sha256:" + hashlib.sha256(lay).hexdigest()
    cfg = {"Env": ["PATH=/bin"] + a.env}
    if a.workdir:
        cfg["WorkingDir"] = a.workdir
    if a.user:
        cfg["User"] = a.user
    if a.entrypoint:
        cfg["Entrypoint"] = json.loads(a.entrypoint)
    if a.cmd:
        cfg["Cmd"] = json.loads(a.cmd)
    config = json.dumps({"architecture": "amd64", "os": "linux", "config": cfg,
                         "rootfs": {"type": "layers", "diff_ids": [diff]},
                         "created": "2026-01-01T00:00:00Z"}).encode()
    cname = hashlib.sha256(config).hexdigest() + ".json"
    lname = hashlib.sha256(lay).hexdigest() + "/layer.tar"
    with tarfile.open(a.out, "w") as t:
        def add(name, data):
            ti = tarfile.TarInfo(name)
            ti.size, ti.mtime = len(data), 1700000000
            t.addfile(ti, io.BytesIO(data))
        add(cname, config)
        add(lname, lay)
        add("manifest.json", json.dumps(
            [{"Config": cname, "RepoTags": [a.tag], "Layers": [lname]}]).encode())


if __name__ == "__main__":
    main()
