"""Seeded stress payloads for the token estimator: the text shapes that tokenize worst.

Agents see more than English prose and Python. Coloured terminal output, CJK and other
scripts, numeric JSON, base64, hashes, minified JavaScript, emoji, URLs and UUIDs all
cost more tokens per character than the text the estimator was first fitted on, and a
budget sized low overflows the window. :func:`stress_payloads` builds a deterministic
set of such payloads (plus English prose, code and logs as controls) from small word
lists and grammars written here, so the estimator's promise (not below the exact count
on at least 99% of payloads, per family) can be checked on them.

Everything derives from one ``random.Random(seed)``; the same seed gives the same texts
on every platform and Python version.
"""

from __future__ import annotations

import base64
import json
import random
import string
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

DEFAULT_SEED: Final[int] = 20261207
PER_FAMILY: Final[int] = 100
"""Payloads per family by default."""


@dataclass(frozen=True, kw_only=True, slots=True)
class StressPayload:
    """One generated payload and the family it stands for."""

    family: str
    text: str


# ----------------------------------------------------------------------------- words

_ENGLISH = (
    "the of and to in is that for it as was with be by on not he this are or his from at which but have an they you "
    "were her she there been one all we their has would when if so no will each about up out them then some into "
    "time more these two may first any new very after most other over such where through just make only could "
    "request value result file server session token budget window model output error message context build cache "
    "config user agent tool call retry timeout handler queue worker index record field update delete create "
    "return default option parse format check test version install package module function class method"
).split()

# Common characters, most frequent first: real text leans on the head of the list.
_HANZI = (
    "的一是不了人我在有他这中大来上个国到说们为子和你地出道也时年得就那要下以生会自着去之过家学对可她里后小么心多天"
    "而能好都然没日于起还发成事只作当想看文无开手十用主行方又如前所本见经头面公同三已老从动两长知民样现分将外但身些"
    "与高意进把法此实回二理美点月明其种声全工己话儿者向情部正名定女问力机给等几很业最间新什打便位因重被走电四第门相"
    "次东政海口使教西再平真听世气信北少关并内加化由却代军产入先山五太水万市眼体别处总才场师书比住员九笑性通目华报立"
    "马命张活难神数件安表原车白应路期叫死常提感金何更反合放做系计或司利受光王果亲界及今京务制解各任至清物台象记边共"
    "风战干接它许八特觉望直服毛林题建南度统色字请交爱让认算论百吃义科怎元社术结六功指思非流每青管夫连远资队跟带花快"
)
_RARE_HANZI_RANGE: Final = (0x4E00, 0x9FFF)
_HIRAGANA = "あいうえおかきくけこさしすせそたちつてとなにぬねのはひふへほまみむめもやゆよらりるれろわをんがぎぐげござじずぜぞだでどばびぶべぼぱぴぷぺぽゃゅょっ"
_KATAKANA = "アイウエオカキクケコサシスセソタチツテトナニヌネノハヒフヘホマミムメモヤユヨラリルレロワヲンガギグゲゴザジズゼゾダデドバビブベボパピプペポャュョッー"
_JA_PARTICLES = ("は", "が", "を", "に", "で", "と", "の", "も", "から", "まで", "です", "ます", "した", "ない", "する")
_JA_WORDS = (
    "こと",
    "これ",
    "それ",
    "ため",
    "よう",
    "もの",
    "ある",
    "いる",
    "なる",
    "できる",
    "ください",
    "しました",
    "されます",
    "サーバー",
    "ファイル",
    "エラー",
    "データ",
    "ユーザー",
    "テスト",
    "コード",
    "メッセージ",
    "リクエスト",
    "システム",
    "ログ",
    "キャッシュ",
    "モデル",
    "トークン",
    "セッション",
    "バージョン",
    "インストール",
    "ディレクトリ",
    "パス",
)
_HANGUL_COMMON = "이다는에가하고의을를지서사기도로리한자수나인시대어게면해아부요상정일보것있들없내만여주라제우원무개장전연"
_HANGUL_RANGE: Final = (0xAC00, 0xD7A3)
_RUSSIAN = (
    "и в не на я быть он с что а по это она этот к но они мы как из у который то за свой что весь год от так о "
    "для ты же все тот мочь вы человек такой его сказать только или ещё бы себя один как уже до время если сам "
    "когда другой вот говорить наш мой знать стать при чтобы дело жизнь кто первый очень два день её новый рука "
    "даже во со раз где там под можно ну какой после их работа без самый потом надо хотеть ли слово идти большой "
    "должен место иметь ничто файл сервер ошибка запрос ответ строка значение функция модуль пользователь"
).split()
_CYRILLIC_LOWER = "абвгдеёжзийклмнопрстуфхцчшщъыьэюяіїєґў"
_GREEK = "και το της την να που είναι για με στο από τα οι ένα δεν στην των θα σε ως αυτό μια όταν πολύ".split()
_GREEK_LOWER = "αβγδεζηθικλμνξοπρστυφχψωάέήίόύώ"
_ARABIC = "في من على إلى أن هذا التي الذي كان عن مع هذه كل بين قد لا ما هو هي بعد عند حتى ملف خادم خطأ طلب".split()
_ARABIC_LETTERS = "ابتثجحخدذرزسشصضطظعغفقكلمنهوية"
_ARABIC_MARKS = "\u064b\u064c\u064d\u064e\u064f\u0650\u0651\u0652"
_HEBREW = "של את על זה הוא לא עם כל אם גם אני יש היא הם אבל כי או רק מה עוד קובץ שרת שגיאה בקשה".split()
_HEBREW_LETTERS = "אבגדהוזחטיכלמנסעפצקרשת"
_HEBREW_FINALS = {"כ": "ך", "מ": "ם", "נ": "ן", "פ": "ף", "צ": "ץ"}
_HINDI = "है के में की और को से यह का एक हैं पर भी नहीं था कि इस लिए तो हो गया कर फ़ाइल सर्वर त्रुटि अनुरोध".split()
_DEVANAGARI_CONSONANTS = "कखगघचछजझटठडढणतथदधनपफबभमयरलवशषसह"
_DEVANAGARI_SIGNS = ("", "ा", "ि", "ी", "ु", "ू", "े", "ै", "ो", "ौ", "ं", "्")


