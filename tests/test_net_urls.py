"""The one URL check (`ard_mcp.net.urls`): hosts read as the WHATWG URL Standard reads them, then judged.

Every spelling of cloud metadata in `tests.url_spellings` is refused with the address it really is; what
the registry serves today (public names, loopback and private addresses for a private registry, IDNs)
still passes, in its canonical form; what browsers cannot read (the URL Standard's IPv4 parser fails on a
part over 255, a number over 32 bits, five parts), what the registry's HTTP client cannot (a host IDNA 2008
refuses) and what is not http(s) are refused as such.
"""

from __future__ import annotations

import ipaddress
import re

import pytest

from ard_mcp.net.urls import RefusedUrl, address_of, check_url, refused_kind, unreadable
from tests.url_spellings import IDS, SPELLINGS, points_to


@pytest.mark.parametrize(("url", "address"), SPELLINGS, ids=IDS)
def test_every_spelling_of_a_refused_address_is_refused_naming_the_address(url: str, address: str) -> None:
    with pytest.raises(RefusedUrl) as caught:
        check_url(url, "entry.url")
    assert str(caught.value).startswith(f"entry.url: {points_to(url, address)}")
    assert caught.value.points_to == address


@pytest.mark.parametrize(
    ("url", "host", "address"),
    [
        ("https://agents.example.com/mcp", "agents.example.com", None),
        ("https://Agents.Example.COM./mcp", "agents.example.com.", None),
        ("https://münchen.example/", "xn--mnchen-3ya.example", None),
        ("http://localhost:8080/mcp", "localhost", None),  # local development: stored, not fetched by default
        ("http://127.1/", "127.0.0.1", "127.0.0.1"),
        ("http://0x7f000001/", "127.0.0.1", "127.0.0.1"),
        ("http://10.0.0.5:8443/", "10.0.0.5", "10.0.0.5"),
        ("http://[::1]/", "::1", "::1"),
        ("http://93.184.216.34/", "93.184.216.34", "93.184.216.34"),
        ("http://169.255.169.254/", "169.255.169.254", "169.255.169.254"),  # next door to link-local
        ("https://{tenant}.example.com/", "{tenant}.example.com", None),  # templates are the reader's business
    ],
)
def test_what_is_served_today_passes_in_canonical_form(url: str, host: str, address: str | None) -> None:
    target = check_url(url)
    assert target.host == host
    assert target.address == (None if address is None else ipaddress.ip_address(address))


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("file:///etc/passwd", "must be an http or https URL (got file)"),
        ("javascript:alert(1)", "must be an http or https URL (got javascript)"),
        ("/relative.json", "must be an http or https URL (got no scheme)"),
        ("ws://agents.example.com/", "must be an http or https URL (got ws)"),
        ("http://1.2.3.256/", "is not a URL browsers can read"),  # ends in a number, so IPv4, and a part is over 255
        ("http://4294967296/", "is not a URL browsers can read"),  # over 32 bits
        ("http://1.2.3.4.5/", "is not a URL browsers can read"),  # five parts
        ("http://09/", "is not a URL browsers can read"),  # a leading 0 is octal, and 9 is no octal digit
        ("http://[::1/", "is not a URL browsers can read"),
        ("http://a b.example/", "is not a URL browsers can read"),
    ],
)
def test_what_is_not_an_http_url_browsers_read_is_refused_as_such(url: str, reason: str) -> None:
    with pytest.raises(RefusedUrl, match="^" + re.escape(f"where: {reason}")) as caught:
        check_url(url, "where")
    assert caught.value.points_to is None


