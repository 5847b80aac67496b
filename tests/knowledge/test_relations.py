"""The relation graph: link extraction from Markdown and front matter, and the graph itself."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bastion.core.errors import ConfigurationError, InvalidPathError
from bastion.core.paths import VPath
from bastion.knowledge.relations import (
    Direction,
    Neighbor,
    Relation,
    RelationGraph,
    RelationKind,
    extract_relations,
)

DOC = "/docs/guide/a.md"


def targets(text: str, metadata: dict[str, Any] | None = None, path: str = DOC) -> list[str]:
    return [r.target for r in extract_relations(path, text, metadata or {})]


def rel(source: str, target: str, kind: RelationKind = "link") -> Relation:
    return Relation(source=source, target=target, kind=kind)


def nb(path: str, kind: RelationKind, direction: Direction) -> Neighbor:
    return Neighbor(path=path, kind=kind, direction=direction)


# -- link forms ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[b](b.md)", "/docs/guide/b.md"),
        ('[b](b.md "Title")', "/docs/guide/b.md"),
        ("[b](b.md 'Title')", "/docs/guide/b.md"),
        ("[b](b.md (Title))", "/docs/guide/b.md"),
        ("[b]( b.md )", "/docs/guide/b.md"),
        ("[b](<my file.md>)", "/docs/guide/my file.md"),
        ("[b](notes(1).md)", "/docs/guide/notes(1).md"),
        ("[b](my\\_file.md)", "/docs/guide/my_file.md"),
        ("[a [nested] label](b.md)", "/docs/guide/b.md"),
        ("[`code` in label](b.md)", "/docs/guide/b.md"),
        ("[![logo](logo.png)](home.md)", "/docs/guide/home.md"),
        ("[multi\nline label](b.md)", "/docs/guide/b.md"),
        ("\\![not an image](b.md)", "/docs/guide/b.md"),
        ("[id]: b.md", "/docs/guide/b.md"),
        ('[id]: b.md "Title"', "/docs/guide/b.md"),
        ("   [id]: <b c.md>", "/docs/guide/b c.md"),
        ("Text with [a ref][id].\n\n[id]: ./b.md#part", "/docs/guide/b.md"),
    ],
)
def test_link_forms(text: str, expected: str) -> None:
    assert targets(text) == [expected]


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("../guide.md", "/docs/guide.md"),
        ("./a2.md", "/docs/guide/a2.md"),
        ("sub/b.md", "/docs/guide/sub/b.md"),
        ("sub/./c/../b.md", "/docs/guide/sub/b.md"),
        ("../../top.md", "/top.md"),
        ("/docs/x.md", "/docs/x.md"),
        ("/docs/../x.md", "/x.md"),
        ("b.md#section", "/docs/guide/b.md"),
        ("b.md?v=2#section", "/docs/guide/b.md"),
        ("my%20file.md", "/docs/guide/my file.md"),
        ("caf%C3%A9.md", "/docs/guide/café.md"),
        ("100%25.md", "/docs/guide/100%.md"),
        ("a%23b.md", "/docs/guide/a#b.md"),
        ("50%.md", "/docs/guide/50%.md"),
        ("sub/", "/docs/guide/sub"),
    ],
)
def test_relative_resolution(target: str, expected: str) -> None:
    assert targets(f"[x]({target})") == [expected]
    assert targets(f"[x]: {target}") == [expected]


def test_resolution_from_a_document_at_the_root() -> None:
    assert targets("[b](b.md) [c](./c/d.md)", path="/a.md") == ["/b.md", "/c/d.md"]
    assert targets("[up](../b.md)", path="/a.md") == []


# -- what is skipped -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "target",
    [
        "http://example.com/a.md",
        "https://example.com/a.md",
        "HTTPS://example.com",
        "mailto:someone@example.com",
        "ftp://host/file.md",
        "data:text/plain;base64,SGk=",
        "javascript:alert(1)",
        "file:///etc/passwd",
        "tel:+123",
        "//example.com/a.md",
        "C:/secrets.md",
    ],
)
def test_external_urls_are_skipped(target: str) -> None:
    assert targets(f"[x]({target})") == []
    assert targets(f"[x]: {target}") == []
    assert targets("", {"related": target}) == []


@pytest.mark.parametrize(
    "target",
    [
        "#anchor",
        "#",
        "?query=1",
        "",
        "   ",
        "../../../above.md",  # climbs above '/'
        "/../x.md",
        "a%00b.md",  # NUL once decoded
        "a%01b.md",
        "a\\b.md",  # a backslash that is no Markdown escape
        "%FF%FE.md",  # not UTF-8
        "%2E%2E/%2E%2E/%2E%2E/x.md",  # encoded traversal above '/'
        "../../",  # the root itself
    ],
)
def test_invalid_or_empty_targets_are_skipped(target: str) -> None:
    assert targets(f"[x]({target})") == []
    assert targets("", {"related": [target]}) == []


def test_control_characters_in_a_target_are_skipped() -> None:
    assert targets("[x]: a\x00b.md\n\n[y](c\x7fd.md)") == []
    assert targets("", {"parent": "a\x00.md", "children": ["b\u202e.md"]}) == []


def test_an_empty_angle_destination_is_skipped() -> None:
    assert targets("[x](<>) [y]: <>") == []


def test_images_are_not_relations() -> None:
    assert targets("![diagram](diagram.png) ![alt](b.md 'title')") == []


def test_a_link_cannot_contain_a_link() -> None:
    assert targets("[a [b](inner.md) c](outer.md)") == ["/docs/guide/inner.md"]


def test_an_escaped_backslash_escapes_nothing_else() -> None:
    assert targets("\\\\[b](b.md) \\\\![img](i.png)") == ["/docs/guide/b.md"]
    assert targets("\\`[b](b.md)`") == ["/docs/guide/b.md"]  # "\`" opens no code span
    assert targets("\\``[b](b.md)`") == []  # the second backtick opens one


def test_escaped_brackets_and_footnotes_are_not_links() -> None:
    assert targets("\\[not a link](b.md)") == []
    assert targets("Claim.[^1]\n\n[^1]: see here") == []
    assert targets("[note]: this is prose, not a definition") == []


def test_a_definition_cannot_interrupt_a_paragraph() -> None:
    assert targets("Some prose\n[a]: a1.md") == []
    assert targets("Some prose\n\n[a]: a1.md\n[b]: b.md") == [
        "/docs/guide/a1.md",
        "/docs/guide/b.md",
    ]
    assert targets("# Links\n[a]: a1.md") == ["/docs/guide/a1.md"]
    assert targets("```\ncode\n```\n[a]: a1.md") == ["/docs/guide/a1.md"]


def test_links_in_fenced_code_are_skipped() -> None:
    text = (
        "[before](before.md)\n\n"
        "```python\n[in](backticks.md)\n\n[still](in.md)\n```\n\n"
        "~~~\n[in](tilde.md)\n~~~\n\n"
        "````\n```\n[in](longer.md)\n```\n````\n\n"
        "  ```\n[in](indented.md)\n  ```\n\n"
        "[after](after.md)\n"
    )
    assert targets(text) == ["/docs/guide/before.md", "/docs/guide/after.md"]


def test_an_unclosed_fence_runs_to_the_end() -> None:
    assert targets("[a](a2.md)\n```\n[b](b.md)\n\n[c](c.md)\n") == ["/docs/guide/a2.md"]


def test_a_tilde_fence_does_not_close_a_backtick_fence() -> None:
    assert targets("```\n~~~\n[b](b.md)\n~~~\n```\n[c](c.md)") == ["/docs/guide/c.md"]


def test_crlf_line_endings() -> None:
    assert targets("```\r\n[b](b.md)\r\n```\r\n[c](c.md)\r\n\r\n[d]: d.md\r\n") == [
        "/docs/guide/c.md",
        "/docs/guide/d.md",
    ]


def test_links_in_code_spans_are_skipped() -> None:
    text = "`[a](a1.md)` ``[b](b.md) ` x`` `span\n[c](c.md)` [d](d.md)"
    assert targets(text) == ["/docs/guide/d.md"]


def test_an_unmatched_backtick_opens_no_span() -> None:
    assert targets("a ` b [c](c.md)") == ["/docs/guide/c.md"]
    assert targets("`` b [c](c.md) `") == ["/docs/guide/c.md"]


def test_a_self_link_is_skipped() -> None:
    assert targets("[me](a.md) [me](./a.md#top) [me](/docs/guide/a.md)", {"related": "a.md"}) == []


def test_duplicates_collapse_and_kinds_stay_apart() -> None:
    relations = extract_relations(DOC, "[b](b.md) [again](./b.md#x) [c](c.md)", {"related": "b.md"})
    assert relations == (
        rel(DOC, "/docs/guide/b.md", "related"),
        rel(DOC, "/docs/guide/b.md"),
        rel(DOC, "/docs/guide/c.md"),
    )


def test_order_is_front_matter_then_text_order() -> None:
    text = "[z]: zero.md\n[a](one.md)\n\n[ref]: two.md\n[b](three.md)\n\n[z]: four.md"
    metadata = {"related": ["r.md"], "children": "c.md", "parent": "../index.md"}
    assert targets(text, metadata) == [
        "/docs/index.md",
        "/docs/guide/c.md",
        "/docs/guide/r.md",
        "/docs/guide/zero.md",
        "/docs/guide/one.md",
        "/docs/guide/two.md",
        "/docs/guide/three.md",
        "/docs/guide/four.md",
    ]


# -- front matter ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("metadata", "expected"),
    [
        ({"parent": "../index.md"}, [("/docs/index.md", "parent")]),
        ({"parent": ["../index.md"]}, [("/docs/index.md", "parent")]),
        ({"children": "sub/c.md"}, [("/docs/guide/sub/c.md", "child")]),
        (
            {"children": ["c1.md", "/x/c2.md"]},
            [("/docs/guide/c1.md", "child"), ("/x/c2.md", "child")],
        ),
        ({"children": ("c1.md",)}, [("/docs/guide/c1.md", "child")]),
        (
            {"related": ["r.md", 3, None, {"a": 1}, ["nested.md"]]},
            [("/docs/guide/r.md", "related")],
        ),
        ({"related": "r.md#part"}, [("/docs/guide/r.md", "related")]),
        ({"parent": 7, "children": None, "related": {"path": "r.md"}}, []),
        ({"title": "t.md", "tags": ["x.md"]}, []),
    ],
)
def test_front_matter(metadata: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    relations = extract_relations(DOC, "", metadata)
    assert [(r.target, r.kind) for r in relations] == expected
    assert all(r.source == DOC for r in relations)


def test_source_path_is_normalized_and_must_be_valid() -> None:
    (relation,) = extract_relations("docs//guide/./a.md", "[b](b.md)", {})
    assert relation == Relation(source=DOC, target="/docs/guide/b.md", kind="link")
    with pytest.raises(InvalidPathError):
        extract_relations("/../a.md", "[b](b.md)", {})


def test_relation_normalizes_paths_and_checks_the_kind() -> None:
    assert rel("docs/a.md", "/docs/./b.md") == rel("/docs/a.md", "/docs/b.md")
    assert rel("docs/a.md", "/docs/./b.md").target == "/docs/b.md"
    with pytest.raises(ConfigurationError):
        Relation(source="/a.md", target="/b.md", kind="sibling")  # type: ignore[arg-type]
    with pytest.raises(InvalidPathError):
        rel("/a.md", "/../b.md")


def test_parsed_document_fields_feed_extraction() -> None:
    from bastion.knowledge.ingest.models import ParsedDocument

    doc = ParsedDocument(
        path="/kb/a.md",
        doc_id="x",
        mime="text/markdown",
        text="See [b](b.md).",
        metadata={"parent": "index.md"},
    )
    assert [r.target for r in extract_relations(doc.path, doc.text, doc.metadata)] == [
        "/kb/index.md",
        "/kb/b.md",
    ]


# -- pathological input stays fast -----------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "[" * 50_000,
        "[a](" * 20_000,
        "[a](" + "b" * 100_000,
        "[a](b" + " " * 100_000,
        '[a](b "' * 20_000,
        "` " * 50_000,
        " ".join("`" * i for i in range(1, 400)),
        "```\n" * 20_000,
        "[" + "\\a" * 50_000,
        "[" + "![x]" * 30_000,
        "\\`" * 50_000,
        ("\\" * 50 + "[a](b.md)") * 5_000,
        "x\n" + "[a]: b\n" * 20_000,
    ],
    ids=lambda t: repr(t[:8]),
)
def test_pathological_input_completes(text: str) -> None:
    # No timing assertion (the suite has none): a quadratic scan of these inputs took 95 s
    # once, which this test makes visible as a slow suite. Each yields a plain result.
    relations = extract_relations(DOC, text, {})
    assert all(r.source == DOC for r in relations)


# -- property --------------------------------------------------------------------------------

_PIECES = st.sampled_from(
    [
        "[",
        "]",
        "(",
        ")",
        "![",
        "](",
        "]: ",
        "<",
        ">",
        "`",
        "```",
        "~~~",
        "\n",
        "\n\n",
        " ",
        "\\",
        "#",
        "?",
        "%",
        "%00",
        "%2F",
        "%2E",
        "%FF",
        "%20",
        "..",
        "../",
        "./",
        "/",
        "//",
        "a.md",
        "b",
        "http:",
        "mailto:",
        "C:",
        "\x00",
        "\u202e",
        "é",
        "\r\n",
        '"',
        "'",
        "[^",
    ]
)
_DESTINATION = st.lists(_PIECES | st.text(max_size=4), min_size=1, max_size=6).map("".join)
_LINK = st.one_of(
    st.builds("[x]({}) ".format, _DESTINATION),
    st.builds("\n[r]: {}\n".format, _DESTINATION),
    st.builds("[x](<{}>)".format, _DESTINATION),
)
_TEXT = st.lists(_PIECES | _LINK | st.text(max_size=6), max_size=40).map("".join)
_VALUE = st.one_of(
    _TEXT, st.lists(_TEXT | st.integers() | st.none(), max_size=4), st.integers(), st.none()
)
_SEGMENT = st.text(
    st.characters(codec="utf-8", exclude_categories=["Cc", "Cs"]), min_size=1, max_size=8
)


@st.composite
def _source(draw: st.DrawFn) -> str:
    parts = draw(st.lists(_SEGMENT, min_size=1, max_size=4))
    try:
        return str(VPath.parse("/" + "/".join(parts)))
    except InvalidPathError:
        return "/docs/a.md"


@settings(max_examples=300, deadline=None)
@given(
    path=_source(),
    text=_TEXT,
    metadata=st.dictionaries(st.sampled_from(["parent", "children", "related", "other"]), _VALUE),
)
def test_extraction_never_raises_and_targets_are_normalized(
    path: str, text: str, metadata: dict[str, Any]
) -> None:
    relations = extract_relations(path, text, metadata)
    assert len(set(relations)) == len(relations)
    for relation in relations:
        assert relation.source == path
        assert relation.target.startswith("/") and relation.target != "/"
        assert str(VPath.parse(relation.target)) == relation.target
        assert relation.target != path
        assert relation.kind in ("link", "parent", "child", "related")


# -- the graph -------------------------------------------------------------------------------


def make_graph(edges: dict[str, list[tuple[str, RelationKind]]]) -> RelationGraph:
    graph = RelationGraph()
    for source, items in edges.items():
        graph.set_document(source, [rel(source, t, k) for t, k in items])
    return graph


def test_neighbors_both_ways() -> None:
    graph = make_graph(
        {"/a.md": [("/b.md", "link"), ("/c.md", "parent")], "/d.md": [("/a.md", "link")]}
    )
    assert graph.neighbors("/a.md") == [
        nb("/b.md", "link", "out"),
        nb("/c.md", "parent", "out"),
        nb("/d.md", "link", "in"),
    ]
    assert graph.neighbors("/b.md") == [nb("/a.md", "link", "in")]
    assert graph.neighbors("/c.md") == [nb("/a.md", "parent", "in")]
    assert graph.neighbors("/unknown.md") == []
    assert graph.neighbors("a.md") == graph.neighbors(VPath.parse("/a.md"))


def test_one_entry_per_neighbour_with_the_most_specific_kind() -> None:
    graph = make_graph(
        {
            "/a.md": [("/b.md", "link"), ("/b.md", "related"), ("/c.md", "link")],
            "/b.md": [("/a.md", "child")],
            "/c.md": [("/a.md", "parent")],
            "/z.md": [("/a.md", "link"), ("/a.md", "related")],
            "/m.md": [("/a.md", "link")],
        }
    )
    assert graph.neighbors("/a.md") == [
        nb("/b.md", "child", "in"),  # child beats related beats link
        nb("/c.md", "parent", "in"),
        nb("/m.md", "link", "in"),  # incoming ones sorted by path
        nb("/z.md", "related", "in"),
    ]


def test_out_wins_a_tie() -> None:
    graph = make_graph({"/a.md": [("/b.md", "link")], "/b.md": [("/a.md", "link")]})
    assert graph.neighbors("/a.md") == [nb("/b.md", "link", "out")]


def test_missing_targets_are_kept() -> None:
    graph = make_graph({"/a.md": [("/not/yet.md", "link")]})
    assert graph.neighbors("/a.md") == [nb("/not/yet.md", "link", "out")]
    assert graph.neighbors("/not/yet.md") == [nb("/a.md", "link", "in")]


def test_set_document_replaces() -> None:
    graph = make_graph({"/a.md": [("/b.md", "link"), ("/c.md", "link")]})
    graph.set_document("/a.md", [rel("/a.md", "/d.md"), rel("/a.md", "/d.md")])
    assert graph.relations("/a.md") == (rel("/a.md", "/d.md"),)
    assert graph.neighbors("/b.md") == []
    assert graph.neighbors("/d.md") == [nb("/a.md", "link", "in")]
    graph.set_document("/a.md", [])
    assert graph.neighbors("/a.md") == graph.neighbors("/d.md") == []
    assert graph.to_dict()["documents"] == {}


def test_set_document_refuses_a_foreign_relation_and_drops_self_links() -> None:
    graph = RelationGraph()
    with pytest.raises(ConfigurationError):
        graph.set_document("/a.md", [rel("/b.md", "/c.md")])
    graph.set_document("a.md", [rel("/a.md", "/a.md"), rel("/a.md", "/b.md")])
    assert graph.relations("/a.md") == (rel("/a.md", "/b.md"),)


def test_remove_document_keeps_links_to_it() -> None:
    graph = make_graph({"/a.md": [("/b.md", "link")], "/b.md": [("/c.md", "link")]})
    graph.remove_document("/b.md")
    assert graph.relations("/b.md") == ()
    assert graph.neighbors("/b.md") == [nb("/a.md", "link", "in")]
    assert graph.neighbors("/c.md") == []
    graph.remove_document("/never.md")


def test_rename_moves_outgoing_and_retargets_incoming() -> None:
    graph = make_graph(
        {
            "/a.md": [("/b.md", "link"), ("/old.md", "related")],
            "/old.md": [("/c.md", "parent"), ("/new.md", "link")],
            "/x.md": [("/old.md", "link"), ("/new.md", "link")],
        }
    )
    graph.rename_document("/old.md", "/new.md")
    assert graph.relations("/old.md") == ()
    assert graph.relations("/new.md") == (rel("/new.md", "/c.md", "parent"),)  # self link dropped
    assert graph.relations("/a.md") == (rel("/a.md", "/b.md"), rel("/a.md", "/new.md", "related"))
    assert graph.relations("/x.md") == (rel("/x.md", "/new.md"),)  # duplicates collapse
    assert graph.neighbors("/old.md") == []
    assert graph.neighbors("/new.md") == [
        nb("/c.md", "parent", "out"),
        nb("/a.md", "related", "in"),
        nb("/x.md", "link", "in"),
    ]


def test_rename_onto_an_existing_document_replaces_it() -> None:
    graph = make_graph(
        {"/old.md": [("/c.md", "link")], "/new.md": [("/d.md", "link"), ("/old.md", "link")]}
    )
    graph.rename_document("old.md", "/new.md")
    assert graph.relations("/new.md") == (rel("/new.md", "/c.md"),)
    assert graph.neighbors("/d.md") == []


def test_rename_to_itself_or_of_an_unknown_document() -> None:
    graph = make_graph({"/a.md": [("/b.md", "link")]})
    before = graph.to_dict()
    graph.rename_document("/a.md", "a.md")
    graph.rename_document("/nope.md", "/other.md")
    assert graph.to_dict() == before
    graph.rename_document("/b.md", "/moved/b.md")
    assert graph.relations("/a.md") == (rel("/a.md", "/moved/b.md"),)


def test_expand_adds_neighbours_of_hits() -> None:
    graph = make_graph(
        {
            "/a.md": [("/b.md", "link"), ("/c.md", "link")],
            "/b.md": [("/c.md", "related"), ("/d.md", "link")],
            "/e.md": [("/a.md", "link")],
        }
    )
    assert graph.expand(["/a.md", "/b.md"]) == [
        nb("/c.md", "link", "out"),  # first reached from /a.md
        nb("/e.md", "link", "in"),
        nb("/d.md", "link", "out"),
    ]
    assert graph.expand(["/a.md", "/b.md"], limit=2) == graph.expand(["/a.md", "/b.md"])[:2]
    assert graph.expand(["/a.md"], limit=0) == []
    assert graph.expand(["/a.md", "a.md", "/a.md"]) == graph.expand(["/a.md"])
    assert graph.expand([]) == []
    assert graph.expand(["/unknown.md"]) == []


def test_expand_refuses_bad_arguments() -> None:
    graph = RelationGraph()
    with pytest.raises(ValueError, match="non-negative"):
        graph.expand(["/a.md"], limit=-1)
    with pytest.raises(ValueError, match="sequence"):
        graph.expand("/a.md")
    with pytest.raises(InvalidPathError):
        graph.expand(["/../a.md"])


def test_round_trip_through_json() -> None:
    graph = make_graph(
        {"/b.md": [("/a.md", "parent"), ("/c d.md", "link")], "/a.md": [("/b.md", "child")]}
    )
    data = json.loads(json.dumps(graph.to_dict()))
    assert data == {
        "version": 1,
        "documents": {
            "/a.md": [{"target": "/b.md", "kind": "child"}],
            "/b.md": [{"target": "/a.md", "kind": "parent"}, {"target": "/c d.md", "kind": "link"}],
        },
    }
    again = RelationGraph.from_dict(data)
    assert again.to_dict() == graph.to_dict()
    assert again.neighbors("/a.md") == graph.neighbors("/a.md")


@pytest.mark.parametrize(
    "data",
    [
        {},
        {"version": 2, "documents": {}},
        {"version": 1},
        {"version": 1, "documents": []},
        {"version": 1, "documents": {"/a.md": None}},
        {"version": 1, "documents": {"/a.md": [{"target": "/b.md"}]}},
        {"version": 1, "documents": {"/a.md": [{"target": "/b.md", "kind": "sibling"}]}},
        {"version": 1, "documents": {"/a.md": [{"target": "/../b.md", "kind": "link"}]}},
        {"version": 1, "documents": {"/a.md": [{"target": 3, "kind": "link"}]}},
        {"version": 1, "documents": {"/a.md": [["/b.md", "link"]]}},
        {"version": 1, "documents": {"/a.md": [{"target": "/b.md", "kind": ["link"]}]}},
    ],
)
def test_from_dict_refuses_malformed_data(data: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError):
        RelationGraph.from_dict(data)


def test_concurrent_updates_keep_the_index_consistent() -> None:
    graph = RelationGraph()
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            for i in range(200):
                source = f"/d{n}/{i % 7}.md"
                graph.set_document(source, [rel(source, f"/shared/{i % 5}.md")])
                graph.neighbors(f"/shared/{i % 5}.md")
                graph.expand([source, "/shared/0.md"])
                if i % 11 == 0:
                    graph.rename_document(source, f"/d{n}/moved{i}.md")
                if i % 13 == 0:
                    graph.remove_document(source)
                graph.to_dict()
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    _assert_consistent(graph)


def _assert_consistent(graph: RelationGraph) -> None:
    """Incoming neighbours are exactly the stored relations seen from the other end."""
    documents = graph.to_dict()["documents"]
    edges = {(s, i["target"], i["kind"]) for s, items in documents.items() for i in items}
    paths = {p for s, t, _ in edges for p in (s, t)}
    seen = set()
    for path in paths:
        for n in graph.neighbors(path):
            assert n.path != path
            if n.direction == "in":
                assert (n.path, path, n.kind) in edges
            else:
                assert (path, n.path, n.kind) in edges
            seen.add(frozenset((path, n.path)))
    assert seen == {frozenset((s, t)) for s, t, _ in edges}


_NAME = st.sampled_from(["/a.md", "/b.md", "/c.md", "/d/e.md"])
_KIND = st.sampled_from(["link", "parent", "child", "related"])
_OP: st.SearchStrategy[tuple[str, str, Any]] = st.one_of(
    st.tuples(st.just("set"), _NAME, st.lists(st.tuples(_NAME, _KIND), max_size=4)),
    st.tuples(st.just("remove"), _NAME, st.just([])),
    st.tuples(st.just("rename"), _NAME, _NAME),
)


@settings(max_examples=200, deadline=None)
@given(ops=st.lists(_OP, max_size=12))
def test_graph_updates_keep_the_index_consistent(ops: list[tuple[str, str, Any]]) -> None:
    graph = RelationGraph()
    for op, path, arg in ops:
        if op == "set":
            graph.set_document(path, [rel(path, t, k) for t, k in arg])
        elif op == "remove":
            graph.remove_document(path)
        else:
            graph.rename_document(path, arg)
    _assert_consistent(graph)
    assert RelationGraph.from_dict(graph.to_dict()).to_dict() == graph.to_dict()
