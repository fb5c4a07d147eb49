"""Build a tiny pure-Python wheel (kilnpkg 1.0) and a PEP 503 simple index
for it under DIR, for tests/e2e/net.sh's pip install through
host.kiln.internal."""
import base64
import hashlib
import os
import sys
import zipfile

root = sys.argv[1]
pkg = os.path.join(root, "simple", "kilnpkg")
os.makedirs(pkg, exist_ok=True)
name = "kilnpkg-1.0-py3-none-any.whl"
files = {
    "kilnpkg/__init__.py": 'VALUE = "from-the-wheel"\n',
    "kilnpkg-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: kilnpkg\nVersion: 1.0\n",
    "kilnpkg-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: kiln-test\n"
    "Root-Is-Purelib: true\nTag: py3-none-any\n",
}
record = []
for path, text in files.items():
    digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
    record.append("%s,sha256=%s,%d" % (path, digest.decode(), len(text.encode())))
record.append("kilnpkg-1.0.dist-info/RECORD,,")
files["kilnpkg-1.0.dist-info/RECORD"] = "\n".join(record) + "\n"
with zipfile.ZipFile(os.path.join(pkg, name), "w") as z:
    for path, text in files.items():
        z.writestr(path, text)
with open(os.path.join(pkg, "index.html"), "w") as f:
    f.write('<!DOCTYPE html><html><body><a href="%s">%s</a></body></html>\n' % (name, name))
with open(os.path.join(root, "simple", "index.html"), "w") as f:
    f.write('<!DOCTYPE html><html><body><a href="kilnpkg/">kilnpkg</a></body></html>\n')