def _sentence(rng: random.Random, words: list[str] | tuple[str, ...], low: int, high: int, end: str = ".") -> str:
    chosen = " ".join(rng.choice(words) for _ in range(rng.randint(low, high)))
    return chosen[:1].upper() + chosen[1:] + end


def _pseudo_word(rng: random.Random, letters: str, low: int = 2, high: int = 9) -> str:
    return "".join(rng.choice(letters) for _ in range(rng.randint(low, high)))


def _paragraphs(rng: random.Random, make: Callable[[], str], sentences: int) -> str:
    parts = []
    for _ in range(sentences):
        parts.append(make())
        parts.append(rng.choice((" ", " ", "\n", "\n\n")))
    return "".join(parts).strip()


def _length(rng: random.Random) -> int:
    """A size class: short messages, paragraphs and whole tool outputs alike."""
    return rng.choice((1, 1, 2, 3, 5, 8, 13, 21, 40))


# -------------------------------------------------------------------------- families


def _ansi_words(rng: random.Random) -> str:
    colours = ("31", "32", "33", "34", "35", "36", "1;31", "1;32", "01;34", "01;32", "38;5;208", "38;2;255;95;0", "2", "1", "4")
    resets = ("\x1b[0m", "\x1b[m", "\x1b[39m", "\x1b[0m\x1b[K")
    short = [w for w in _ENGLISH if len(w) <= 5] + ["ok", "E", "F", ".", "PASS", "FAIL", "WARN", "+", "-", "src", "bin", "lib"]
    lines = []
    for _ in range(_length(rng) * 2):
        shape = rng.random()
        if shape < 0.3:  # ls --color
            line = "  ".join(f"\x1b[{rng.choice(colours)}m{rng.choice(short)}{resets[0]}" for _ in range(rng.randint(1, 8)))
        elif shape < 0.6:  # test runner status
            status = rng.choice(("PASSED", "FAILED", "ok", "ERROR", "SKIPPED"))
            line = f"tests/{rng.choice(short)}.py::{rng.choice(short)} \x1b[{rng.choice(colours)}m{status}{rng.choice(resets)}"
        elif shape < 0.8:  # coloured diff
            sign = rng.choice("+- ")
            words = " ".join(rng.choice(short) for _ in range(rng.randint(1, 6)))
            line = f"\x1b[{rng.choice(('31', '32', '36'))}m{sign}{words}{rng.choice(resets)}"
        else:  # every word coloured
            line = " ".join(
                f"\x1b[{rng.choice(colours)}m{rng.choice(short)}{rng.choice(resets)}" for _ in range(rng.randint(2, 10))
            )
        lines.append(line)
    return "\n".join(lines)


