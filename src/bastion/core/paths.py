"""Virtual paths: parsed once at the boundary, safe by construction.

A :class:`VPath` is an absolute POSIX-style path inside the workspace. Its parts are never
empty, ``.`` or ``..``, never contain ``/``, NUL, control characters or a backslash, and are
NFC-normalized, so two spellings of one name are one path. Only :func:`VPath.parse` builds
one from a string; everything downstream trusts the value.

Rules (see ``docs/paths.md``):

* ``/`` is the only separator. A backslash is refused: it is neither a separator nor a name
  character, so ``docs\\..\\secret`` cannot mean two different things to two components.
* Relative input (``docs/a.md``) is taken relative to ``/``.
* ``.`` is dropped, ``..`` pops one segment; a ``..`` that would climb above ``/`` is refused.
  Dots inside names are ordinary characters (``report..final.md``, ``..test``).
* Refused: NUL and other control characters, Unicode bidirectional overrides, lone
  surrogates (``"\\ud800"``: half a character, no encoding can store it), a leading
  ``//`` (UNC form), a drive-letter segment (``C:``), names over 255 bytes, paths over 4096
  bytes (UTF-8).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import ClassVar

from bastion.core.errors import InvalidPathError
from bastion.core.memo import Memo

__all__ = ["MAX_NAME_BYTES", "MAX_PATH_BYTES", "VPath"]

MAX_NAME_BYTES = 255
MAX_PATH_BYTES = 4096

# Unicode bidirectional controls let a name display differently from what it is: every
# character with the Bidi_Control property (ALM, LRM, RLM, the embeddings, overrides, isolates).
_BIDI_CONTROLS = frozenset(
    "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)

# The common case, answered without the general parser: an absolute ASCII path whose segments
# are plain names (no control character, backslash or colon, no leading dot, so never "." or
# ".." or a drive), one slash between them, each name within MAX_NAME_BYTES. ASCII is already
# NFC. Anything else takes the general path below, which decides it in full.
_PARSED: Memo[str, VPath] = Memo(1024)
"""Paths parsed lately (a path is immutable): a tool call, its approval, its scratch check and
the workspace's operation each parse the same string."""
_PLAIN_PATH = re.compile(r"(?:/[^\x00-\x1f\x7f\\/:.][^\x00-\x1f\x7f\\/:]{0,254})+")
_PLAIN_NAME = re.compile(r"[^\x00-\x1f\x7f\\/:.][^\x00-\x1f\x7f\\/:]{0,254}")
"""One segment of the common case (see ``_PLAIN_PATH``): a child name taken as it is."""


def _is_forbidden_char(ch: str) -> bool:
    return unicodedata.category(ch) in ("Cc", "Cs") or ch in _BIDI_CONTROLS


def _describe(ch: str) -> str:
    """What a forbidden character is, for an error message."""
    if unicodedata.category(ch) == "Cs":
        return f"a lone surrogate (U+{ord(ch):04X}), which is not text"
    return f"a control character (U+{ord(ch):04X})"


def _is_drive(segment: str) -> bool:
    return len(segment) == 2 and segment[1] == ":" and segment[0].isascii() and segment[0].isalpha()


