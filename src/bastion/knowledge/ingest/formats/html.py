"""HTML: the main content only, as Markdown, with headings and tables kept.

Obvious boilerplate is pruned first: scripts, styles, forms, navigation, asides, cookie/consent
banners and popups (by tag, ARIA role, or id/class words), and page-level headers and footers
(a ``<header>`` inside an ``<article>`` or ``<main>`` is kept: it often holds the title). Then
trafilatura extracts the main content (precision first, tables included); when it returns
nothing, as it can for very short pages, a small walk takes ``<main>``/``<article>``/``<body>``.
Metadata comes from ``<head>`` only, never guessed from the text.
"""

from __future__ import annotations

import codecs
import copy
import re
from collections.abc import Iterator

import trafilatura
from lxml import etree
from lxml import html as lxml_html

from bastion.knowledge.ingest.formats.common import translated
from bastion.knowledge.ingest.formats.tables import markdown_table
from bastion.knowledge.ingest.metadata import one_line, person, split_keywords
from bastion.knowledge.ingest.models import Extraction, IngestLimits

__all__ = ["decode_html", "parse_html", "prune_boilerplate", "simple_markdown"]

_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([a-zA-Z0-9_.:-]+)""", re.I)
_XML_DECLARATION = re.compile(r"\A\s*<\?xml[^>]*\?>")
_NOT_XML_CHARACTERS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")

_DROP_TAGS = (
    "script", "style", "noscript", "template", "nav", "aside", "form", "iframe", "svg",
    "button", "select", "dialog", "menu",
)  # fmt: skip
_PAGE_CHROME = ("header", "footer")
_DROP_ROLES = frozenset({"navigation", "banner", "contentinfo", "complementary", "dialog", "alert"})
_BOILERPLATE = re.compile(
    r"(?<![a-z])(?:cookies?|consent|gdpr|popup|modal|newsletter|subscribe|sidebar|breadcrumbs?|"
    r"share|social|promo|advert|ads?|skip-?links?)(?![a-z])",
    re.I,
)
# trafilatura's Markdown output has super-linear patterns: its escaping (``\\*[``) rescans a
# run of backslashes from each position (80k backslashes: 3.5 s), and its math spans
# (``\\((.+?)\\)``) rescan a line from each unclosed ``\(`` or ``\[`` (40k characters: 3.7 s).
# A page holding such a run, or openers times length over a bound (~0.5 s at worst), goes to
# the simple extractor instead.
_BACKSLASH_RUN = "\\" * 64
_MATH_OPENERS = ("\\(", "\\[")
_MAX_MATH_WORK = 1 << 26
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_BLOCKS = frozenset(
    {"p", "div", "section", "article", "main", "ul", "ol", "li", "table", "pre", "blockquote",
     "dl", "dt", "dd", "figure", "figcaption", "address", "hr", *_HEADINGS}
)  # fmt: skip


def decode_html(data: bytes) -> str:
    """Bytes to text: a byte-order mark, else ``<meta charset>``, else UTF-8, else cp1252.

    HTML on the web is often mislabelled, so unlike plain text a lenient decode is kept: bad
    bytes become U+FFFD rather than failing the page.
    """
    for bom, name in ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"),
                      (codecs.BOM_UTF16_BE, "utf-16")):  # fmt: skip
        if data.startswith(bom):
            return data.decode(name, "replace")
    declared = _META_CHARSET.search(data[:4096])
    if declared:
        name = declared.group(1).decode("ascii").lower()
        if name.startswith("utf-16"):  # a readable <meta> means it is not UTF-16 (WHATWG)
            name = "utf-8"
        try:
            return data.decode(name, "replace")
        except LookupError:
            pass
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("cp1252", "replace")


def parse_html(data: bytes, where: str, limits: IngestLimits) -> Extraction:
    """Main content as Markdown; title, author, date, keywords and description from ``<head>``."""
    del limits
    source = _XML_DECLARATION.sub("", decode_html(data), count=1)
    source = _NOT_XML_CHARACTERS.sub("", source)  # lxml refuses them
    if not source.strip():
        return Extraction(text="", structured=True)
    with translated(where, "HTML page"):
        try:
            tree = lxml_html.document_fromstring(source)
        except etree.ParserError:  # lxml's "Document is empty": comments or whitespace only
            return Extraction(text="", structured=True)
        meta = _head_metadata(tree)
        prune_boilerplate(tree)
        costly = _costly_for_trafilatura(source)
        body = "" if costly else _trafilatura_markdown(copy.deepcopy(tree))
        body = body or simple_markdown(tree)
    return Extraction(
        text=body,
        structured=True,
        title=one_line(meta.get("title")),
        author=person(meta.get("author")),
        date=meta.get("date"),
        keywords=split_keywords(meta.get("keywords"), meta.get("tags")),
        metadata=meta,
    )


def _costly_for_trafilatura(source: str) -> bool:
    openers = sum(source.count(opener) for opener in _MATH_OPENERS)
    return _BACKSLASH_RUN in source or openers * len(source) > _MAX_MATH_WORK


def _trafilatura_markdown(tree: lxml_html.HtmlElement) -> str:
    try:
        extracted = trafilatura.extract(
            tree,
            output_format="markdown",
            include_tables=True,
            include_comments=False,
            include_images=False,
            include_links=False,
            favor_precision=True,
        )
    except Exception:  # noqa: BLE001 - a heuristic extractor failing is a reason to fall back
        return ""
    return extracted or ""


def _meta(tree: lxml_html.HtmlElement, *keys: str) -> list[str]:
    found: list[str] = []
    for element in tree.iter("meta"):
        key = element.get("name") or element.get("property") or element.get("itemprop") or ""
        if key.strip().lower() in keys:
            value = one_line(element.get("content"))
            if value:
                found.append(value)
    return found


def _head_metadata(tree: lxml_html.HtmlElement) -> dict[str, object]:
    title_element = tree.find(".//title")
    title = one_line(title_element.text_content()) if title_element is not None else None
    title = title or next(iter(_meta(tree, "og:title", "twitter:title")), None)
    if title is None and (h1 := tree.find(".//h1")) is not None:
        title = one_line(h1.text_content())
    dates = _meta(tree, "article:published_time", "date", "dc.date", "dcterms.created",
                  "datepublished", "dc.date.issued")  # fmt: skip
    if not dates:
        dates = [t.get("datetime", "") for t in tree.iter("time") if t.get("datetime")]
    candidates: dict[str, object] = {
        "title": title,
        "author": next(iter(_meta(tree, "author", "article:author", "dc.creator")), None),
        "date": dates[0] if dates else None,
        "description": next(iter(_meta(tree, "description", "og:description")), None),
        "keywords": ", ".join(_meta(tree, "keywords")) or None,
        "tags": _meta(tree, "article:tag") or None,
        "language": one_line(tree.get("lang")),
    }
    return {key: value for key, value in candidates.items() if value}


# --- fallback: a small walk over the tree -------------------------------------------------


def prune_boilerplate(tree: lxml_html.HtmlElement) -> None:
    """Remove, in place, what is never main content (see the module docstring)."""
    for element in list(tree.iter(*_DROP_TAGS)):
        _drop(element)
    for element in list(tree.iter(*_PAGE_CHROME)):
        if not any(a.tag in ("article", "main") for a in element.iterancestors()):
            _drop(element)
    for element in list(tree.iter()):
        if _is_boilerplate(element):
            _drop(element)


def simple_markdown(tree: lxml_html.HtmlElement) -> str:
    """A pruned tree's main element as Markdown: headings, paragraphs, lists, tables, code."""
    root = next(
        (found[0] for xpath in ("//main", "//article", "//*[@role='main']", "//body")
         if (found := tree.xpath(xpath))),
        tree,
    )  # fmt: skip
    return "\n\n".join(block for block in _blocks(root, depth=0) if block.strip())


