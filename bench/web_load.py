"""How fast the web page loads on loopback: the demo server, Debian's Chromium.

    PYTHONPATH=src python bench/web_load.py [--runs 20]

Measures, as medians over ``--runs`` fresh page loads (a new browser context each: no cache):
``fetch_all`` (the page and its static files, fetched six at a time: what the server takes),
``load`` (navigation start to the load event: the HTML, the stylesheet, the eight modules)
in a new browser context (its renderer process starts with it), ``reload`` (the same in the
tab already open, its cache off),
``signed in`` (the demo sign-in to the Chat tab shown), ``files`` (opening the Files tab to the
tree and the top folder listed) and ``search`` (a query to its hits shown), plus the bytes the
page's static files weigh. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import httpx  # noqa: E402
from playwright.sync_api import expect, sync_playwright  # noqa: E402

from bastion.server.app import STATIC  # noqa: E402
from server.support import free_port  # noqa: E402
from web.conftest import chromium  # noqa: E402


@contextlib.contextmanager
def serving() -> Iterator[str]:
    """``bastion serve --demo`` in its own process (the browser's driver shares none of its
    interpreter), until the block ends; yields its base URL."""
    port = free_port()
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    command = [sys.executable, "-m", "bastion.cli", "serve", "--demo", "--port", str(port)]
    server = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(url + "/healthz").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline or server.poll() is not None:
                raise SystemExit("the demo server did not start")
            time.sleep(0.1)
        yield url
    finally:
        server.terminate()
        server.wait(timeout=30)


LOAD = (
    "(() => { const n = performance.getEntriesByType('navigation')[0];"
    " return n.loadEventEnd - n.startTime; })()"
)


def fetch_all(site: str) -> float:
    """Milliseconds to fetch the page and every static file it loads, six at a time over
    fresh connections, as a browser does (``http.client``: the bytes, no rendering)."""
    host, port = site.removeprefix("http://").split(":")
    paths = ["/", *(f"/static/{f.name}" for f in sorted(STATIC.iterdir()) if f.is_file())]

    def get(path: str) -> int:
        connection = http.client.HTTPConnection(host, int(port), timeout=30)
        connection.request("GET", path)
        size = len(connection.getresponse().read())
        connection.close()
        return size

    start = time.perf_counter()
    with ThreadPoolExecutor(6) as pool:
        list(pool.map(get, paths))
    return (time.perf_counter() - start) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    samples: dict[str, list[float]] = {
        "fetch_all": [],
        "load": [],
        "reload": [],
        "signed_in": [],
        "files": [],
        "search": [],
    }
    with serving() as site, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium(), args=["--no-sandbox"])
        for _ in range(args.runs):
            samples["fetch_all"].append(fetch_all(site))
            context = browser.new_context(viewport={"width": 1100, "height": 760})
            page = context.new_page()
            page.goto(site + "/")
            timing = page.evaluate(LOAD)
            samples["load"].append(float(timing))
            cdp = context.new_cdp_session(page)  # the same tab again, its cache off
            cdp.send("Network.enable")
            cdp.send("Network.setCacheDisabled", {"cacheDisabled": True})
            page.reload()
            samples["reload"].append(float(page.evaluate(LOAD)))
            expect(page.locator("#demo-form")).to_be_visible()
            page.locator("#demo-user").select_option("mei")
            start = time.perf_counter()
            page.locator("#demo-form button").click()
            expect(page.locator("#chat")).to_be_visible()
            samples["signed_in"].append((time.perf_counter() - start) * 1000)
            start = time.perf_counter()
            page.locator('#tabs [data-tab="files"]').click()
            expect(page.locator("#listing a").first).to_be_visible()
            samples["files"].append((time.perf_counter() - start) * 1000)
            start = time.perf_counter()
            page.goto(site + "/#/search?q=salary+band")
            expect(page.locator("#hits li").first).to_be_visible()
            samples["search"].append((time.perf_counter() - start) * 1000)
            context.close()
        browser.close()
    weight = sum(f.stat().st_size for f in STATIC.iterdir() if f.is_file())
    report = {k: round(statistics.median(v), 1) for k, v in samples.items()}
    report |= {"runs": args.runs, "static_bytes": weight, "unit": "ms (median)"}
    print(json.dumps(report))


if __name__ == "__main__":
    main()
