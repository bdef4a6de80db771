"""Generate ``src/contextwright/assembly/lookalikes.json``: which characters can pass for parts of an envelope tag.

Usage (needs the dev extra's ``confusable-homoglyphs``, which ships Unicode's confusables data)::

    python scripts/gen_lookalikes.py

Envelope escaping must recognise ``<cw-data`` and ``</cw-data`` however they are spelled:
in fullwidth or mathematical letters, in Cyrillic or Greek look-alikes, with any dash or
slash look-alike, with invisible characters or whitespace in between. The core imports
only the standard library, so the knowledge is written once, here, as a small table of
character classes that the escaper compiles into one regular expression. A character
belongs to a class when, after NFKC and case folding, it is the class's character or one
of its confusables (Unicode's confusables data, plus a few seeds listed below that the data
leaves out). Invisible characters come from the Default_Ignorable_Code_Point property,
the format, combining-mark and control categories, and whitespace. Each character lands in
at most one class, which keeps the escaper's matching linear.
"""

from __future__ import annotations

import json
import sys
import unicodedata
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "src" / "contextwright" / "assembly" / "lookalikes.json"

TARGETS = "</-_cwdat"

# Look-alikes the confusables data does not list, kept from the escaper's earlier hand list
# and the angle brackets and dashes that fold to them.
SEEDS = {
    "<": "\u3008\u27e8\u2039\u02c2\u1438\u276c\u276e\u29fc\u2329\ufe3f\u227a\u2264",
    "-": "\u2010\u2011\u2012\u2013\u2014\u2015\u2212\u2043\ufe63\uff0d\u2e3a\u2e3b\u30fc",
    "/": "\uff0f\u2044\u2215\u2571\u29f8\u29f6\u2afd\u27cb",
    "_": "\uff3f\u2017",
}

# Default_Ignorable_Code_Point ranges from Unicode's DerivedCoreProperties.txt.
DEFAULT_IGNORABLE = [
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x061C, 0x061C),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x206F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
]


def ignorable(ch: str) -> bool:
    """Invisible to a reader: default-ignorable, format, combining mark, control or whitespace."""
    cp = ord(ch)
    if any(lo <= cp <= hi for lo, hi in DEFAULT_IGNORABLE):
        return True
    return unicodedata.category(ch) in ("Cf", "Mn", "Me", "Cc", "Zs", "Zl", "Zp") or ch.isspace()


def load_confusables() -> dict[str, list[str]]:
    import confusable_homoglyphs

    path = Path(confusable_homoglyphs.__file__).parent / "confusables.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    return {key: [entry["c"] for entry in entries] for key, entries in data.items()}


def prototypes(confusables: dict[str, list[str]]) -> dict[str, str]:
    """Character → the target it can pass for (single characters only)."""
    proto: dict[str, str] = {}
    for target in TARGETS:
        members = set(SEEDS.get(target, ""))
        for key in {target, target.upper()}:
            members.update(c for c in confusables.get(key, []) if len(c) == 1)
        for member in sorted(members):
            proto.setdefault(member, target)
    for target in TARGETS:
        proto[target] = target
    return proto


def fold(ch: str, proto: dict[str, str]) -> str | None:
    """The target string ``ch`` passes for, or None."""
    if ch in proto:
        return proto[ch]
    text = unicodedata.normalize("NFKC", ch).casefold()
    out = []
    for c in text:
        if ignorable(c):
            continue
        mapped = proto.get(c) or proto.get(unicodedata.normalize("NFKC", c).casefold())
        if mapped is None:
            return None
        out.append(mapped)
    return "".join(out) or None


def build_table() -> dict[str, object]:
    """The table as it is written to ``lookalikes.json``."""
    proto = prototypes(load_confusables())
    classes: dict[str, list[int]] = {t: [] for t in TARGETS}
    classes["ignorable"] = []
    multi: dict[str, list[int]] = {}
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        ch = chr(cp)
        if ignorable(ch) and ch not in proto:
            classes["ignorable"].append(cp)
            continue
        folded = fold(ch, proto)
        if folded is None:
            continue
        if len(folded) == 1:
            classes[folded].append(cp)
        else:
            multi.setdefault(folded, []).append(cp)
    return {
        "unicode_version": unicodedata.unidata_version,
        "source": "Unicode confusables (confusable-homoglyphs package data), NFKC, Default_Ignorable_Code_Point",
        "classes": {name: _ranges(cps) for name, cps in classes.items()},
        "sequences": {text: _ranges(cps) for text, cps in sorted(multi.items())},
    }


def main() -> int:
    table = build_table()
    OUT.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    classes: dict[str, list[list[int]]] = table["classes"]  # type: ignore[assignment]
    sizes = ", ".join(f"{k}: {sum(hi - lo + 1 for lo, hi in v)}" for k, v in classes.items())
    print(f"wrote {OUT} ({sizes}; multi-character folds: {', '.join(table['sequences'])})")  # type: ignore[arg-type]
    return 0


def _ranges(cps: list[int]) -> list[list[int]]:
    ranges: list[list[int]] = []
    for cp in sorted(cps):
        if ranges and ranges[-1][1] == cp - 1:
            ranges[-1][1] = cp
        else:
            ranges.append([cp, cp])
    return ranges


if __name__ == "__main__":
    sys.exit(main())
