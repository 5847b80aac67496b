"""S3 as the flat namespace under ``FsspecStore``: s3fs's client, conditions checked by S3.

Requests go through ``S3FileSystem._call_s3`` (s3fs's retries, credentials and error
translation) rather than its file API, for what that API does not carry: object metadata and
conditional requests.

* **Versions.** Every write stores a random token in the object's metadata
  (``x-amz-meta-bastion-version``); the version is that token and the start of the ETag, so it
  changes on every write, even of identical bytes (an ETag alone is the content's MD5). An
  object written by another tool has no token: its version is its ETag. Listing directories
  therefore costs one ``HEAD`` per file (run concurrently), since S3 lists no metadata.
* **Conditional writes** are ``If-None-Match: *`` (create) and ``If-Match: <etag>`` (expected
  version), checked by S3 itself: atomic across every writer, in any process. The version is
  checked on a ``HEAD`` first; what S3 compares on the ``PUT`` is the ETag (the content's
  digest), so a write of identical bytes between that ``HEAD`` and the ``PUT`` goes unseen: the
  content replaced is then the very content the writer read.
* **Directories** are empty marker objects named ``dir/`` (the S3 console's convention) or any
  key below ``dir/``.
* **Appends** rewrite the object; from :data:`COMPOSE_MIN` bytes on, S3 composes the new
  object from the old one (``UploadPartCopy``) and the appended part, so the old bytes never
  travel.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any, Final

from bastion.core.errors import ConfigurationError
from bastion.stores._fsspec_objects import (
    ABSENT,
    EMPTY_BODY,
    Body,
    Expect,
    Listing,
    Obj,
    Objects,
    PreconditionFailed,
)

__all__ = ["COMPOSE_MIN", "S3Objects", "error_code"]

TOKEN: Final = "bastion-version"  # noqa: S105 - a metadata key, not a secret
COMPOSE_MIN: Final = 8 << 20
"""Objects from this size on are appended to by composing on the server (see the module doc)."""
_COPY_MAX: Final = 5 << 30  # one CopyObject copies at most 5 GiB
_HEADS: Final = 16  # concurrent HEADs while listing
_PRECONDITION = frozenset({"PreconditionFailed", "412", "ConditionalRequestConflict"})
_MISSING_KEY = frozenset({"NoSuchKey", "404", "NotFound"})


def error_code(exc: BaseException) -> str | None:
    """The S3 error code behind ``exc`` (s3fs raises OSErrors caused by botocore errors)."""
    seen: BaseException | None = exc
    for _ in range(4):
        if seen is None:
            return None
        response = getattr(seen, "response", None)
        if isinstance(response, dict):
            code = response.get("Error", {}).get("Code")
            return str(code) if code is not None else None
        seen = seen.__cause__ or seen.__context__
    return None


@contextlib.contextmanager
def _preconditioned(key: str) -> Iterator[None]:
    """Raise :class:`PreconditionFailed` for a conditional request S3 refused."""
    try:
        yield
    except OSError as exc:  # s3fs raises FileExistsError for some refusals
        if isinstance(exc, FileExistsError) or error_code(exc) in _PRECONDITION:
            raise PreconditionFailed(key) from None
        raise


def _token() -> dict[str, str]:
    return {TOKEN: secrets.token_hex(8)}


def _obj(response: dict[str, Any], size: int | None = None) -> Obj:
    etag = str(response.get("ETag", "")).strip('"')
    token = (response.get("Metadata") or {}).get(TOKEN)
    version = f"{token}-{etag[:12]}" if token else etag
    modified = response.get("LastModified")
    mtime = modified.timestamp() if modified is not None else time.time()
    length = size if size is not None else int(response.get("ContentLength", 0))
    return Obj(length, mtime, version, str(response.get("ETag")))


def _written(response: dict[str, Any], size: int, metadata: dict[str, str]) -> Obj:
    """The object a PUT (or a copy) just made, without asking for it again."""
    result = response.get("CopyObjectResult", response)
    return _obj({**result, "Metadata": metadata, "LastModified": result.get("LastModified")}, size)


def _conditions(expect: Expect) -> dict[str, str]:
    if expect is ABSENT:
        return {"IfNoneMatch": "*"}
    if isinstance(expect, Obj) and expect.etag:
        return {"IfMatch": expect.etag}
    return {}


class _Stream(Body):
    def __init__(self, stream: Any) -> None:
        self._stream = stream

    async def read(self) -> bytes:
        async with self._stream as stream:
            data: bytes = await stream.read()
            return data

    async def aclose(self) -> None:
        await self._stream.__aexit__(None, None, None)


class S3Objects(Objects):
    """Objects under ``bucket/prefix`` of an ``s3fs.S3FileSystem`` (see the module doc)."""

    kind = "s3"
    server_checks = True

    def __init__(self, fs: Any, root: str) -> None:
        bucket, _, prefix = str(fs._strip_protocol(root)).strip("/").partition("/")
        if not bucket:
            raise ConfigurationError(
                "an S3 store needs a bucket: s3://bucket or s3://bucket/prefix"
            )
        self.fs = fs
        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self.location = f"{bucket}/{self.prefix}" if self.prefix else bucket

    def describe(self) -> str:
        return "object storage (S3)"

    # -- keys --------------------------------------------------------------------------------

    def _key(self, key: str) -> str:
        return f"{self.prefix}/{key}" if self.prefix and key else key or self.prefix

    def _dir(self, key: str) -> str:
        """The prefix of everything inside directory ``key`` (its marker's key, too)."""
        full = self._key(key)
        return f"{full}/" if full else ""

    async def _s3(self, method: str, **kwargs: Any) -> Any:
        return await self.fs._call_s3(method, Bucket=self.bucket, **kwargs)

    async def _keys(self, prefix: str, delimiter: str | None = None) -> AsyncIterator[Any]:
        """Pages of a listing under ``prefix``."""
        kwargs: dict[str, Any] = {"Prefix": prefix}
        if delimiter:
            kwargs["Delimiter"] = delimiter
        while True:
            page = await self._s3("list_objects_v2", **kwargs)
            yield page
            if not page.get("IsTruncated"):
                return
            kwargs["ContinuationToken"] = page["NextContinuationToken"]

    # -- reading -----------------------------------------------------------------------------

    async def head(self, key: str) -> Obj | None:
        if not self._key(key):
            return None
        try:
            return _obj(await self._s3("head_object", Key=self._key(key)))
        except FileNotFoundError as exc:
            if error_code(exc) in _MISSING_KEY:
                return None
            raise

    async def is_dir(self, key: str) -> bool:
        page = await self._s3("list_objects_v2", Prefix=self._dir(key), MaxKeys=1)
        return bool(page.get("KeyCount") or page.get("Contents"))

    async def open(self, key: str, start: int, end: int | None) -> tuple[Obj, Body] | None:
        if end is not None and end <= start:
            found = await self.head(key)
            return None if found is None else (found, EMPTY_BODY)
        ranged = start > 0 or end is not None
        extra = {"Range": f"bytes={start}-{'' if end is None else end - 1}"} if ranged else {}
        try:
            response = await self._s3("get_object", Key=self._key(key), **extra)
        except FileNotFoundError as exc:
            if error_code(exc) in _MISSING_KEY:
                return None
            raise
        except OSError as exc:
            if error_code(exc) not in ("InvalidRange", "416"):
                raise
            found = await self.head(key)  # the range starts at or past the end
            return None if found is None else (found, EMPTY_BODY)
        total = str(response.get("ContentRange", "")).rpartition("/")[2]
        size = int(total) if total.isdigit() else None
        return _obj(response, size), _Stream(response["Body"])

    async def children(self, key: str) -> Listing | None:
        prefix = self._dir(key)
        files: list[str] = []
        dirs: list[str] = []
        seen = False
        async for page in self._keys(prefix, "/"):
            for common in page.get("CommonPrefixes", ()):
                seen = True
                dirs.append(str(common["Prefix"])[len(prefix) : -1])
            for item in page.get("Contents", ()):
                seen = True
                if item["Key"] != prefix:  # the directory's own marker
                    files.append(str(item["Key"])[len(prefix) :])
        if not seen and key:
            return None
        limit = asyncio.Semaphore(_HEADS)

        async def one(name: str) -> tuple[str, Obj] | None:
            async with limit:
                found = await self.head(f"{key}/{name}" if key else name)
            return None if found is None else (name, found)

        heads = await asyncio.gather(*(one(name) for name in files))
        return Listing([item for item in heads if item is not None], dirs)

    async def has_children(self, key: str) -> bool:
        prefix = self._dir(key)
        page = await self._s3("list_objects_v2", Prefix=prefix, MaxKeys=2)
        return any(item["Key"] != prefix for item in page.get("Contents", ()))

    async def probe(self) -> None:
        await self._s3("list_objects_v2", Prefix=self._dir(""), MaxKeys=1)

    # -- writing -----------------------------------------------------------------------------

    async def put(self, key: str, data: bytes, expect: Expect) -> Obj:
        metadata = _token()
        with _preconditioned(key):
            response = await self._s3(
                "put_object",
                Key=self._key(key),
                Body=data,
                Metadata=metadata,
                **_conditions(expect),
            )
        return _written(response, len(data), metadata)

    async def append(self, key: str, current: Obj, data: bytes) -> Obj:
        if not COMPOSE_MIN <= current.size <= _COPY_MAX:
            return await super().append(key, current, data)
        full, metadata = self._key(key), _token()
        upload = await self._s3("create_multipart_upload", Key=full, Metadata=metadata)
        upload_id = upload["UploadId"]
        try:
            first = await self._s3(
                "upload_part_copy",
                Key=full,
                UploadId=upload_id,
                PartNumber=1,
                CopySource={"Bucket": self.bucket, "Key": full},
                CopySourceIfMatch=current.etag,
            )
            parts = [{"PartNumber": 1, "ETag": first["CopyPartResult"]["ETag"]}]
            if data:
                second = await self._s3(
                    "upload_part", Key=full, UploadId=upload_id, PartNumber=2, Body=data
                )
                parts.append({"PartNumber": 2, "ETag": second["ETag"]})
            response = await self._s3(
                "complete_multipart_upload",
                Key=full,
                UploadId=upload_id,
                MultipartUpload={"Parts": parts},
                **_conditions(current),
            )
        except BaseException as exc:
            await asyncio.shield(self._abort(full, upload_id))
            if isinstance(exc, OSError) and error_code(exc) in _PRECONDITION:
                raise PreconditionFailed(key) from None
            raise
        return _written(response, current.size + len(data), metadata)

    async def _abort(self, full: str, upload_id: str) -> None:
        # An upload left unfinished is dropped by the bucket's lifecycle rules.
        with contextlib.suppress(OSError):
            await self._s3("abort_multipart_upload", Key=full, UploadId=upload_id)

    async def mark(self, key: str, *, exclusive: bool) -> None:
        extra = {"IfNoneMatch": "*"} if exclusive else {}
        with _preconditioned(key):
            await self._s3("put_object", Key=self._dir(key), Body=b"", **extra)

    async def remove(self, key: str) -> None:
        await self._s3("delete_object", Key=self._key(key))

    async def remove_if(self, key: str, expect: Obj) -> None:
        if not expect.etag:
            await self.remove(key)
            return
        with _preconditioned(key):
            await self._s3("delete_object", Key=self._key(key), IfMatch=expect.etag)

    async def _delete(self, keys: list[str]) -> None:
        for start in range(0, len(keys), 1000):
            batch = [{"Key": k} for k in keys[start : start + 1000]]
            await self._s3("delete_objects", Delete={"Objects": batch, "Quiet": True})

    async def _all(self, prefix: str) -> list[str]:
        return [
            str(item["Key"])
            async for page in self._keys(prefix)
            for item in page.get("Contents", ())
        ]

    async def remove_tree(self, key: str) -> None:
        await self._delete(await self._all(self._dir(key)))

    async def move_tree(self, src: str, dst: str) -> None:
        old, new = self._dir(src), self._dir(dst)
        keys = await self._all(old)
        limit = asyncio.Semaphore(_HEADS)

        async def one(source: str) -> None:
            async with limit:
                await self._s3(
                    "copy_object",
                    Key=new + source[len(old) :],
                    CopySource={"Bucket": self.bucket, "Key": source},
                )

        await asyncio.gather(*(one(k) for k in keys))
        if old not in keys:  # a directory made by other tools has no marker: give it one
            await self.mark(dst, exclusive=False)
        await self._delete(keys)

    async def copy(self, src: str, dst: str, expect: Expect, *, keep_version: bool) -> Obj:
        source = {"Bucket": self.bucket, "Key": self._key(src)}
        extra: dict[str, Any] = {} if keep_version else {"MetadataDirective": "REPLACE"}
        metadata = {} if keep_version else _token()
        if metadata:
            extra["Metadata"] = metadata
        found = await self.head(src)
        if found is None:
            raise FileNotFoundError(src)
        if found.size > _COPY_MAX:
            await self.fs._copy_managed(
                f"{self.bucket}/{self._key(src)}",
                f"{self.bucket}/{self._key(dst)}",
                found.size,
                **({"Metadata": metadata} if metadata else {}),
            )
            copied = await self.head(dst)
            if copied is None:
                raise FileNotFoundError(dst)
            return copied
        with _preconditioned(dst):
            response = await self._s3(
                "copy_object", Key=self._key(dst), CopySource=source, **extra, **_conditions(expect)
            )
        if keep_version:
            copied = await self.head(dst)
            return copied if copied is not None else found
        return _written(response, found.size, metadata)

    async def close(self) -> None:
        creator = getattr(self.fs, "_s3creator", None)
        if getattr(self.fs, "_s3", None) is not None and creator is not None:
            self.fs._s3 = None
            await creator.__aexit__(None, None, None)
