"""Spellings of the addresses no URL may point to (cloud metadata, link-local, the unspecified address),
each with the address a client really connects to.

Shared by every test of the one URL check (`ard_mcp.net.urls`): registration, the fetcher, the crawl,
federation. Each spelling is one a browser (WHATWG URL Standard host parsing) or Python's own URL parsers
read as cloud metadata, a link-local or the unspecified address; before the check only the first was refused.
"""

from __future__ import annotations

METADATA = "169.254.169.254"

SPELLINGS: list[tuple[str, str]] = [
    ("http://169.254.169.254/latest/meta-data/", METADATA),  # the literal, refused before too
    ("http://2852039166/latest/meta-data/", METADATA),  # one decimal number
    ("http://0xa9fea9fe/", METADATA),  # one hexadecimal number
    ("http://0XA9.0xFE.0xa9.0xfe/", METADATA),  # hexadecimal parts, upper case
    ("http://0251.0376.0251.0376/", METADATA),  # octal parts
    ("http://169.254.43518/", METADATA),  # the last part fills the remaining bytes
    ("http://169.16689662/", METADATA),  # ... two of them
    ("http://[::ffff:169.254.169.254]/", METADATA),  # IPv4-mapped IPv6, dotted
    ("http://[::ffff:a9fe:a9fe]/", METADATA),  # IPv4-mapped IPv6, hexadecimal
    ("http://[64:ff9b::a9fe:a9fe]/", METADATA),  # NAT64
    ("http://[::169.254.169.254]/", METADATA),  # IPv4-compatible IPv6 (deprecated), dotted: passed every surface (issue #44)
    ("http://[::a9fe:a9fe]/", METADATA),  # ... hexadecimal
    ("http://169.254.169.254./", METADATA),  # a trailing dot
    ("http://%31%36%39.254.169.254/", METADATA),  # percent-encoded digits
    ("HTTP://169.254.169.254:80/", METADATA),  # upper-case scheme, explicit port
    ("http://user:pass@169.254.169.254/", METADATA),  # credentials in front
    ("http://evil.example\\@169.254.169.254/", METADATA),  # evil.example to a browser, the metadata address to httpx
    ("http://169.254.170.2/v2/credentials", "169.254.170.2"),  # ECS task credentials, link-local too
    ("http://[fd00:ec2::254]/latest/meta-data/", "fd00:ec2::254"),  # AWS's IPv6 metadata address (unique-local)
    ("http://100.100.100.200/latest/meta-data/", "100.100.100.200"),  # Alibaba Cloud's
    ("http://[fe80::1]/agent", "fe80::1"),  # IPv6 link-local
    ("http://[FE80::A9FE:A9FE]/", "fe80::a9fe:a9fe"),
    ("http://metadata.google.internal./computeMetadata/v1/", "metadata.google.internal."),
    ("http://metadata/computeMetadata/v1/", "metadata"),  # GCP's bare name, completed by the search domain (issue #44)
    ("http://instance-data/latest/meta-data/", "instance-data"),  # EC2's name for it
    ("http://0/", "0.0.0.0"),  # the unspecified address, as browsers read `0`: a client reaches its own machine (issue #44)
    ("http://0.0.0.0:8000/mcp", "0.0.0.0"),
    ("http://[::]/", "::"),
]
IDS = [url for url, _ in SPELLINGS]


def points_to(url: str, address: str) -> str:
    """The part of the refusal that names the URL and where it really points."""
    return f"{url} points to {address}"
