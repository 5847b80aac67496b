"""The store contract under load: awkward content and names, concurrency, large files."""

from __future__ import annotations

import asyncio
import threading
import unicodedata
from concurrent.futures import ThreadPoolExecutor

import pytest

from bastion.core.errors import (
    ConflictError,
    LabelError,
)
from bastion.core.models import FileInfo, WriteMode
from bastion.core.paths import VPath
from bastion.core.ports import Store
from bastion.testing._contract_support import (
    ALL_BYTES,
    ContractBase,
    MiB,
    P,
    blob,
    increment,
)

__all__ = ["LoadContract"]


class LoadContract(ContractBase):
    """The store contract under load: awkward content and names, concurrency, large files."""

    # -- content and names -------------------------------------------------------------------

    async def test_content_that_looks_like_labels(self, store: Store) -> None:
        readable = b"---\ntags: [notes]\n---\nbody\n"
        assert (await store.write(P("/notes.md"), readable)).size == len(readable)
        assert await store.read_all(P("/notes.md")) == readable
        unreadable = {
            "/notes.md": b"---\ntags: [unclosed\n---\nbody\n",  # front matter, not YAML
            "/notes.md.labels.yaml": b"roles: 42\n",  # a sidecar of the wrong shape
            "/other.md": b"---\nroles: {a: b}\n---\n",
        }
        for raw, data in unreadable.items():
            if not self.reads_labels:
                await store.write(P(raw), data)
                assert await store.read_all(P(raw)) == data
                continue
            with pytest.raises(LabelError, match="labels could not be read") as caught:
                await store.write(P(raw), data)
            assert "\n" not in str(caught.value)
        if self.reads_labels:  # refused whole: nothing written, nothing changed
            assert await store.read_all(P("/notes.md")) == readable
            assert [str(i.path) for i in await store.list(VPath.ROOT)] == ["/notes.md"]

    async def test_binary_content_round_trips(self, store: Store) -> None:
        data = b"\x00" * 3 + ALL_BYTES + bytes(reversed(ALL_BYTES)) + b"\x00\r\n\x00\xff"
        info = await store.write(P("/bin"), data)
        assert info.size == len(data)
        assert await store.read_all(P("/bin")) == data
        assert await store.read_range(P("/bin"), 3, 256) == ALL_BYTES
        assert await store.read_range(P("/bin"), 0, 4) == b"\x00\x00\x00\x00"
        await store.write(P("/bin"), b"\x00", mode=WriteMode.APPEND)
        assert await store.read_all(P("/bin")) == data + b"\x00"
        assert await store.read_range(P("/bin"), len(data)) == b"\x00"

    @pytest.mark.parametrize(
        "name",
        [
            "café.txt",
            "cafe\u0301-decomposed.txt",
            "naïve résumé",
            "文件.md",
            "Ωμέγα",
            "emoji-😀.bin",
            "ñ",
            "with space and 'quote'",
        ],
    )
    async def test_unicode_names_round_trip(self, store: Store, name: str) -> None:
        nfc = unicodedata.normalize("NFC", name)
        nfd = unicodedata.normalize("NFD", name)
        await store.mkdir(P(f"/{nfd}-dir"))
        await store.write(P(f"/{nfd}-dir/{nfd}"), name.encode())
        assert await store.read_all(P(f"/{nfc}-dir/{nfc}")) == name.encode()
        assert await store.read_all(P(f"/{nfd}-dir/{nfd}")) == name.encode()
        [listed_dir] = await store.list(VPath.ROOT)
        assert listed_dir.path.name == f"{nfc}-dir"
        assert listed_dir.is_dir
        [listed] = await store.list(listed_dir.path)
        assert listed.path.name == nfc
        assert listed.path == P(f"/{nfd}-dir/{nfd}")
        assert await store.read_all(listed.path) == name.encode()
        await store.rename(listed.path, P(f"/{nfc}-dir/{nfc}.moved"))
        assert await store.read_all(P(f"/{nfd}-dir/{nfd}.moved")) == name.encode()
        await store.delete(P(f"/{nfd}-dir"), recursive=True)
        assert await store.list(VPath.ROOT) == []

    async def test_names_with_dots(self, store: Store) -> None:
        names = ["..test", "report..final.md", "...", ".hidden", "trailing.", "a.b.c"]
        await store.mkdir(P("/..dir"))
        for name in names:
            await store.write(P(f"/..dir/{name}"), name.encode())
        assert {i.path.name for i in await store.list(P("/..dir"))} == set(names)
        for name in names:
            assert await store.read_all(P("/..dir") / name) == name.encode()
            assert (await store.stat(P(f"/..dir/{name}"))).size == len(name)
        await store.rename(P("/..dir/..test"), P("/..dir/...test"))
        assert await store.read_all(P("/..dir/...test")) == b"..test"
        assert not await store.exists(P("/..dir/..test"))
        assert [str(i.path) for i in await store.list(VPath.ROOT)] == ["/..dir"]

    async def test_large_file_small_ranges_at_the_end(self, store: Store) -> None:
        size = 5 * MiB + 3
        data = blob(size, seed=5)
        info = await store.write(P("/large.bin"), data)
        assert info.size == size
        assert (await store.stat(P("/large.bin"))).size == size
        path = P("/large.bin")
        assert await store.read_range(path, size - 1, 1) == data[-1:]
        assert await store.read_range(path, size - 10, 10) == data[-10:]
        assert await store.read_range(path, size - 10) == data[-10:]
        assert await store.read_range(path, size - 7, 100) == data[-7:]
        assert await store.read_range(path, size, 1) == b""
        for offset in (0, MiB - 1, MiB, 4 * MiB + 17, size - 4097):
            assert await store.read_range(path, offset, 4096) == data[offset : offset + 4096]
        assert await store.read_range(path, 5 * MiB - 2, 5) == data[5 * MiB - 2 : 5 * MiB + 3]
        assert await store.read_all(path) == data

    # -- concurrency -------------------------------------------------------------------------

    async def test_concurrent_tasks_lose_no_update(self, store: Store) -> None:
        counter = P("/counter")
        await store.write(counter, b"0")
        tasks, each = 20, 5
        conflicts = await asyncio.gather(
            *(increment(store, counter, each, threaded=False) for _ in range(tasks))
        )
        assert int(await store.read_all(counter)) == tasks * each
        assert sum(conflicts) > 0  # the writers did collide, and the losers retried

    def test_concurrent_threads_lose_no_update(self, store: Store) -> None:
        counter = P("/counter")
        asyncio.run(store.write(counter, b"0"))
        threads, each = 4, 25
        start = threading.Barrier(threads)

        def worker() -> int:
            start.wait(timeout=30)
            return asyncio.run(increment(store, counter, each, threaded=True))

        with ThreadPoolExecutor(threads) as pool:
            futures = [pool.submit(worker) for _ in range(threads)]
            for future in futures:
                future.result(timeout=120)
        assert int(asyncio.run(store.read_all(counter))) == threads * each

    def test_readers_never_see_a_mix(self, store: Store) -> None:
        path = P("/flip.bin")
        size = MiB + 1
        asyncio.run(store.write(path, b"A" * size))
        done = threading.Event()
        seen: set[bytes] = set()

        def writer() -> None:
            try:
                for n in range(20):
                    asyncio.run(store.write(path, (b"B" if n % 2 == 0 else b"A") * size))
            finally:
                done.set()

        def reader() -> int:
            reads = 0
            while not done.is_set() or reads == 0:
                data = asyncio.run(store.read_all(path))
                assert len(data) == size
                assert data.count(data[:1]) == size, "a read saw a mix of two writes"
                seen.add(data[:1])
                reads += 1
            return reads

        with ThreadPoolExecutor(3) as pool:
            readers = [pool.submit(reader) for _ in range(2)]
            pool.submit(writer).result(timeout=120)
            assert all(r.result(timeout=120) > 0 for r in readers)
        assert seen <= {b"A", b"B"}
        assert asyncio.run(store.read_all(path)) == b"A" * size

    # -- large files, many writers, conflicts -------------------------------------------------

    async def test_ranges_of_a_12_mib_file(self, store: Store) -> None:
        size = 12 * MiB + 5
        data = blob(size, seed=12)
        await store.mkdir(P("/big"))
        path = P("/big/twelve.bin")
        assert (await store.write(path, data)).size == size
        cases: list[tuple[int, int | None]] = [
            (0, 1),
            (0, 100),
            (0, 64 * 1024 + 1),
            (1, MiB),
            (6 * MiB - 1000, 3 * MiB + 2000),  # the middle, across many chunk boundaries
            (size // 2, 10),
            (size - 100, 100),
            (size - 1, 1),
            (size - 5, 1000),
            (size - 100, None),
            (size, 10),
        ]
        for boundary in (4096, 64 * 1024, MiB, 4 * MiB, 6 * MiB, 8 * MiB, 12 * MiB):
            cases += [(boundary - 1, 2), (boundary - 3, 7), (boundary, 1), (boundary - 1, 1)]
        for offset, length in cases:
            end = size if length is None else offset + length
            expected = data[offset:end]
            assert await store.read_range(path, offset, length) == expected, (offset, length)
            info, part = await store.read_file(path, offset, length)
            assert part == expected, (offset, length)
            assert info.size == size
        assert await store.read_all(path) == data

    async def test_appends_across_chunk_boundaries(self, store: Store) -> None:
        path = P("/grow.bin")
        expected = b""
        versions: list[str | None] = []
        pieces = [1, 1023, 1024, 1025, 4095, 65535, 65536, 70001, 3, 300_000, 0, MiB + 7]
        for n, size in enumerate(pieces):
            piece = blob(size, seed=100 + n)
            info = await store.write(path, piece, mode=WriteMode.APPEND)
            expected += piece
            versions.append(info.version)
            assert info.size == len(expected)
        assert len(set(versions)) == len(versions)
        assert await store.read_all(path) == expected
        total = len(expected)
        for offset in (0, 1023, 1024, 2047, 65535, 65536, 131071, 500_000, total - 3):
            assert (
                await store.read_range(path, offset, 70_000) == expected[offset : offset + 70_000]
            )
        await store.write(path, b"short", mode=WriteMode.OVERWRITE)
        await store.write(path, b"+tail", mode=WriteMode.APPEND)
        assert await store.read_all(path) == b"short+tail"

    async def test_many_writers_exactly_one_wins_each_round(self, store: Store) -> None:
        path = P("/race.txt")
        version = (await store.write(path, b"start")).version
        writers = 12
        for round_ in range(10):

            async def attempt(n: int, expected: str | None, r: int = round_) -> FileInfo | None:
                await asyncio.sleep(0)  # all writers start before any one finishes
                try:
                    return await store.write(path, b"round %d by %d" % (r, n), if_version=expected)
                except ConflictError:
                    return None

            results = await asyncio.gather(*(attempt(n, version) for n in range(writers)))
            winners = [(n, info) for n, info in enumerate(results) if info is not None]
            assert len(winners) == 1, f"round {round_}: {len(winners)} writers won"
            [(winner, info)] = winners
            assert await store.read_all(path) == b"round %d by %d" % (round_, winner)
            assert info.version != version
            assert (await store.stat(path)).version == info.version
            version = info.version

    def test_many_threads_exactly_one_wins_each_round(self, store: Store) -> None:
        path = P("/race.txt")
        version = asyncio.run(store.write(path, b"start")).version
        writers = 6
        with ThreadPoolExecutor(writers) as pool:
            for round_ in range(6):
                start = threading.Barrier(writers)

                def attempt(
                    n: int, expected: str | None, r: int = round_, start: threading.Barrier = start
                ) -> FileInfo | None:
                    start.wait(timeout=30)
                    try:
                        return asyncio.run(
                            store.write(path, b"round %d by %d" % (r, n), if_version=expected)
                        )
                    except ConflictError:
                        return None

                futures = [pool.submit(attempt, n, version) for n in range(writers)]
                results = [f.result(timeout=120) for f in futures]
                winners = [(n, info) for n, info in enumerate(results) if info is not None]
                assert len(winners) == 1, f"round {round_}: {len(winners)} writers won"
                [(winner, info)] = winners
                assert asyncio.run(store.read_all(path)) == b"round %d by %d" % (round_, winner)
                version = info.version

    async def test_concurrent_appends_lose_nothing(self, store: Store) -> None:
        path = P("/log.txt")
        tasks, each = 10, 10

        async def appender(task: int) -> None:
            for n in range(each):
                await store.write(path, b"task %02d line %02d\n" % (task, n), mode=WriteMode.APPEND)
                await asyncio.sleep(0)

        await asyncio.gather(*(appender(t) for t in range(tasks)))
        lines = (await store.read_all(path)).splitlines()
        expected = {b"task %02d line %02d" % (t, n) for t in range(tasks) for n in range(each)}
        assert len(lines) == tasks * each
        assert set(lines) == expected
        for task in range(tasks):  # each writer's lines stay in its own order
            mine = [line for line in lines if line.startswith(b"task %02d " % task)]
            assert mine == sorted(mine)

    def test_concurrent_threads_append_lose_nothing(self, store: Store) -> None:
        path = P("/log.txt")
        threads, each = 4, 15
        start = threading.Barrier(threads)

        def appender(thread: int) -> None:
            start.wait(timeout=30)
            for n in range(each):
                line = b"thread %d line %02d\n" % (thread, n)
                asyncio.run(store.write(path, line, mode=WriteMode.APPEND))

        with ThreadPoolExecutor(threads) as pool:
            for future in [pool.submit(appender, t) for t in range(threads)]:
                future.result(timeout=120)
        lines = asyncio.run(store.read_all(path)).splitlines()
        assert len(lines) == threads * each
        assert set(lines) == {
            b"thread %d line %02d" % (t, n) for t in range(threads) for n in range(each)
        }

    async def test_conflicts_are_conflict_errors_that_name_the_path(self, store: Store) -> None:
        path = P("/doc.txt")
        first = await store.write(path, b"secret first content")
        second = await store.write(path, b"secret second content")
        appended = await store.write(path, b"!", mode=WriteMode.APPEND)
        stale_cases: list[tuple[WriteMode, str | None]] = [
            (WriteMode.OVERWRITE, first.version),
            (WriteMode.APPEND, first.version),
            (WriteMode.OVERWRITE, second.version),
            (WriteMode.APPEND, second.version),
        ]
        for mode, stale in stale_cases:
            with pytest.raises(ConflictError) as caught:
                await store.write(path, b"late", mode=mode, if_version=stale)
            message = str(caught.value)
            assert message.startswith(str(path)), message
            assert "\n" not in message and "secret" not in message
        assert await store.read_all(path) == b"secret second content!"
        assert (await store.stat(path)).version == appended.version
        await store.delete(path)
        with pytest.raises(ConflictError):
            await store.write(path, b"late", if_version=appended.version)
        assert not await store.exists(path)
        again = await store.write(path, b"new")
        with pytest.raises(ConflictError):
            await store.write(path, b"late", if_version=appended.version)
        assert (await store.write(path, b"newer", if_version=again.version)).size == 5