@pytest.mark.parametrize(
    "host",
    [
        "xn--pi-7ld.example.com",  # an A-label breaking IDNA's bidi rule: httpx parses it, then fails reading its host
        "XN--PI-7LD.example.com",
        "xn--pi-7ld.example.com.",
        "xn--pi-7ld.example.com:8443",
        "xn--ls8h.la",  # an emoji, which IDNA 2008 disallows (browsers' UTS 46 takes it)
        "xn--.example.com",  # an A-label with no punycode at all
        "ex\u2615ample.com",  # the same as Unicode: httpx cannot encode it
        "exa\u00admple.com",  # a soft hyphen, which browsers drop
        "\uff25\uff38\uff21\uff2d\uff30\uff2c\uff25.com",  # full-width letters, which browsers fold
    ],
)
def test_a_host_the_registrys_http_client_cannot_read_is_refused_as_such(host: str) -> None:
    """Browsers read these hosts; httpx, which fetches and calls every URL the registry stores, cannot, and
    failed with an error no caller handled (`idna`'s, not an `InvalidURL`) wherever it read one."""
    with pytest.raises(RefusedUrl, match="^" + re.escape("where: is not a URL the registry's HTTP client can read (")) as caught:
        check_url(f"https://{host}/mcp", "where")
    assert caught.value.points_to is None
    assert unreadable(f"https://{host}/mcp") is not None


@pytest.mark.parametrize(
    "host",
    ["a..example.com", "a" * 64 + ".example.com", "a.xn--pi-7ld.example.com", "example.com.", "xn--mnchen-3ya.example"],
)
def test_a_host_httpx_reads_passes_even_where_no_resolver_would_answer(host: str) -> None:
    """An empty label, a label over 63 characters, a bad A-label after the first (httpx leaves it encoded): the
    resolver finds no such name, and a call is unreachable; what the client reads is not refused here."""
    assert check_url(f"https://{host}/").host == host
    assert unreadable(f"https://{host}/") is None


def test_any_scheme_judges_the_host_of_endpoints_that_are_not_http() -> None:
    assert check_url("wss://agents.example.com/socket", any_scheme=True).host == "agents.example.com"
    assert check_url("grpc://10.0.0.5:50051", any_scheme=True).address == ipaddress.ip_address("10.0.0.5")
    for url in ("ws://2852039166/", "grpc://0xa9fea9fe:50051", "wss://[::ffff:a9fe:a9fe]/"):
        with pytest.raises(RefusedUrl, match=re.escape("points to 169.254.169.254")):
            check_url(url, any_scheme=True)


@pytest.mark.parametrize(
    ("host", "address"),
    [
        ("2852039166", "169.254.169.254"),
        ("0251.0376.0251.0376", "169.254.169.254"),
        ("169.254.169.254.", "169.254.169.254"),
        ("%31%36%39.254.169.254", "169.254.169.254"),
        ("::ffff:a9fe:a9fe", "::ffff:a9fe:a9fe"),
        ("[fd00:ec2::254]", "fd00:ec2::254"),
        ("fe80::1%eth0", "fe80::1%eth0"),
        ("127.1", "127.0.0.1"),
        ("example.com", None),
        ("1.2.3.256", None),  # no address, and no name a browser would look up either
    ],
)
def test_address_of_reads_a_host_as_browsers_do(host: str, address: str | None) -> None:
    assert address_of(host) == (None if address is None else ipaddress.ip_address(address))


@pytest.mark.parametrize(
    ("address", "kind"),
    [
        ("169.254.169.254", "a link-local (cloud metadata) address"),
        ("::ffff:169.254.169.254", "a link-local (cloud metadata) address"),
        ("2002:a9fe:a9fe::1", "a link-local (cloud metadata) address"),  # 6to4
        ("fe80::1", "a link-local address"),
        ("fd00:ec2::254", "a cloud metadata address"),
        ("100.100.100.200", "a cloud metadata address"),
        ("127.0.0.1", None),
        ("10.0.0.5", None),
        ("fd00::254", None),
    ],
)
def test_refused_kind_names_what_no_url_may_point_to(address: str, kind: str | None) -> None:
    assert refused_kind(ipaddress.ip_address(address)) == kind
