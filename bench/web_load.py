"""How fast the web page loads on loopback: the demo server, Debian's Chromium.

    PYTHONPATH=src python bench/web_load.py [--runs 20] [--base OTHER/src]

Measures, as medians over ``--runs`` fresh page loads (a new browser context each: no cache):
``fetch_all`` (the page and its static files, fetched six at a time: what the server takes),
``load`` (navigation start to the load event: the HTML, the stylesheet and the modules the
page loads before it; since "Web app: finish" the shell and sign-in only, the tab modules
follow) in a new browser context (its renderer process starts with it), ``reload`` (the same
in the tab already open, its cache off), ``ready`` (navigation start to the shell started:
the sign-in page usable, its ``bastion-ready`` mark), ``revisit`` (the load event of the page
opened again in a new tab of the same context: what the browser's cache keeps), ``signed in``
(the demo sign-in to the Chat tab shown), ``files`` (opening the Files tab to the tree and
the top folder listed) and ``search`` (a query to its hits shown), plus the bytes the
page's static files weigh. Prints one JSON object.

``--base``: another checkout's ``src`` (e.g. ``git archive <ref> src``) served beside this
one; the runs alternate between the two and the object has one report for each.
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
from playwright.sync_api import Browser, expect, sync_playwright  # noqa: E402

from bastion.server.app import STATIC  # noqa: E402
from server.support import free_port  # noqa: E402
from web.conftest import chromium  # noqa: E402


@contextlib.contextmanager
def serving(src: Path = ROOT / "src") -> Iterator[str]:
    """``bastion serve --demo`` from ``src`` in its own process (the browser's driver shares
    none of its interpreter), until the block ends; yields its base URL."""
    port = free_port()
    env = dict(os.environ, PYTHONPATH=str(src))
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
READY = (  # null where the page sets no such mark (an older page)
    "new Promise((done) => { const look = (n) => {"
    " const m = performance.getEntriesByName('bastion-ready')[0];"
    " if (m || n > 100) done(m ? m.startTime : null); else setTimeout(() => look(n + 1), 10); };"
    " look(0); })"
)
LOADED = (
    "new Promise((done) => document.readyState === 'complete'"
    " ? done() : addEventListener('load', done))"
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


def one_run(browser: Browser, site: str, samples: dict[str, list[float]]) -> None:
    """One fresh browser context: the first load, a revisit, a reload with no cache, the
    demo sign-in, Files and Search; each time appended to ``samples``."""
    samples["fetch_all"].append(fetch_all(site))
    context = browser.new_context(viewport={"width": 1100, "height": 760})
    page = context.new_page()
    page.goto(site + "/")
    page.evaluate(LOADED)
    samples["load"].append(float(page.evaluate(LOAD)))
    ready = page.evaluate(READY)
    if ready is not None:
        samples["ready"].append(float(ready))
    again = context.new_page()  # the same context: its cache has what the first load kept
    again.goto(site + "/")
    again.evaluate(LOADED)
    samples["revisit"].append(float(again.evaluate(LOAD)))
    again.close()
    cdp = context.new_cdp_session(page)  # the same tab again, its cache off
    cdp.send("Network.enable")
    cdp.send("Network.setCacheDisabled", {"cacheDisabled": True})
    page.reload()
    page.evaluate(LOADED)
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--base", type=Path, help="another checkout's src, measured alternately")
    args = parser.parse_args()
    names = ("fetch_all", "load", "ready", "revisit", "reload", "signed_in", "files", "search")
    trees = {"this": ROOT / "src"} | ({"base": args.base.resolve()} if args.base else {})
    samples: dict[str, dict[str, list[float]]] = {t: {k: [] for k in names} for t in trees}
    with contextlib.ExitStack() as stack, sync_playwright() as p:
        sites = {tree: stack.enter_context(serving(src)) for tree, src in trees.items()}
        browser = p.chromium.launch(executable_path=chromium(), args=["--no-sandbox"])
        for _ in range(args.runs):
            for tree, site in sites.items():
                one_run(browser, site, samples[tree])
        browser.close()
    weight = sum(f.stat().st_size for f in STATIC.iterdir() if f.is_file())
    reports: dict[str, dict[str, object]] = {}
    for tree, taken in samples.items():
        report: dict[str, object] = {
            k: round(statistics.median(v), 1) if v else None for k, v in taken.items()
        }
        reports[tree] = report | {"runs": args.runs, "unit": "ms (median)"}
    reports["this"]["static_bytes"] = weight
    print(json.dumps(reports if args.base else reports["this"]))


if __name__ == "__main__":
    main()
