"""A minimal npm registry for tests/e2e/net.sh's npm install through
host.kiln.internal:

    python3 npm_registry.py PORT DIR

serves every DIR/NAME-VERSION.tgz (made by `npm pack`) as package NAME:
GET /NAME is the packument (the package metadata document npm asks for,
with each version's package.json, tarball URL and integrity), GET
/NAME/-/NAME-VERSION.tgz the tarball. Tarball URLs name the host the
client asked for (its Host header), so the guest (host.kiln.internal) and
the host (127.0.0.1) can both install from it. Anything else, npm's audit
POST among them, is a 404 that npm takes as "nothing there". Prints
"ready PORT" once listening (PORT 0: one the kernel picks) and logs each
request to stderr."""
import base64
import hashlib
import http.server
import io
import json
import os
import re
import sys
import tarfile

port, root = int(sys.argv[1]), sys.argv[2]
TGZ = re.compile(r"^(?P<name>[a-z0-9][a-z0-9._-]*)-(?P<version>\d+\.\d+\.\d+)\.tgz$")


def versions(name):
    """{version: (package.json dict, tarball bytes)} of NAME's tarballs."""
    out = {}
    for f in sorted(os.listdir(root)):
        m = TGZ.match(f)
        if not m or m["name"] != name:
            continue
        with open(os.path.join(root, f), "rb") as fh:
            data = fh.read()
        with tarfile.open(fileobj=io.BytesIO(data)) as t:
            manifest = json.load(t.extractfile("package/package.json"))
        out[m["version"]] = (manifest, data)
    return out


class Registry(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def reply(self, code, body, ctype="application/json"):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def not_found(self):
        self.reply(404, b'{"error":"not found"}')

    def do_GET(self):
        parts = self.path.split("?")[0].strip("/").split("/")
        if len(parts) == 1 and parts[0]:
            self.packument(parts[0])
        elif len(parts) == 3 and parts[1] == "-":
            m = TGZ.match(parts[2])
            vs = versions(parts[0]) if m and m["name"] == parts[0] else {}
            if m and m["version"] in vs:
                self.reply(200, vs[m["version"]][1], "application/octet-stream")
            else:
                self.not_found()
        else:
            self.not_found()

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(n)
        self.not_found()

    def packument(self, name):
        vs = versions(name)
        if not vs:
            return self.not_found()
        host = self.headers.get("Host") or "127.0.0.1:%d" % port
        doc = {"name": name, "versions": {}, "dist-tags": {}}
        for v, (manifest, data) in vs.items():
            fname = "%s-%s.tgz" % (name, v)
            dist = {
                "tarball": "http://%s/%s/-/%s" % (host, name, fname),
                "shasum": hashlib.sha1(data).hexdigest(),
                "integrity": "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode(),
            }
            doc["versions"][v] = dict(manifest, dist=dist)
        doc["dist-tags"]["latest"] = max(vs, key=lambda v: tuple(map(int, v.split("."))))
        self.reply(200, json.dumps(doc).encode())

    def log_message(self, fmt, *args):
        sys.stderr.write("npm-registry: " + fmt % args + "\n")


server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Registry)
print("ready", server.server_address[1], flush=True)
server.serve_forever()
