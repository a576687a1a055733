"""A real authoritative DNS server on 127.0.0.1 (UDP and TCP on the same ephemeral port) for crawler tests.

Why a server and not a patched resolver: the crawler's DNS discovery (SVCB / TXT under `_agents`, then A / AAAA) should be
tested through dnspython's real resolver, wire format, truncation and TCP fallback included; only the server is fake.

    with DnsResponder() as server:
        server.add("_index._agents.example.test.", "SVCB", "1 example.test. port=43123")
        resolver = dns.asyncresolver.Resolver(configure=False)
        resolver.nameservers, resolver.port = [server.address], server.port
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import struct
import threading

import dns.exception
import dns.flags
import dns.message
import dns.name
import dns.opcode
import dns.rcode
import dns.rdata
import dns.rdataclass
import dns.rdatatype
import dns.rrset


class DnsResponder:
    """Answers authoritatively (AA) from the records added; a context manager so the port and thread are released."""

    address = "127.0.0.1"

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._records: dict[dns.name.Name, dict[dns.rdatatype.RdataType, dns.rrset.RRset]] = {}
        self._failures: dict[dns.name.Name, dns.rcode.Rcode | None] = {}  # None: stay silent
        self._queries: list[tuple[str, str]] = []
        self.errors: list[Exception] = []  # bugs met while answering; `close` raises the first
        self._stopping = threading.Event()
        self._udp, self._tcp = _bind_pair()
        self.port: int = self._udp.getsockname()[1]
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self) -> DnsResponder:
        self._thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        self.close(check=exc_type is None)  # don't hide the test's own failure behind ours

    def close(self, *, check: bool = True) -> None:
        """Stop serving (the loop notices within a tenth of a second); with `check`, raise if answering ever failed."""
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join(timeout=2)
        self._udp.close()
        self._tcp.close()
        if check and self.errors:
            raise RuntimeError(f"DnsResponder failed to answer {len(self.errors)} queries") from self.errors[0]

    def add(self, name: str, rdtype: str, *rdata_texts: str, ttl: int = 300) -> None:
        """Publish records, in zone-file text relative to the root (`"1 example.test. port=8080"`); adds to any already there."""
        owner = dns.name.from_text(name)
        kind = dns.rdatatype.from_text(rdtype)
        with self._lock:
            rrset = self._records.setdefault(owner, {}).setdefault(kind, dns.rrset.RRset(owner, dns.rdataclass.IN, kind))
            for text in rdata_texts:
                rrset.add(dns.rdata.from_text(dns.rdataclass.IN, kind, text, origin=dns.name.root, relativize=False), ttl)

    def remove(self, name: str) -> None:
        """Forget every record at `name` (it answers NXDOMAIN again unless names below it remain)."""
        with self._lock:
            self._records.pop(dns.name.from_text(name), None)

    def fail(self, name: str, rcode: str = "SERVFAIL") -> None:
        """Answer every query for `name` with `rcode` (e.g. SERVFAIL, REFUSED), records or not."""
        with self._lock:
            self._failures[dns.name.from_text(name)] = dns.rcode.from_text(rcode)

    def silence(self, name: str) -> None:
        """Never answer queries for `name`, so the client's timeout is what ends the lookup."""
        with self._lock:
            self._failures[dns.name.from_text(name)] = None

    @property
    def queries(self) -> list[tuple[str, str]]:
        """A snapshot of the questions received, oldest first: (name as sent, type text), e.g. ("example.test.", "A")."""
        with self._lock:
            return list(self._queries)

    def answer(self, wire: bytes, *, udp: bool) -> bytes | None:
        """The wire answer to one query (None to stay silent). Over UDP an answer larger than the client's EDNS payload
        (512 bytes without EDNS) is truncated with TC set, as real servers do, so the client retries over TCP."""
        try:
            query = dns.message.from_wire(wire)
        except dns.exception.DNSException:
            return None  # not worth a FORMERR for a test server: the client will time out and say so
        response = dns.message.make_response(query)
        response.flags |= dns.flags.AA
        try:
            return self._answer(query, response, udp=udp)
        except Exception as exc:  # a bug here: answer SERVFAIL and keep serving; `close` fails the test
            with self._lock:
                self.errors.append(exc)
            response.answer.clear()
            response.authority.clear()
            response.set_rcode(dns.rcode.SERVFAIL)
            return response.to_wire()

    def _answer(self, query: dns.message.Message, response: dns.message.Message, *, udp: bool) -> bytes | None:
        if query.opcode() != dns.opcode.QUERY or len(query.question) != 1:
            response.set_rcode(dns.rcode.NOTIMP if query.opcode() != dns.opcode.QUERY else dns.rcode.FORMERR)
            return response.to_wire()
        question = query.question[0]
        with self._lock:
            self._queries.append((question.name.to_text(), dns.rdatatype.to_text(question.rdtype)))
            failed = question.name in self._failures
            rcode = self._failures[question.name] if failed else self._resolve(question.name, question.rdtype, response)
        if rcode is None:
            return None
        response.set_rcode(rcode)
        max_size = (max(512, query.payload) if query.edns >= 0 else 512) if udp else 65535
        return response.to_wire(max_size=max_size, prefer_truncation=True)

    def _resolve(self, qname: dns.name.Name, qtype: dns.rdatatype.RdataType, response: dns.message.Message) -> dns.rcode.Rcode:
        """Fill the answer (following CNAMEs held here) or, for a negative answer, the authority SOA if one was added."""
        for _ in range(8):
            at = self._records.get(qname, {})
            if qtype == dns.rdatatype.ANY and at:
                response.answer.extend(at.values())
                return dns.rcode.NOERROR
            if qtype in at:
                response.answer.append(at[qtype])
                return dns.rcode.NOERROR
            cname = at.get(dns.rdatatype.CNAME)
            if cname is None:
                break
            response.answer.append(cname)
            qname = cname[0].target
        zones = [
            rrsets[dns.rdatatype.SOA]
            for owner, rrsets in self._records.items()
            if dns.rdatatype.SOA in rrsets and qname.is_subdomain(owner)
        ]
        if zones:
            response.authority.append(max(zones, key=lambda soa: len(soa.name)))  # the closest enclosing zone
        exists = any(owner.is_subdomain(qname) for owner in self._records)  # an empty non-terminal exists too (RFC 8020)
        return dns.rcode.NOERROR if exists else dns.rcode.NXDOMAIN

    def _serve(self) -> None:
        with selectors.DefaultSelector() as selector:
            selector.register(self._udp, selectors.EVENT_READ)
            selector.register(self._tcp, selectors.EVENT_READ)
            while not self._stopping.is_set():
                for key, _ in selector.select(timeout=0.1):
                    if key.fileobj is self._udp:
                        self._serve_udp()
                    else:
                        conn, _ = self._tcp.accept()
                        threading.Thread(target=self._serve_tcp, args=(conn,), daemon=True).start()

    def _serve_udp(self) -> None:
        with contextlib.suppress(OSError):
            wire, client = self._udp.recvfrom(65535)
            reply = self.answer(wire, udp=True)
            if reply is not None:
                self._udp.sendto(reply, client)

    def _serve_tcp(self, conn: socket.socket) -> None:
        """Answer length-prefixed queries until the client closes or idles for two seconds."""
        conn.settimeout(2)
        with conn, contextlib.suppress(OSError, struct.error):
            while not self._stopping.is_set():
                (length,) = struct.unpack("!H", _read_exactly(conn, 2))
                reply = self.answer(_read_exactly(conn, length), udp=False)
                if reply is not None:
                    conn.sendall(struct.pack("!H", len(reply)) + reply)


def _read_exactly(conn: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        piece = conn.recv(n - len(data))
        if not piece:
            raise ConnectionResetError("client closed")
        data += piece
    return data


def _bind_pair() -> tuple[socket.socket, socket.socket]:
    """UDP and TCP sockets on one ephemeral port, as a resolver falls back to TCP on the port it used for UDP."""
    for _ in range(50):
        udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        udp.bind(("127.0.0.1", 0))
        tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            tcp.bind(("127.0.0.1", udp.getsockname()[1]))
        except OSError:
            udp.close()
            tcp.close()
            continue
        tcp.listen(16)
        return udp, tcp
    raise OSError("no port free for both UDP and TCP on 127.0.0.1")
