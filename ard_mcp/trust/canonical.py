"""The bytes a trust manifest's signature covers: the manifest without its `signature`, as RFC 8785 JCS.

A detached signature needs both sides to produce the same bytes from the same JSON, whatever order the
publisher wrote the keys in and however the registry stored them. The ai-catalog specification (which ARD
§5 defers to) names the JSON Canonicalization Scheme for that: object members sorted by their UTF-16 code
units, no whitespace, strings escaped as ECMAScript's `JSON.stringify` does, numbers formatted as
ECMAScript's `Number.prototype.toString` formats an IEEE 754 double.

Input is what `json.loads` produces (dict, list, str, int, float, bool, None). Limitations, each following
from JCS working on I-JSON (RFC 7493):

- an int beyond ±2**53 is not exactly representable as a double; it is written as the double nearest to
  it, in ECMAScript form, which is what every JCS implementation that parses into doubles produces (so
  `12345678901234567890` becomes `12345678901234567000`); publishers should send such values as strings;
- NaN and infinities (which `json.loads` accepts as `NaN` / `Infinity`) and strings with unpaired
  surrogates (`"\\ud800"`) are not I-JSON and raise `ValueError`, as does nesting deeper than Python's
  recursion limit.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

SAFE_INTEGER = 2**53  # the largest magnitude below which every integer is an exact double
_SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}
_ESCAPES = {chr(c): _SHORT_ESCAPES.get(chr(c), f"\\u{c:04x}") for c in range(0x20)} | _SHORT_ESCAPES


def canonical_json(value: Any) -> bytes:
    """`value` serialised as RFC 8785 JCS, UTF-8 encoded; `ValueError` for anything that is not I-JSON."""
    out: list[str] = []
    try:
        _write(value, out)
        return "".join(out).encode("utf-8")
    except RecursionError:
        raise ValueError("nested too deeply to canonicalise") from None
    except UnicodeEncodeError:
        raise ValueError("a string holds an unpaired surrogate, which is not I-JSON") from None


def signed_payload(manifest: Mapping[str, Any]) -> bytes:
    """What a trust manifest's detached signature is computed over: every member but `signature`, in JCS."""
    return canonical_json({k: v for k, v in manifest.items() if k != "signature"})


def _write(value: Any, out: list[str]) -> None:
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, str):
        out.append(_string(value))
    elif isinstance(value, int):
        out.append(str(value) if -SAFE_INTEGER <= value <= SAFE_INTEGER else _number(_as_double(value)))
    elif isinstance(value, float):
        out.append(_number(value))
    elif isinstance(value, Mapping):
        out.append("{")
        for i, key in enumerate(sorted(value, key=_utf16_key)):
            if not isinstance(key, str):
                raise ValueError(f"object keys must be strings, not {type(key).__name__}")
            out.append("," if i else "")
            out.append(_string(key))
            out.append(":")
            _write(value[key], out)
        out.append("}")
    elif isinstance(value, list | tuple):
        out.append("[")
        for i, item in enumerate(value):
            out.append("," if i else "")
            _write(item, out)
        out.append("]")
    else:
        raise ValueError(f"{type(value).__name__} is not a JSON value")


def _utf16_key(key: object) -> bytes:
    """JCS sorts member names by their UTF-16 code units: big-endian UTF-16 bytes compare the same way
    (and differ from code point order above U+FFFF, where surrogates sort below U+E000-U+FFFF)."""
    return key.encode("utf-16-be", "surrogatepass") if isinstance(key, str) else b""


def _string(text: str) -> str:
    """A JSON string as `JSON.stringify` writes it: only `"`, `\\` and controls below U+0020 escaped."""
    text.encode("utf-8")  # raises UnicodeEncodeError for an unpaired surrogate
    return '"' + "".join(_ESCAPES.get(ch, ch) for ch in text) + '"'


def _as_double(value: int) -> float:
    try:
        return float(value)
    except OverflowError:
        raise ValueError(f"an integer of {value.bit_length()} bits is beyond the range of an IEEE 754 double") from None


def _number(value: float) -> str:
    """ECMAScript's Number::toString for a double (ECMA-262 §6.1.6.1.20): the shortest digits that read back
    as the same double (Python's `repr` finds the same ones), placed by the exponent's size."""
    if not math.isfinite(value):
        raise ValueError(f"{value} is not a JSON number (I-JSON has no NaN or infinities)")
    if value == 0:
        return "0"  # -0 too
    _, digit_tuple, exponent = Decimal(repr(abs(value))).as_tuple()
    digits = "".join(map(str, digit_tuple)).rstrip("0")
    assert isinstance(exponent, int)  # finite, so never 'n' / 'N' / 'F'
    k = len(digits)
    n = len(digit_tuple) + exponent  # the decimal point sits after the n-th digit
    if k <= n <= 21:
        text = digits + "0" * (n - k)
    elif 0 < n <= 21:
        text = f"{digits[:n]}.{digits[n:]}"
    elif -6 < n <= 0:
        text = "0." + "0" * -n + digits
    else:
        mantissa = digits[0] + (f".{digits[1:]}" if k > 1 else "")
        text = f"{mantissa}e{'+' if n - 1 >= 0 else '-'}{abs(n - 1)}"
    return ("-" if value < 0 else "") + text
