"""Recognise binary input, so it is described instead of printed.

A command that dumps an image, an archive or a compiled object into a pipe produces
bytes no model can read: decoded as text they become replacement characters and
control codes that cost tokens and say nothing. What helps is its size and what it
probably is, from the file signature at its start.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_SNIFF_BYTES = 8_192
_CONTROL_SHARE = 0.1
# Test runners print names and values that hold a NUL now and then; binary data without a
# known signature (UTF-16 text without a BOM, packed records) holds NULs by the hundred.
_NUL_SHARE = 0.02
_NUL_FEW = 4
# Control bytes that text legitimately holds: tab, newline, form feed, carriage
# return, backspace (overstrike), escape (colours).
_TEXT_CONTROLS = frozenset(b"\t\n\x0c\r\x08\x1b")

_SIGNATURES: tuple[tuple[int, bytes, str], ...] = (
    (0, b"\x89PNG\r\n\x1a\n", "PNG image"),
    (0, b"\xff\xd8\xff", "JPEG image"),
    (0, b"GIF87a", "GIF image"),
    (0, b"GIF89a", "GIF image"),
    (0, b"%PDF-", "PDF document"),
    (0, b"PK\x03\x04", "ZIP archive (also jar, wheel, docx, xlsx)"),
    (0, b"\x1f\x8b", "gzip data"),
    (0, b"BZh", "bzip2 data"),
    (0, b"\xfd7zXZ\x00", "xz data"),
    (0, b"\x28\xb5\x2f\xfd", "zstd data"),
    (0, b"7z\xbc\xaf\x27\x1c", "7-Zip archive"),
    (257, b"ustar", "tar archive"),
    (0, b"\x7fELF", "ELF executable or library"),
    (0, b"MZ", "Windows executable (PE)"),
    (0, b"\xcf\xfa\xed\xfe", "Mach-O executable"),
    (0, b"\xca\xfe\xba\xbe", "Java class file or Mach-O universal binary"),
    (0, b"\x00asm", "WebAssembly module"),
    (0, b"SQLite format 3\x00", "SQLite database"),
    (0, b"RIFF", "RIFF media (WAV, AVI, WebP)"),
    (0, b"OggS", "Ogg media"),
    (0, b"ID3", "MP3 audio"),
    (4, b"ftyp", "MP4/QuickTime media"),
    (0, b"\x00\x00\x01\x00", "Windows icon"),
    (0, b"wOFF", "WOFF font"),
    (0, b"wOF2", "WOFF2 font"),
    (0, b"PAR1", "Parquet file"),
)


@dataclass(frozen=True, kw_only=True, slots=True)
class BinaryInput:
    """Bytes that are not text: how many, and what they look like."""

    size: int
    """Length in bytes."""
    guess: str
    """What the bytes probably are ("PNG image"), or "unrecognised binary data"."""

    def describe(self, pointer: str | None = None) -> str:
        """One marker line that stands for the bytes (and names where they are kept)."""
        saved = f"; full output: {pointer}" if pointer else ""
        return f"[... binary input not shown: {self.size:,} bytes, {self.guess}{saved} ...]"


def sniff_binary(data: bytes) -> BinaryInput | None:
    """Describe ``data`` if it is binary (a known signature, many NUL or control bytes); else None."""
    for offset, magic, name in _SIGNATURES:
        if data[offset : offset + len(magic)] == magic and _looks_binary(data, lenient=True):
            return BinaryInput(size=len(data), guess=name)
    if _looks_binary(data, lenient=False):
        return BinaryInput(size=len(data), guess="unrecognised binary data")
    return None


def _looks_binary(data: bytes, *, lenient: bool) -> bool:
    head = data[:_SNIFF_BYTES]
    if not head:
        return False
    nuls = head.count(b"\x00")
    if nuls > max(_NUL_FEW, len(head) * _NUL_SHARE):
        return True
    controls = sum(1 for byte in head if byte < 0x20 and byte not in _TEXT_CONTROLS) - nuls
    # A known signature at the start needs less evidence: "MZ" or "ID3" can open text.
    share = controls / len(head)
    if lenient:
        return share > 0.01 or not _decodes(head)
    return share > _CONTROL_SHARE or (not _decodes(head) and share > 0.01)


_SHOWN_CONTROLS = re.compile(r"[\x00-\x07\x0b\x0e-\x1a\x1c-\x1f\x7f]")


def escape_controls(text: str) -> str:
    """``text`` with the control characters a terminal would act on written as ``\\xNN``.

    Text that holds a few NULs or other stray controls is still text: it is compressed
    like any other, but printed with those characters visible instead of sent raw.
    Tab, newline, carriage return, form feed, backspace and escape are left to the
    normaliser, which reads them as the terminal would.
    """
    if not _SHOWN_CONTROLS.search(text):
        return text
    return _SHOWN_CONTROLS.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def _decodes(head: bytes) -> bool:
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        # A multi-byte character cut at the sniff boundary is still text.
        return exc.start >= len(head) - 3
    return True