@dataclass(frozen=True, slots=True)
class VPath:
    """An absolute, normalized workspace path. Build one with :meth:`parse`."""

    parts: tuple[str, ...]

    ROOT: ClassVar[VPath]

    @classmethod
    def parse(cls, raw: str | VPath) -> VPath:
        """Parse ``raw`` into a path, or raise :class:`InvalidPathError` saying why."""
        if isinstance(raw, VPath):
            return raw
        if not isinstance(raw, str):
            raise InvalidPathError(f"path must be a string, got {type(raw).__name__}")
        known = _PARSED.get(raw)
        if known is not None:
            return known
        if len(raw) <= MAX_PATH_BYTES and raw.isascii() and _PLAIN_PATH.fullmatch(raw):
            parsed = cls(tuple(raw[1:].split("/")))
        else:
            parsed = cls._parse_general(raw)
        _PARSED[raw] = parsed
        return parsed

    @classmethod
    def _parse_general(cls, raw: str) -> VPath:
        if raw == "":
            raise InvalidPathError("empty path: give an absolute path such as /docs/notes.md")
        # Forbidden characters are looked for before normalizing: normalization is only
        # defined on text, and a lone surrogate is not text.
        for ch in raw:
            if _is_forbidden_char(ch):
                raise InvalidPathError(f"path {_show(raw)} contains {_describe(ch)}; remove it")
        text = unicodedata.normalize("NFC", raw)
        if "\\" in text:
            raise InvalidPathError(
                f"path {_show(text)} contains a backslash; use '/' as the only separator"
            )
        if text.startswith("//") and not text.startswith("///"):
            raise InvalidPathError(f"path {_show(text)} has a UNC form (leading '//'); use one '/'")
        if len(text.encode("utf-8")) > MAX_PATH_BYTES:
            raise InvalidPathError(f"path is longer than {MAX_PATH_BYTES} bytes; shorten it")
        parts: list[str] = []
        for segment in text.split("/"):
            if segment in ("", "."):
                continue
            if segment == "..":
                if not parts:
                    raise InvalidPathError(
                        f"path {_show(text)} climbs above '/' with '..'; stay inside the workspace"
                    )
                parts.pop()
                continue
            if _is_drive(segment):
                raise InvalidPathError(
                    f"path {_show(text)} has a Windows drive ({segment}); "
                    "use workspace paths like /docs"
                )
            if len(segment.encode("utf-8")) > MAX_NAME_BYTES:
                raise InvalidPathError(f"a name in the path is longer than {MAX_NAME_BYTES} bytes")
            parts.append(segment)
        return cls(tuple(parts))

    # -- structure ---------------------------------------------------------------------------

    @property
    def is_root(self) -> bool:
        return not self.parts

    @property
    def name(self) -> str:
        """The last segment; ``""`` for the root."""
        return self.parts[-1] if self.parts else ""

    @property
    def suffix(self) -> str:
        """The extension with its dot (``.md``), or ``""``. A leading dot is not an extension."""
        name = self.name
        dot = name.rfind(".")
        return name[dot:].lower() if dot > 0 else ""

    @property
    def parent(self) -> VPath:
        return VPath(self.parts[:-1]) if self.parts else self

    def child(self, name: str) -> VPath:
        """The path of a direct child; ``name`` must be one valid segment."""
        if name.isascii() and _PLAIN_NAME.fullmatch(name):
            return VPath((*self.parts, name))
        parsed = VPath.parse(name)
        if len(parsed.parts) != 1 or name in (".", ".."):
            raise InvalidPathError(f"{_show(name)} is not a single file name")
        return VPath((*self.parts, parsed.parts[0]))

    def join(self, other: VPath) -> VPath:
        """Append the parts of ``other`` (taken as relative to this path)."""
        return VPath(self.parts + other.parts)

    def __truediv__(self, name: str) -> VPath:
        return self.child(name)

    def is_relative_to(self, other: VPath) -> bool:
        """True when ``other`` is this path or one of its ancestors (segment-wise)."""
        n = len(other.parts)
        return self.parts[:n] == other.parts

    def relative_to(self, other: VPath) -> VPath:
        """This path with the prefix ``other`` removed, as a path from ``/``."""
        if not self.is_relative_to(other):
            raise ValueError(f"{self} is not under {other}")
        return VPath(self.parts[len(other.parts) :])

    @property
    def depth(self) -> int:
        return len(self.parts)

    def __str__(self) -> str:
        return "/" + "/".join(self.parts)

    def __repr__(self) -> str:
        return f"VPath({str(self)!r})"


VPath.ROOT = VPath(())


def _show(text: str) -> str:
    """Quote a user path for an error message; long input is cut, controls escaped."""
    cut = text if len(text) <= 80 else text[:77] + "..."
    return repr(cut)