def _hanzi(rng: random.Random, n: int) -> str:
    low, high = _RARE_HANZI_RANGE
    return "".join(chr(rng.randint(low, high)) if rng.random() < 0.08 else rng.choice(_HANZI) for _ in range(n))


def _chinese(rng: random.Random) -> str:
    def sentence() -> str:
        clauses = [_hanzi(rng, rng.randint(2, 14)) for _ in range(rng.randint(1, 4))]
        return "，".join(clauses) + rng.choice("。。！？；")

    return _paragraphs(rng, sentence, _length(rng))


def _japanese(rng: random.Random) -> str:
    def word() -> str:
        pick = rng.random()
        if pick < 0.3:
            return _hanzi(rng, rng.randint(1, 3))
        if pick < 0.5:
            return rng.choice(_JA_WORDS)
        if pick < 0.75:
            return rng.choice(_JA_PARTICLES)
        if pick < 0.9:  # made-up loanwords and names
            return "".join(rng.choice(_KATAKANA) for _ in range(rng.randint(2, 6)))
        return "".join(rng.choice(_HIRAGANA) for _ in range(rng.randint(1, 4)))

    def sentence() -> str:
        return "".join(word() for _ in range(rng.randint(3, 16))) + rng.choice("。。、！")

    return _paragraphs(rng, sentence, _length(rng))


def _korean(rng: random.Random) -> str:
    low, high = _HANGUL_RANGE

    def word() -> str:
        return "".join(
            chr(rng.randint(low, high)) if rng.random() < 0.06 else rng.choice(_HANGUL_COMMON) for _ in range(rng.randint(1, 5))
        )

    def sentence() -> str:
        return " ".join(word() for _ in range(rng.randint(2, 10))) + rng.choice(("다.", "요.", "?", "."))

    return _paragraphs(rng, sentence, _length(rng))


def _cyrillic(rng: random.Random) -> str:
    def word() -> str:
        pick = rng.random()
        if pick < 0.7:
            return rng.choice(_RUSSIAN)
        if pick < 0.95:
            return _pseudo_word(rng, _CYRILLIC_LOWER)
        return _pseudo_word(rng, _CYRILLIC_LOWER).upper()

    def sentence() -> str:
        text = " ".join(word() for _ in range(rng.randint(2, 14)))
        return text[:1].upper() + text[1:] + rng.choice(".,!?:")

    return _paragraphs(rng, sentence, _length(rng))


def _script_family(
    words: tuple[str, ...] | list[str], make_pseudo: Callable[[random.Random], str]
) -> Callable[[random.Random], str]:
    def generate(rng: random.Random) -> str:
        def sentence() -> str:
            chosen = [rng.choice(words) if rng.random() < 0.7 else make_pseudo(rng) for _ in range(rng.randint(2, 14))]
            return " ".join(chosen) + rng.choice((".", ".", "،", "?", "।", ":"))

        return _paragraphs(rng, sentence, _length(rng))

    return generate


