"""Bastion's OpenAI-compatible client against the official ``openai`` SDK (issue 11).

.venv/bin/python bench/openai_client.py [--calls 300]

The SDK is not a dependency: install it beside the project to compare (``pip install --no-deps
--target /tmp/oai openai jiter``, then run with ``PYTHONPATH=/tmp/oai``; its other requirements,
httpx2, pydantic and anyio, come with ``mcp`` already). Without it, only Bastion's rows print.

One run, one machine, a loopback server in this process answering ``/v1/embeddings`` and
``/v1/chat/completions``:

* per call, one client reused: ``HttpEmbedder.embed`` against ``AsyncOpenAI.embeddings.create``
  and ``HttpChatModel.complete`` against ``chat.completions.create`` (median µs over the calls,
  server time included in both);
* what importing each costs (``python -X importtime``, cumulative, fresh interpreter, median of 7):
  ``httpx`` (the one library Bastion's client imports) and ``openai``;
* the installed size the SDK adds (its package and ``jiter``; the rest is installed already).

The machine is shared: read the medians.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from bastion.governance.answer import HttpChatModel, Message
from bastion.knowledge.embedders import HttpEmbedder
from bastion.knowledge.eval import describe_machine

DIM = 8


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as real servers
    disable_nagle_algorithm = True
    wbufsize = 1 << 16  # headers and body leave in one write (flushed after each request)

    def do_POST(self) -> None:
        payload = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))))
        if self.path.endswith("/embeddings"):
            vector = np.arange(1, DIM + 1, dtype=np.float32)
            b64 = payload.get("encoding_format") == "base64"
            rows = [
                {
                    "object": "embedding",
                    "index": i,
                    "embedding": base64.b64encode(vector.tobytes()).decode() if b64 else
                    vector.tolist(),
                }
                for i in range(len(payload["input"]))
            ]  # fmt: skip
            body: dict[str, Any] = {"object": "list", "data": rows, "model": "m"}
            body["usage"] = {"prompt_tokens": 1, "total_tokens": 1}
        else:
            message = {"role": "assistant", "content": "Hello there."}
            body = {
                "id": "c1", "object": "chat.completion", "created": 0, "model": "m",
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            }  # fmt: skip
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


async def _per_call_us(call: Callable[[], Awaitable[object]], calls: int) -> float:
    for _ in range(20):
        await call()  # warm the connection pool
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        await call()
        times.append((time.perf_counter() - t0) * 1e6)
    return statistics.median(times)


async def _latency(url: str, calls: int) -> list[tuple[str, float]]:
    ask = [Message("user", "Say hello.")]
    rows = []
    async with httpx.AsyncClient() as client:
        embedder = HttpEmbedder(url, "m", DIM, api_key="k", client=client)
        chat = HttpChatModel(url, "m", api_key="k", client=client)
        rows.append(("Bastion HttpEmbedder.embed(1 text)", await _per_call_us(
            lambda: embedder.embed(["hello"]), calls)))  # fmt: skip
        rows.append(("Bastion HttpChatModel.complete", await _per_call_us(
            lambda: chat.complete(ask), calls)))  # fmt: skip
    if find_spec("openai") is None:
        return rows
    import openai

    sdk = openai.AsyncOpenAI(base_url=url, api_key="k")
    rows.append(("openai SDK embeddings.create(1 text) (base64, its default)", await _per_call_us(
        lambda: sdk.embeddings.create(model="m", input=["hello"]), calls)))  # fmt: skip
    rows.append(("openai SDK embeddings.create(1 text, encoding_format='float')",
        await _per_call_us(lambda: sdk.embeddings.create(
            model="m", input=["hello"], encoding_format="float"), calls)))  # fmt: skip
    rows.append(("openai SDK chat.completions.create", await _per_call_us(
        lambda: sdk.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "Say hello."}]), calls)))  # fmt: skip
    await sdk.close()
    return rows


def _import_ms(module: str, before: str = "") -> float:
    def once() -> float:
        code = f"{before}; import {module}" if before else f"import {module}"
        err = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", code], check=True, capture_output=True
        ).stderr.decode()
        for line in err.splitlines():
            parts = line.split("|")
            if len(parts) == 3 and parts[2].rstrip() == f" {module}":
                return int(parts[1]) / 1e3
        return 0.0

    return statistics.median(once() for _ in range(7))


def _size_mb(module: str) -> float:
    spec = find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        return 0.0
    root = Path(next(iter(spec.submodule_search_locations)))
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=300)
    args = parser.parse_args()
    print(f"machine: {describe_machine()}")
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    rows = asyncio.run(_latency(url, args.calls))
    server.shutdown()
    server.server_close()
    print(f"\n| call, one client reused | median µs ({args.calls} calls) |\n|---|---:|")
    for name, us in rows:
        print(f"| {name} | {us:,.0f} |")
    print("\n| import (-X importtime, cumulative, median of 7) | ms |\n|---|---:|")
    print(f"| `import httpx` (Bastion's client) | {_import_ms('httpx'):.0f} |")
    if find_spec("openai") is None:
        print("\nopenai is not installed: no SDK rows (see the docstring)")
        return
    print(f"| `import openai` | {_import_ms('openai'):.0f} |")
    print(f"| `import openai` after httpx and pydantic | "
          f"{_import_ms('openai', 'import httpx, pydantic'):.0f} |")  # fmt: skip
    print(f"\ninstalled size the SDK adds: openai {_size_mb('openai'):.1f} MB, "
          f"jiter {_size_mb('jiter'):.1f} MB")  # fmt: skip


if __name__ == "__main__":
    main()
