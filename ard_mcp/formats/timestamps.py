"""Every timestamp the registry reads or writes goes through here: one parser, one spelling.

A date-time is accepted only when it can be represented after conversion to UTC. Python's `datetime` holds
years 1 to 9999 in any zone, but `9999-12-31T23:59:59-14:00` or `0001-01-01T00:00:00+14:00` fall outside
that range in UTC, and converting them raises `OverflowError` where every caller expected `ValueError`:
one such `metadata.expiresAt` once failed every read of a store for good (issue #30). Here that is a
`ValueError` like any other bad value, so a field's validator turns it into the field's 400.

Values read back from storage go through `stored_timestamp`, which never raises: a value written by an
older version or edited by hand counts as no timestamp, so it cannot make a read fail.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time

EXAMPLE = "2026-05-28T12:00:00Z"
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_MAX_LENGTH = 64  # the longest ISO 8601 date-time is 38 characters; longer input is not one


def parse_timestamp(value: str, *, naive_is_utc: bool = False) -> datetime:
    """An ISO 8601 / RFC 3339 date-time as an aware UTC datetime; ValueError for anything else.

    A timestamp without an offset is ambiguous, so it is refused unless `naive_is_utc` (for formats whose
    publishers commonly leave it out). A lower-case `z` or `t` is RFC 3339's own (§5.6 allows either case)."""
    if not isinstance(value, str) or len(value) > _MAX_LENGTH:
        raise ValueError(f"must be an ISO 8601 date-time, e.g. {EXAMPLE}")
    text = value.strip()
    if text[10:11] == "t":
        text = text[:10] + "T" + text[11:]
    if text.endswith("z"):
        text = text[:-1] + "Z"
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"must be an ISO 8601 date-time, e.g. {EXAMPLE}") from None
    if parsed.tzinfo is None:
        if not naive_is_utc:
            raise ValueError("must be an ISO 8601 date-time with a time zone (Z or +HH:MM)")
        return parsed.replace(tzinfo=UTC)
    try:
        return parsed.astimezone(UTC)
    except OverflowError:
        raise ValueError("is outside the range of representable times (0001-01-01 to 9999-12-31 in UTC)") from None


def checked_timestamp(value: str | None) -> str | None:
    """A document's timestamp field as sent, once it parses (a pydantic field validator: Xu's and AIDIP's
    `expires_at`, Xu's `updated_at`)."""
    if value is not None:
        parse_timestamp(value)
    return value


def parse_date_or_timestamp(value: str) -> datetime:
    """A bound such as a listing's `createdAfter`: a date (midnight UTC) or a date-time as `parse_timestamp`."""
    if isinstance(value, str) and _DATE.match(value.strip()):
        try:
            return datetime.combine(date.fromisoformat(value.strip()), time.min, UTC)
        except ValueError:
            raise ValueError("must be an ISO 8601 date such as 2026-01-01") from None
    return parse_timestamp(value)


def stored_timestamp(value: object) -> datetime | None:
    """A timestamp read back from storage, or None when it is not one: stored values never fail a read."""
    if not isinstance(value, str):
        return None
    try:
        return parse_timestamp(value)
    except ValueError:
        return None


def utc_text(moment: datetime, timespec: str = "seconds") -> str:
    """The one spelling the registry writes: RFC 3339 in UTC with a `Z`."""
    return moment.astimezone(UTC).isoformat(timespec=timespec).replace("+00:00", "Z")
