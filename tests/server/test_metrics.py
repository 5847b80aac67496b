"""Operable: Prometheus metrics at /metrics by route template and status (no principal, path
or query in them), and a request id on every answer and log line."""

from __future__ import annotations

import json
import logging
import re

import httpx

from bastion.server.metrics import JsonFormatter, Metrics, RequestIdFilter, request_id

from .support import Token, auth


def _count(text: str, route: str, status: int) -> int:
    found = re.search(
        rf'^bastion_http_requests_total\{{method="GET",route="{re.escape(route)}",'
        rf'status="{status}"\}} (\d+)$',
        text,
        re.M,
    )
    return int(found.group(1)) if found else 0


def test_requests_are_counted_by_route_and_status(client: httpx.Client, token: Token) -> None:
    before = client.get("/metrics").text
    ok = client.get("/v1/files/read", params={"path": "/docs/handbook.md"}, headers=auth(token()))
    missing = client.get(
        "/v1/files/read", params={"path": "/docs/no-such-secret.md"}, headers=auth(token())
    )
    anonymous = client.get("/v1/files/read", params={"path": "/docs/handbook.md"})
    assert (ok.status_code, missing.status_code, anonymous.status_code) == (200, 404, 401)
    r = client.get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    text = r.text
    for status, added in ((200, 1), (404, 1), (401, 1)):
        assert (
            _count(text, "/v1/files/read", status)
            == _count(before, "/v1/files/read", status) + added
        )
    assert (
        'bastion_http_request_seconds_bucket{method="GET",route="/v1/files/read",le="+Inf"}' in text
    )
    assert "# TYPE bastion_http_request_seconds histogram" in text
    # route templates only: no path, query or principal reaches the metrics
    assert "no-such-secret" not in text and "handbook" not in text and "ana" not in text


def test_every_answer_carries_a_request_id(client: httpx.Client) -> None:
    mine = client.get("/healthz", headers={"X-Request-Id": "trace-42.a_b"})
    assert mine.headers["x-request-id"] == "trace-42.a_b"
    hostile = client.get("/healthz", headers={"X-Request-Id": 'x" y} 1'})
    made = hostile.headers["x-request-id"]
    assert re.fullmatch(r"[0-9a-f]{16}", made)
    refused = client.get("/healthz", headers={"Host": "evil.example"})
    assert refused.status_code == 421 and "x-request-id" in refused.headers


def test_a_json_log_line_names_its_request() -> None:
    record = logging.LogRecord("bastion.server", logging.INFO, __file__, 1, "GET %s", ("/x",), None)
    token = request_id.set("r-1")
    try:
        RequestIdFilter().filter(record)
        line = json.loads(JsonFormatter().format(record))
    finally:
        request_id.reset(token)
    assert line["request_id"] == "r-1" and line["message"] == "GET /x"
    assert line["level"] == "info" and line["logger"] == "bastion.server"


def test_metric_labels_are_escaped() -> None:
    metrics = Metrics()
    metrics.observe("GET", 'a"b\\c\nd', 200, 0.01)
    assert 'route="a\\"b\\\\c\\nd"' in metrics.text()
