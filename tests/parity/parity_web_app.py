"""The web app's Files and Search tabs as a front end: the calls ``server/static/files.js`` and
``search.js`` send, in their shapes and order (a real server on loopback).

The tabs show what these calls answer, and nothing else: the tree lists one folder at a time
and opens folders one by one, a preview reads at most 2000 lines (a PDF or DOCX as its text),
an edit reads the version first and saves on it, a download reads the bytes, a delete looks at
the entry first, an upload is a form, and search asks for one more hit than a page shows."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from parity_edges import HttpApi, _answer


class WebApp(HttpApi):
    """What the Files and Search tabs send."""

    entry: ClassVar[Mapping[str, str]] = {
        "describe": "GET /v1/me",
        "read": "GET /v1/files/read",
        "read_bytes": "GET /v1/files/read",
        "stat": "GET /v1/files/stat",
        "list": "GET /v1/files",
        "search": "POST /v1/search",
        "write": "POST /v1/files/write",
        "create": "POST /v1/ingest",
        "mkdir": "POST /v1/files/mkdir",
        "delete": "POST /v1/files/delete",
        "move": "POST /v1/files/move",
        "index": "GET /v1/index/status",
    }

    def _get(self, route: str, **query: Any) -> Any:
        return _answer(self.http.get(route, params=query))

    def _post(self, route: str, body: dict[str, Any]) -> Any:
        return _answer(self.http.post(route, json=body))

    def _tree(self, path: str) -> Any:
        """Every folder opened, one listing at a time, as a user opens the whole tree."""
        answers = [self._get("/v1/files", path=path)]
        body = answers[0]["body"]
        for entry in body.get("entries", []) if isinstance(body, dict) else []:
            if entry["kind"] == "directory":
                answers.append(self._tree(entry["path"]))
        return answers

    def call(self, op: str, a: dict[str, Any]) -> Any:
        if op == "describe":
            return self._get("/v1/me")
        if op == "read":  # a citation's or a hit's lines, or the preview
            if "offset" in a:
                return self._get(
                    "/v1/files/read", path=a["path"], offset=a["offset"], limit=a["limit"]
                )
            document = a["path"].lower().endswith((".pdf", ".docx"))
            extra = {"format": "document"} if document else {}
            return self._get("/v1/files/read", path=a["path"], limit="2000", **extra)
        if op == "read_bytes":  # the download button: the whole file
            return self._get("/v1/files/read", path=a["path"], format="bytes")
        if op == "stat":
            return self._get("/v1/files/stat", path=a["path"])
        if op == "list":
            if a.get("recursive"):
                return self._tree(a["path"])
            return self._get("/v1/files", path=a["path"])
        if op == "search":
            body = {"query": a["query"], "k": 11, "path": a.get("path", "/")}
            return self._post("/v1/search", body)
        if op == "write":  # open the editor (the version first), then save on that version
            seen = self._get("/v1/files/stat", path=a["path"])
            if seen["status"] != 200:  # "New file", then its first save
                body = {"path": a["path"], "content": a["content"], "mode": "create"}
                return [seen, self._post("/v1/files/write", body)]
            version = seen["body"]["version"]
            body = {"path": a["path"], "content": a["content"], "mode": "overwrite"}
            return [seen, self._post("/v1/files/write", body | {"if_version": version})]
        if op == "create":  # an upload into the folder (drag and drop or the file picker)
            folder, name = a["path"].rsplit("/", 1)
            files = {"file": (name, a["content"].encode(), "text/markdown")}
            return _answer(self.http.post("/v1/ingest", data={"path": folder or "/"}, files=files))
        if op == "mkdir":
            body = {"path": a["path"], "parents": False, "exist_ok": False}
            return self._post("/v1/files/mkdir", body)
        if op == "delete":  # the entry is shown (stat), then deleted on confirmation
            seen = self._get("/v1/files/stat", path=a["path"])
            folder = seen["status"] == 200 and seen["body"]["kind"] == "directory"
            body = {"path": a["path"], "recursive": folder}
            return [seen, self._post("/v1/files/delete", body)]
        if op == "move":
            return self._post("/v1/files/move", {"src": a["src"], "dst": a["dst"]})
        return self._get("/v1/index/status")