def _is_boilerplate(element: lxml_html.HtmlElement) -> bool:
    if not isinstance(element.tag, str):  # comments, processing instructions
        return True
    if (element.get("role") or "").lower() in _DROP_ROLES:
        return True
    return _BOILERPLATE.search(f"{element.get('id', '')} {element.get('class', '')}") is not None


def _drop(element: lxml_html.HtmlElement) -> None:
    if element.getparent() is not None:
        element.drop_tree()


def _inline(element: lxml_html.HtmlElement) -> str:
    return " ".join(element.text_content().split())


def _blocks(element: lxml_html.HtmlElement, depth: int) -> Iterator[str]:
    tag = element.tag if isinstance(element.tag, str) else ""
    if depth > 200:  # pathological nesting: flatten what is left
        yield _inline(element)
    elif tag in _HEADINGS:
        yield "#" * _HEADINGS[tag] + " " + _inline(element)
    elif tag == "table":
        rows = [[_inline(cell) for cell in row.iter("th", "td")] for row in element.iter("tr")]
        yield markdown_table(rows)
    elif tag == "pre":
        yield "```\n" + element.text_content().strip("\n") + "\n```"
    elif tag in ("ul", "ol"):
        marker = "1." if tag == "ol" else "-"
        yield "\n".join(f"{marker} {_inline(li)}" for li in element.iterchildren("li"))
    elif tag == "blockquote":
        yield "\n".join("> " + line for line in _inline(element).split("\n"))
    elif any(isinstance(c.tag, str) and c.tag in _BLOCKS for c in element):
        if element.text and element.text.strip():
            yield " ".join(element.text.split())
        for child in element:
            yield from _blocks(child, depth + 1)
            if child.tail and child.tail.strip():
                yield " ".join(child.tail.split())
    else:
        yield _inline(element)