def _arabic_pseudo(rng: random.Random) -> str:
    letters = [rng.choice(_ARABIC_LETTERS) for _ in range(rng.randint(2, 7))]
    if rng.random() < 0.3:  # vocalised text carries diacritics
        letters = [c + (rng.choice(_ARABIC_MARKS) if rng.random() < 0.6 else "") for c in letters]
    return "".join(letters)


def _hebrew_pseudo(rng: random.Random) -> str:
    word = _pseudo_word(rng, _HEBREW_LETTERS)
    return word[:-1] + _HEBREW_FINALS.get(word[-1], word[-1])  # final forms end a word, as in real text


def _devanagari_pseudo(rng: random.Random) -> str:
    return "".join(rng.choice(_DEVANAGARI_CONSONANTS) + rng.choice(_DEVANAGARI_SIGNS) for _ in range(rng.randint(1, 4)))


def _number(rng: random.Random) -> int | float:
    shape = rng.random()
    if shape < 0.3:
        return rng.randint(-1000, 100_000)
    if shape < 0.45:
        return rng.randint(-(10**12), 10**15)
    if shape < 0.75:
        return round(rng.uniform(-1000, 1000), rng.randint(1, 6))
    if shape < 0.9:
        return rng.random()
    return rng.uniform(-1, 1) * 10 ** rng.randint(-12, 12)


