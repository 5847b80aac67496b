"""The egress proxy put inside one command's network namespace.

The command's sandbox has a network namespace of its own (``--unshare-net``): only a loopback,
no route out. Bastion makes the proxy's listening socket *in that namespace*, on
``127.0.0.1:3128``, and accepts its connections in the Bastion process itself, which dials out
from the host's namespace after the allow-list admits the host. Nothing runs inside the sandbox
to forward (no binary the sandbox must have), and no socket of the host is reachable from it.

How: bubblewrap is started with ``--json-status-fd`` (it writes its sandbox's PID there once
the namespaces exist; ``--info-fd`` is the kill's, in ``bastion.sandbox.spawn``) and
``--block-fd`` (it waits there before running the command). A short helper process (this
interpreter, ``-I -S``) joins the sandbox's user and network namespaces (one ``setns`` on a
pidfd: Linux 5.8 or later), makes the listening socket, hands its descriptor back over a
socket pair and exits; the proxy serves it; then the command is let go.
If any step fails, the command still starts, with no proxy listening: nothing gets out, the
failure is recorded, and every connection is refused.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import subprocess
import sys

from bastion.sandbox.egress import Egress, Recorder
from bastion.sandbox.proxy import Proxy

__all__ = ["PROXY_PORT", "EgressGate"]

log = logging.getLogger(__name__)

PROXY_PORT = 3128
"""The port the proxy listens on inside the sandbox (its own loopback)."""
_URL = f"http://127.0.0.1:{PROXY_PORT}"
_HELPER_SECONDS = 10.0

_HELPER = f"""
import ctypes, os, socket, sys
libc = ctypes.CDLL(None, use_errno=True)
pid, chan = int(sys.argv[1]), int(sys.argv[2])
target = os.pidfd_open(pid)
if libc.setns(target, 0x10000000 | 0x40000000) != 0:  # CLONE_NEWUSER | CLONE_NEWNET
    err = ctypes.get_errno()
    sys.exit("setns: " + os.strerror(err))
listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
listener.bind(("0.0.0.0", {PROXY_PORT}))
listener.listen(128)
socket.send_fds(socket.socket(fileno=chan), [b"ok"], [listener.fileno()])
"""
"""Run in the helper: join the namespaces, listen, send the socket back. It binds the
namespace's every address (only its loopback exists; bubblewrap may not have brought it up
yet)."""


class EgressGate:
    """One command's proxy and the descriptors that tie it to bubblewrap."""

    def __init__(self, egress: Egress, record: Recorder | None) -> None:
        self.record = record
        self.proxy = Proxy(egress, record)
        self._info_r, self._info_w = os.pipe()
        self._block_r, self._block_w = os.pipe()
        self._task: asyncio.Future[None] | None = None
        self._stop = asyncio.Event()  # binds to a loop on first use

    @property
    def args(self) -> list[str]:
        """bubblewrap's arguments that let the gate in."""
        return ["--json-status-fd", str(self._info_w), "--block-fd", str(self._block_r)]

    @property
    def fds(self) -> tuple[int, ...]:
        """Descriptors bubblewrap inherits."""
        return tuple(fd for fd in (self._info_w, self._block_r) if fd >= 0)

    @staticmethod
    def env() -> dict[str, str]:
        """The command's proxy variables (both spellings: tools read one or the other)."""
        names = ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")
        return {**dict.fromkeys(names, _URL), "NO_PROXY": "", "no_proxy": ""}

    def close_child_fds(self) -> None:
        """Close this process's copies of bubblewrap's ends (once it has started, or failed
        to): the gate then sees bubblewrap's end as the end of the pipe."""
        for name in ("_info_w", "_block_r"):
            fd = getattr(self, name)
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
                setattr(self, name, -1)

    def open(self) -> None:
        """Begin waiting for bubblewrap (call before or just after it starts)."""
        if self._task is None:
            self._task = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        serving = False
        try:
            pid = await asyncio.to_thread(_read_pid, self._info_r)
            if pid is None:
                return  # bubblewrap ended before its sandbox was made
            listener = await asyncio.to_thread(_listener_in, pid)
            await self.proxy.serve(listener)
            serving = True
        except Exception as exc:
            log.warning("the egress proxy could not start", exc_info=True)
            if self.record is not None:
                with contextlib.suppress(Exception):
                    # the exception's words may name host paths: the operator log has them
                    why = type(exc).__name__
                    self.record("-", False, f"the egress proxy could not start ({why})")
        finally:
            with contextlib.suppress(OSError):
                os.write(self._block_w, b"x")  # let the command run
        if serving:
            # a task pending while the proxy serves: the blocking facade's loop is driven as
            # long as a task is, so the proxy answers between calls too
            await self._stop.wait()

    async def close(self) -> None:
        """Stop the proxy and close every descriptor (bubblewrap has ended)."""
        self.close_child_fds()
        self._stop.set()
        if self._task is not None:
            with contextlib.suppress(Exception):
                await self._task
        await self.proxy.close()
        for name in ("_info_r", "_block_w"):
            fd = getattr(self, name)
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
                setattr(self, name, -1)


def _read_pid(fd: int) -> int | None:
    """The sandbox's PID from bubblewrap's first status document (``None`` when it ended
    first). The status descriptor carries several JSON documents; the first names the PID."""
    data = b""
    decoder = json.JSONDecoder()
    while True:
        chunk = os.read(fd, 4096)
        if not chunk:
            return None
        data += chunk
        try:
            info, _ = decoder.raw_decode(data.decode("utf-8").lstrip())
        except ValueError:
            continue
        if isinstance(info, dict) and "child-pid" in info:
            return int(info["child-pid"])


def _listener_in(pid: int) -> socket.socket:
    """A socket listening in the network namespace of ``pid`` (a helper makes it there)."""
    mine, theirs = socket.socketpair()
    with mine, theirs:
        done = subprocess.run(  # noqa: S603 (this interpreter, a fixed script)
            [sys.executable, "-I", "-S", "-c", _HELPER, str(pid), str(theirs.fileno())],
            pass_fds=(theirs.fileno(),),
            capture_output=True,
            timeout=_HELPER_SECONDS,
            check=False,
            env={},
        )
        if done.returncode != 0:
            why = done.stderr.decode("utf-8", "replace").strip().splitlines()
            raise OSError(why[-1] if why else f"the helper exited {done.returncode}")
        theirs.close()
        mine.settimeout(_HELPER_SECONDS)
        _, fds, _, _ = socket.recv_fds(mine, 16, 1)
    if not fds:
        raise OSError("the helper sent no socket")
    listener = socket.socket(fileno=fds[0])
    listener.setblocking(False)
    return listener
