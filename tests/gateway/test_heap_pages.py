"""The gateway's process keeps freed heap pages between requests (glibc's allocator settings)."""

from __future__ import annotations

import ctypes
import os
import platform
import subprocess
import sys
import textwrap

import pytest

_GLIBC = platform.libc_ver()[0] == "glibc"
pytestmark = [
    pytest.mark.skipif(not _GLIBC, reason="the heap settings are glibc's; this C library is not"),
    pytest.mark.skipif(
        _GLIBC and not hasattr(ctypes.CDLL(None), "mallinfo2"),
        reason="this glibc predates mallinfo2 (2.33), which the probe reads",
    ),
]

# A 2 MiB string made in a fresh process: where glibc's allocator puts it (mmapped blocks, from mallinfo2).
_PROBE = textwrap.dedent(
    """
    import ctypes, sys
    from contextwright.cli._gateway import keep_heap_pages

    class MallInfo2(ctypes.Structure):
        _fields_ = [(name, ctypes.c_size_t) for name in
                    ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]

    libc = ctypes.CDLL(None)
    libc.mallinfo2.restype = MallInfo2
    applied = keep_heap_pages()
    before = libc.mallinfo2().hblkhd
    body = bytearray(2 << 20)
    mapped = libc.mallinfo2().hblkhd - before
    print(applied, mapped >= len(body))
    """
)


def _probe(env: dict[str, str]) -> tuple[str, str]:
    done = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, check=True)
    applied, mapped = done.stdout.split()
    return applied, mapped


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_") and k != "GLIBC_TUNABLES"}


def test_a_body_sized_block_comes_from_the_kept_heap() -> None:
    # With the settings a 2 MiB block is carved from the heap (kept between requests), not mapped on its own
    # and unmapped when freed, which makes the next request fault its pages in again.
    assert _probe(_clean_env()) == ("True", "False")


def test_the_users_own_allocator_settings_are_left_alone() -> None:
    # glibc's defaults map a 2 MiB block on its own: the probe sees the settings were not applied.
    assert _probe({**_clean_env(), "MALLOC_ARENA_MAX": "2"}) == ("False", "True")
    assert _probe({**_clean_env(), "GLIBC_TUNABLES": "glibc.malloc.arena_max=2"}) == ("False", "True")