def _numeric_json(rng: random.Random) -> str:
    size = _length(rng) * 4
    shape = rng.random()
    value: object
    if shape < 0.3:
        value = [_number(rng) for _ in range(size)]
    elif shape < 0.5:
        width = rng.randint(2, 8)
        value = [[_number(rng) for _ in range(width)] for _ in range(max(1, size // width))]
    elif shape < 0.8:
        keys = rng.sample(
            ("x", "y", "z", "t", "id", "ts", "v", "lat", "lon", "p50", "p99", "n", "min", "max", "mean"), rng.randint(2, 6)
        )
        value = [{k: _number(rng) for k in keys} for _ in range(max(1, size // len(keys)))]
    else:
        value = {"series": {str(rng.randint(0, 10**6)): _number(rng) for _ in range(size)}}
    layout = rng.choice((None, None, 2, "compact"))
    if layout == "compact":
        return json.dumps(value, separators=(",", ":"))
    return json.dumps(value, indent=layout)


def _base64(rng: random.Random) -> str:
    blob = rng.randbytes(rng.choice((12, 32, 64, 200, 700, 2000, 5000)))
    shape = rng.random()
    if shape < 0.35:
        return base64.b64encode(blob).decode()
    if shape < 0.6:
        return base64.encodebytes(blob).decode()
    if shape < 0.8:
        return f"data:image/{rng.choice(('png', 'jpeg', 'webp'))};base64,{base64.b64encode(blob).decode()}"
    parts = (base64.urlsafe_b64encode(rng.randbytes(n)).decode().rstrip("=") for n in (24, rng.randint(40, 400), 32))
    return "Authorization: Bearer " + ".".join(parts)


def _hex_hashes(rng: random.Random) -> str:
    lines = []
    for _ in range(_length(rng) * 2):
        shape = rng.random()
        digest = rng.randbytes(rng.choice((16, 20, 32))).hex()
        if shape < 0.4:
            lines.append(f"{digest}  {rng.choice(_ENGLISH)}/{rng.choice(_ENGLISH)}.{rng.choice(('py', 'tar.gz', 'whl', 'json'))}")
        elif shape < 0.7:
            lines.append(f"{digest[: rng.choice((7, 8, 12))]} {_sentence(rng, _ENGLISH, 2, 8, '')}")
        else:
            lines.append(("sha256:" if rng.random() < 0.5 else "") + digest)
    return "\n".join(lines)


def _identifier(rng: random.Random) -> str:
    if rng.random() < 0.6:
        return rng.choice(string.ascii_letters + "_$") + "".join(
            rng.choices(string.ascii_letters + string.digits, k=rng.randint(0, 2))
        )
    return rng.choice(_ENGLISH) + rng.choice(("", "Id", "Fn", "List", "_"))


def _js_expression(rng: random.Random, depth: int = 0) -> str:
    pick = rng.random()
    if depth > 2 or pick < 0.3:
        return rng.choice((_identifier(rng), str(rng.randint(0, 999)), f'"{rng.choice(_ENGLISH)}"', "!0", "!1", "void 0", "null"))
    if pick < 0.5:
        return f"{_js_expression(rng, depth + 1)}{rng.choice(('+', '-', '*', '===', '!==', '&&', '||', '<', '>=', '|', '&'))}{_js_expression(rng, depth + 1)}"
    if pick < 0.7:
        args = ",".join(_js_expression(rng, depth + 1) for _ in range(rng.randint(0, 3)))
        return f"{_identifier(rng)}.{_identifier(rng)}({args})"
    if pick < 0.85:
        return f"{_js_expression(rng, depth + 1)}?{_js_expression(rng, depth + 1)}:{_js_expression(rng, depth + 1)}"
    return "{" + ",".join(f"{_identifier(rng)}:{_js_expression(rng, depth + 1)}" for _ in range(rng.randint(1, 3))) + "}"


def _js_statement(rng: random.Random, depth: int = 0) -> str:
    pick = rng.random()
    if depth > 1 or pick < 0.4:
        return f"{rng.choice(('var ', 'let ', 'const ', ''))}{_identifier(rng)}={_js_expression(rng)}"
    if pick < 0.6:
        return f"if({_js_expression(rng)}){{{';'.join(_js_statement(rng, depth + 1) for _ in range(rng.randint(1, 3)))}}}"
    if pick < 0.8:
        params = ",".join(_identifier(rng) for _ in range(rng.randint(0, 3)))
        body = ";".join(_js_statement(rng, depth + 1) for _ in range(rng.randint(1, 4)))
        return f"function {_identifier(rng)}({params}){{{body};return {_js_expression(rng)}}}"
    return f"for(var {_identifier(rng)}=0;i<{_js_expression(rng)};i++){{{_js_statement(rng, depth + 1)}}}"


def _minified_js(rng: random.Random) -> str:
    body = ";".join(_js_statement(rng) for _ in range(_length(rng) * 3))
    return rng.choice(("", "!function(e,t){", '"use strict";')) + body + rng.choice(("", "}(window,document);"))


_EMOJI_RANGES: Final = ((0x1F300, 0x1F5FF), (0x1F600, 0x1F64F), (0x1F680, 0x1F6FF), (0x1F900, 0x1F9FF))
_ZWJ_SEQUENCES: Final = (
    "\U0001f468\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466",
    "\U0001f469\u200d\U0001f4bb",
    "\U0001f3f3\ufe0f\u200d\U0001f308",
    "\U0001f9d1\u200d\U0001f91d\u200d\U0001f9d1",
    "\U0001f441\ufe0f\u200d\U0001f5e8\ufe0f",
    "\U0001f468\U0001f3fd\u200d\U0001f680",
    "\u2764\ufe0f\u200d\U0001f525",
)
_FLAGS: Final = ("US", "GB", "FR", "DE", "JP", "BR", "IN", "UA", "KR", "ZA", "MX", "SE", "NG", "CA", "AU")


def _one_emoji(rng: random.Random) -> str:
    pick = rng.random()
    if pick < 0.5:
        low, high = rng.choice(_EMOJI_RANGES)
        return chr(rng.randint(low, high))
    if pick < 0.65:  # skin tone
        return rng.choice("\U0001f44d\U0001f44b\U0001f64f\U0001f44f\U0001f4aa") + chr(rng.randint(0x1F3FB, 0x1F3FF))
    if pick < 0.8:
        return rng.choice(_ZWJ_SEQUENCES)
    if pick < 0.92:  # flag: two regional indicators
        return "".join(chr(0x1F1E6 + ord(c) - ord("A")) for c in rng.choice(_FLAGS))
    return rng.choice("0123456789#") + "\ufe0f\u20e3"  # keycap


def _emoji(rng: random.Random) -> str:
    shape = rng.random()
    n = _length(rng) * 4
    if shape < 0.4:
        return "".join(_one_emoji(rng) for _ in range(n))
    if shape < 0.7:
        return " ".join(_one_emoji(rng) for _ in range(n))
    return _paragraphs(
        rng,
        lambda: _sentence(rng, _ENGLISH, 2, 8, "") + " " + "".join(_one_emoji(rng) for _ in range(rng.randint(1, 3))),
        n // 3 + 1,
    )


def _mixed_scripts(rng: random.Random) -> str:
    pieces: list[Callable[[], str]] = [
        lambda: " ".join(rng.choice(_ENGLISH) for _ in range(rng.randint(1, 6))),
        lambda: _hanzi(rng, rng.randint(1, 8)),
        lambda: " ".join(rng.choice(_RUSSIAN) for _ in range(rng.randint(1, 4))),
        lambda: " ".join(rng.choice(_ARABIC) for _ in range(rng.randint(1, 4))),
        lambda: " ".join(rng.choice(_GREEK) for _ in range(rng.randint(1, 4))),
        lambda: "".join(rng.choice(_KATAKANA) for _ in range(rng.randint(2, 6))),
        lambda: _one_emoji(rng),
        lambda: str(_number(rng)),
    ]
    return _paragraphs(rng, lambda: " ".join(rng.choice(pieces)() for _ in range(rng.randint(2, 8))) + ".", _length(rng))


def _url(rng: random.Random) -> str:
    host = ".".join(
        [rng.choice(("www", "api", "cdn", "docs", rng.choice(_ENGLISH)))]
        + [rng.choice(_ENGLISH), rng.choice(("com", "io", "org", "dev", "co.uk"))]
    )
    path = "/".join(
        rng.choice((rng.choice(_ENGLISH), str(rng.randint(0, 99999)), uuid.UUID(int=rng.getrandbits(128)).hex[:12]))
        for _ in range(rng.randint(0, 5))
    )
    url = f"https://{host}/{path}"
    if rng.random() < 0.5:
        query = "&".join(
            f"{rng.choice(('utm_source', 'q', 'id', 'page', 'ref', 'sig', 'token'))}="
            + rng.choice(
                (
                    rng.choice(_ENGLISH),
                    str(rng.randint(0, 10**6)),
                    "%20".join(rng.sample(_ENGLISH, 2)),
                    base64.urlsafe_b64encode(rng.randbytes(12)).decode(),
                )
            )
            for _ in range(rng.randint(1, 5))
        )
        url += "?" + query
    return url


def _urls(rng: random.Random) -> str:
    shape = rng.random()
    urls = [_url(rng) for _ in range(_length(rng) * 2)]
    if shape < 0.4:
        return "\n".join(urls)
    if shape < 0.7:
        return json.dumps({"links": urls}, indent=rng.choice((None, 2)))
    return " ".join(f"[{rng.choice(_ENGLISH)}]({u})" for u in urls)


def _uuid_lists(rng: random.Random) -> str:
    ids = [str(uuid.UUID(int=rng.getrandbits(128), version=4)) for _ in range(_length(rng) * 3)]
    shape = rng.random()
    if shape < 0.3:
        return "\n".join(ids)
    if shape < 0.6:
        return json.dumps(ids, indent=rng.choice((None, 2)))
    if shape < 0.8:
        return json.dumps([{"id": i, "parent": rng.choice(ids), "name": rng.choice(_ENGLISH)} for i in ids])
    return "\n".join(f"{i.upper() if rng.random() < 0.3 else i}\t{rng.choice(_ENGLISH)}" for i in ids)


def _english_prose(rng: random.Random) -> str:
    return _paragraphs(rng, lambda: _sentence(rng, _ENGLISH, 4, 22, rng.choice(".?!:")), _length(rng) * 2)


def _python_code(rng: random.Random) -> str:
    lines = []
    for _ in range(_length(rng)):
        name = "_".join(rng.sample(_ENGLISH, 2))
        args = ", ".join(rng.sample(_ENGLISH, rng.randint(0, 3)))
        lines.append(f"def {name}({args}) -> {rng.choice(('int', 'str', 'None', 'list[str]', 'dict[str, Any]'))}:")
        lines.append(f'    """{_sentence(rng, _ENGLISH, 3, 10)}"""')
        for _ in range(rng.randint(1, 6)):
            target, source = rng.choice(_ENGLISH), rng.choice(_ENGLISH)
            lines.append(
                rng.choice(
                    (
                        f"    {target}_{source} = {source}.get({target!r}, {rng.randint(0, 100)})",
                        f'    if {target} is None:\n        raise ValueError(f"{{{source}!r}} has no {target}")',
                        f"    for {target} in sorted({source}):\n        yield {target}",
                        f"    return [{target} for {target} in {source} if {target}]",
                    )
                )
            )
        lines.append("")
    return "\n".join(lines)


def _logs(rng: random.Random) -> str:
    lines = []
    for _ in range(_length(rng) * 3):
        stamp = f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}.{rng.randint(0, 999):03d}Z"
        level = rng.choice(("DEBUG", "INFO", "INFO", "WARNING", "ERROR"))
        lines.append(
            f"{stamp} {level:7} [{rng.choice(_ENGLISH)}.{rng.choice(_ENGLISH)}] {_sentence(rng, _ENGLISH, 2, 12, '')} took {rng.randint(0, 9999)}ms"
        )
    return "\n".join(lines)


FAMILIES: Final[dict[str, Callable[[random.Random], str]]] = {
    "ansi": _ansi_words,
    "chinese": _chinese,
    "japanese": _japanese,
    "korean": _korean,
    "cyrillic": _cyrillic,
    "greek": _script_family(_GREEK, lambda rng: _pseudo_word(rng, _GREEK_LOWER)),
    "arabic": _script_family(_ARABIC, _arabic_pseudo),
    "hebrew": _script_family(_HEBREW, _hebrew_pseudo),
    "devanagari": _script_family(_HINDI, _devanagari_pseudo),
    "numeric-json": _numeric_json,
    "base64": _base64,
    "hex-hashes": _hex_hashes,
    "minified-js": _minified_js,
    "emoji": _emoji,
    "mixed-scripts": _mixed_scripts,
    "urls": _urls,
    "uuids": _uuid_lists,
    "english-prose": _english_prose,
    "python-code": _python_code,
    "logs": _logs,
}
"""Every family, by name: stress shapes first, the English controls last."""

CONTROLS: Final[tuple[str, ...]] = ("english-prose", "python-code", "logs")
"""Families of ordinary text, there to show the stress costs do not inflate it."""


def stress_payloads(
    *, seed: int = DEFAULT_SEED, per_family: int = PER_FAMILY, families: tuple[str, ...] | None = None
) -> list[StressPayload]:
    """``per_family`` payloads of each family (all by default), the same for the same seed.

    Each family draws from its own generator seeded from ``seed`` and the family name,
    so adding a family or changing one leaves the others' texts as they were.
    """
    chosen = tuple(FAMILIES) if families is None else families
    unknown = [name for name in chosen if name not in FAMILIES]
    if unknown:
        raise ValueError(f"unknown stress families {unknown}; choose from {sorted(FAMILIES)}")
    payloads: list[StressPayload] = []
    for name in chosen:
        rng = random.Random(f"{seed}:{name}")
        make = FAMILIES[name]
        payloads.extend(StressPayload(family=name, text=make(rng)) for _ in range(per_family))
    return payloads
