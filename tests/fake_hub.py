"""A fake Hugging Face Hub on 127.0.0.1 for fetch tests: the endpoints ``huggingface_hub`` calls
for a pinned download, nothing else.

- ``GET /api/models/<repo>/revision/<rev>?blobs=True``: ``{"id", "sha", "siblings": [...]}``;
  a sibling lists ``size`` and ``blobId`` (git blob sha1) and, for weight files, ``lfs``
  (``sha256``, ``size``, ``pointerSize``), as the hub does.
- ``HEAD``/``GET /<repo>/resolve/<rev>/<file>``: ``X-Repo-Commit``, ``ETag``, ``Content-Length``
  and the body on GET; for weight (LFS) files, as the hub does, a 302 to a "CDN" on another host
  name (``localhost``, so ``huggingface_hub`` does not follow it for metadata) carrying
  ``X-Linked-Etag`` (the sha256) and ``X-Linked-Size``; ``GET /cdn/<sha256>/<file>`` there serves
  the bytes.

Unknown repositories, revisions and files answer 404 with the hub's ``X-Error-Code``. Faults:
``status[(method, path suffix)] = code`` answers that code; ``delay[path prefix] = seconds``
waits first; ``corrupt`` names files the CDN serves damaged. The server runs in a daemon
thread and stops by itself after ``lifetime`` seconds (or on :meth:`stop`).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlparse

LFS_SUFFIXES = (".pt", ".ckpt", ".bin", ".safetensors", ".onnx", ".nemo")


def git_blob_sha1(data: bytes) -> str:
    return hashlib.sha1(f"blob {len(data)}\0".encode() + data).hexdigest()


@dataclass
class Repo:
    refs: dict[str, str] = field(default_factory=dict)
    commits: dict[str, dict[str, bytes]] = field(default_factory=dict)


class FakeHub:
    def __init__(self, lifetime: float = 300.0) -> None:
        self.repos: dict[str, Repo] = {}
        self.status: dict[tuple[str, str], int] = {}
        self.delay: dict[str, float] = {}
        #: File names whose bytes the CDN serves with one byte flipped (same size).
        self.corrupt: set[str] = set()
        self.requests: list[tuple[str, str]] = []
        #: (path, Authorization header or "") of every request.
        self.auth: list[tuple[str, str]] = []
        self._counter = 0
        hub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:  # quiet
                pass

            def do_GET(self) -> None:
                hub.handle(self, "GET")

            def do_HEAD(self) -> None:
                hub.handle(self, "HEAD")

        class Server(ThreadingHTTPServer):
            def handle_error(self, request: object, client_address: object) -> None:  # a client gave up (timeout test)
                pass

        self.server = Server(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()
        self.timer = threading.Timer(lifetime, self.stop)
        self.timer.daemon = True
        self.timer.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def stop(self) -> None:
        self.timer.cancel()
        self.server.shutdown()
        self.server.server_close()

    def publish(self, repo: str, folder: Path | dict[str, bytes], branch: str = "main") -> str:
        """A new commit on ``branch`` holding the folder's files; returns its 40-hex id."""
        files = folder if isinstance(folder, dict) else {p.name: p.read_bytes() for p in sorted(Path(folder).iterdir())}
        self._counter += 1
        digest = hashlib.sha1(f"{repo}:{self._counter}".encode())
        for name, data in sorted(files.items()):
            digest.update(name.encode() + hashlib.sha256(data).digest())
        commit = digest.hexdigest()
        r = self.repos.setdefault(repo, Repo())
        r.commits[commit] = dict(files)
        r.refs[branch] = commit
        return commit

    # ------------------------------------------------------------------ serving

    def handle(self, req: BaseHTTPRequestHandler, method: str) -> None:
        path = unquote(urlparse(req.path).path)
        self.requests.append((method, path))
        self.auth.append((path, req.headers.get("Authorization", "")))
        for prefix, seconds in self.delay.items():
            if path.startswith(prefix):
                time.sleep(seconds)
        for (m, suffix), code in self.status.items():
            if m == method and path.endswith(suffix):
                return self.reply(req, method, code, b"fault injected", {})
        if path.startswith("/api/models/"):
            return self.info(req, method, path[len("/api/models/") :])
        if path.startswith("/cdn/"):
            return self.cdn(req, method, path[len("/cdn/") :])
        return self.resolve(req, method, path.lstrip("/"))

    def reply(self, req: BaseHTTPRequestHandler, method: str, code: int, body: bytes, headers: dict[str, str]) -> None:
        req.send_response(code)
        for k, v in headers.items():
            req.send_header(k, v)
        req.send_header("Content-Length", str(len(body)))
        req.end_headers()
        if method == "GET":
            req.wfile.write(body)

    def _commit(self, repo: str, rev: str) -> tuple[str | None, str | None]:
        r = self.repos.get(repo)
        if r is None:
            return None, "RepoNotFound"
        commit = r.refs.get(rev) or (rev if rev in r.commits else None)
        return commit, None if commit else "RevisionNotFound"

    def info(self, req: BaseHTTPRequestHandler, method: str, rest: str) -> None:
        repo, _, rev = rest.partition("/revision/")
        commit, error = self._commit(repo, rev or "main")
        if commit is None:
            return self.reply(req, method, 404, b'{"error": "not found"}', {"X-Error-Code": str(error)})
        siblings = []
        for name, data in sorted(self.repos[repo].commits[commit].items()):
            s = {"rfilename": name, "size": len(data), "blobId": git_blob_sha1(data)}
            if name.endswith(LFS_SUFFIXES):
                s["lfs"] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data), "pointerSize": 134}
            siblings.append(s)
        body = json.dumps({"id": repo, "modelId": repo, "sha": commit, "private": False, "siblings": siblings})
        self.reply(req, method, 200, body.encode(), {"Content-Type": "application/json"})

    def resolve(self, req: BaseHTTPRequestHandler, method: str, rest: str) -> None:
        org, name, kind, rev, filename = (rest.split("/", 4) + ["", "", "", "", ""])[:5]
        repo = f"{org}/{name}"
        commit, error = self._commit(repo, rev) if kind == "resolve" else (None, "RepoNotFound")
        data = self.repos[repo].commits[commit].get(filename) if commit else None
        if data is None:
            headers = {"X-Error-Code": error or "EntryNotFound", **({"X-Repo-Commit": commit} if commit else {})}
            return self.reply(req, method, 404, b"not found", headers)
        if filename.endswith(LFS_SUFFIXES):
            sha = hashlib.sha256(data).hexdigest()
            port = self.server.server_address[1]
            headers = {
                "X-Repo-Commit": commit,
                "X-Linked-Etag": f'"{sha}"',
                "X-Linked-Size": str(len(data)),
                "Location": f"http://localhost:{port}/cdn/{sha}/{filename}",
            }
            return self.reply(req, method, 302, b"", headers)
        headers = {"X-Repo-Commit": commit, "ETag": f'"{git_blob_sha1(data)}"', "Content-Type": "text/plain"}
        self.reply(req, method, 200, data, headers)

    def cdn(self, req: BaseHTTPRequestHandler, method: str, rest: str) -> None:
        sha, _, filename = rest.partition("/")
        for repo in self.repos.values():
            for files in repo.commits.values():
                for data in files.values():
                    if hashlib.sha256(data).hexdigest() == sha:
                        if filename in self.corrupt:
                            data = data[:-1] + bytes([data[-1] ^ 0xFF])
                        return self.reply(req, method, 200, data, {"ETag": f'"{sha}"'})
        self.reply(req, method, 404, b"no such blob", {})
