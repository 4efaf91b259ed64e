#!/usr/bin/env python3
"""A throw-away npm registry for tests/sandbox/checks/egress.sh, on ADDR:PORT
(of a network namespace the test made): one package, eg-tiny 1.0.0, whose
tarball is made here (package/package.json and package/index.js).
Usage: npm-registry.py ADDR PORT NAME READY_FILE (NAME: the host name the
tarball's URL gives, as the sandbox reaches the registry)"""
import base64
import hashlib
import http.server
import io
import json
import sys
import tarfile

addr, port, name, ready = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]


def tarball():
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for path, text in (("package/package.json", '{"name": "eg-tiny", "version": "1.0.0", "main": "index.js"}\n'),
                           ("package/index.js", "exports.value = 'eg-tiny from the local registry';\n")):
            data = text.encode()
            info = tarfile.TarInfo(path)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


TGZ = tarball()
DOC = json.dumps({
    "name": "eg-tiny",
    "dist-tags": {"latest": "1.0.0"},
    "versions": {"1.0.0": {
        "name": "eg-tiny", "version": "1.0.0", "main": "index.js",
        "dist": {"tarball": f"http://{name}:{port}/eg-tiny/-/eg-tiny-1.0.0.tgz",
                 "shasum": hashlib.sha1(TGZ).hexdigest(),
                 "integrity": "sha512-" + base64.b64encode(hashlib.sha512(TGZ).digest()).decode()}}},
}).encode()


class Registry(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        path = self.path.split("?")[0]
        body = DOC if path == "/eg-tiny" else TGZ if path == "/eg-tiny/-/eg-tiny-1.0.0.tgz" else None
        if body is None:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json" if body is DOC else "application/octet-stream")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer((addr, port), Registry)
open(ready, "w").close()
server.serve_forever()
