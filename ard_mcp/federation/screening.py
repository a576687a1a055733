"""What this registry does with another registry's results before any of them reaches a client.

An upstream is a third party, and a malicious one once rewrote this registry's answers: it named any
`source` it liked, its `evidence.trust: verified` was shown as this registry's finding, and its
`<|im_start|>system ...` display name reached the host model at score 100, `confidence: high`, no warning.
So a result row is read as a registered entry is, and everything this registry says about it is its own:

* `source` is the upstream this registry asked, whatever the row says;
* the entry goes through the registration reader (`leniency.read_entry`: sizes, nesting, an http(s) `url`
  only, the schema), after invisible and bidirectional characters are removed from every text a model reads
  (a registration with a bidi override in its name is refused and its publisher told; a remote row has no
  publisher here to tell, so it is cleaned). A row that fails is left out, with a note;
* its text, and its evidence's, is screened for text aimed at a model (`untrusted`): a flagged result's
  score is demoted as a local one's relevance is (`Tuning.untrusted_demotion`), it is never confident, and
  the warnings are in its evidence;
* its trust status is this registry's check of its trust manifest (`TrustChecks`: keys fetched under the
  network rules, cached), `unverified` when that cannot finish in time, never the upstream's word; and
  `--trust-policy` applies: `refuse-invalid` leaves an invalid one out, `demote` demotes its score.

Each upstream's results are then ordered by the (demoted) scores, so a flagged or demoted row sinks within
its own registry's ranking before rankings are fused (`merge`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import anyio

from ard_mcp.errors import InvalidArgument
from ard_mcp.federation.evidence import remote_evidence, screened_examples, upstream_evidence
from ard_mcp.formats.catalog import CatalogEntry
from ard_mcp.formats.leniency import read_entry
from ard_mcp.formats.limits import EntryLimits
from ard_mcp.formats.messages import SearchResult, TrustFinding
from ard_mcp.formats.untrusted import model_directed, strip_entry
from ard_mcp.search.tuning import Tuning
from ard_mcp.trust.policy import TrustPolicy, refused_by
from ard_mcp.trust.service import TrustChecks
from ard_mcp.trust.status import TrustResult, now_iso

SERVED_FIELDS = ("score", "source", "evidence", "redacted")  # what a registry adds to an entry in a result


@dataclass(frozen=True)
class _Row:
    published: dict[str, Any]  # the entry as its publisher published it: what a trust manifest's signature covers
    entry: CatalogEntry  # the same entry as this registry reads one
    raw: Mapping[str, Any]


@dataclass(frozen=True)
class Screening:
    """The rules one serving registry applies to every upstream's results."""

    tuning: Tuning
    trust: TrustChecks
    policy: TrustPolicy
    limits: EntryLimits

    def _read(self, raw: Any, where: str) -> _Row:
        if not isinstance(raw, Mapping):
            raise InvalidArgument(f"{where}: must be a JSON object")
        published = {k: v for k, v in raw.items() if k not in SERVED_FIELDS}
        cleaned = dict(published)
        strip_entry(cleaned)
        entry, _ = read_entry(cleaned, where, self.limits)
        return _Row(published, entry, raw)

    async def results(self, rows: list[Any], source: str, until: float) -> tuple[list[SearchResult], list[str]]:
        """The rows this registry serves as `source`'s results, best first by their demoted scores, and a note
        for each row left out. Trust checks stop at `until` (anyio's clock); the unfinished are `unverified`."""
        read: list[_Row] = []
        notes: list[str] = []
        for i, raw in enumerate(rows):
            try:
                read.append(self._read(raw, f"results[{i}]"))
            except InvalidArgument as exc:
                notes.append(f"result left out: {exc.message}")
        found = await self._checked([row.published for row in read], until)
        received = now_iso()
        results: list[SearchResult] = []
        for row, trust in zip(read, found, strict=True):
            if trust.status in refused_by(self.policy):
                notes.append(f"result {row.entry.identifier} left out: its trust manifest is invalid ({trust.reason})")
                continue
            results.append(self._result(row, trust, source, received))
        results.sort(key=lambda r: -r.score)  # stable: the upstream's order among equal scores
        return results, notes

    def _result(self, row: _Row, trust: TrustResult, source: str, received: str) -> SearchResult:
        theirs = upstream_evidence(row.raw.get("evidence"))
        examples, in_evidence = screened_examples(theirs)
        findings = [*model_directed(row.entry.wire()), *in_evidence]
        score = _score(row.raw.get("score"))
        if findings:
            score = round(score * self.tuning.untrusted_demotion)
        if trust.status in self.tuning.demoted_trust:
            score = round(score * self.tuning.trust_demotion)
        finding = TrustFinding(status=trust.status, reason=trust.reason, checkedAt=trust.checked_at)
        evidence = remote_evidence(row.entry, theirs, examples, findings, finding, received)
        return SearchResult.model_validate({**row.entry.wire(), "score": score, "source": source, "evidence": evidence})

    async def _checked(self, published: list[dict[str, Any]], until: float) -> list[TrustResult]:
        """This registry's trust check of each entry, concurrently, those unfinished at `until` `unverified`."""
        late = TrustResult("unverified", "its trust manifest could not be checked within the federation deadline")
        found = [late] * len(published)

        async def check(i: int, entry: dict[str, Any]) -> None:
            found[i] = await self.trust.check(entry)

        with anyio.CancelScope(deadline=until):
            async with anyio.create_task_group() as group:
                for i, entry in enumerate(published):
                    group.start_soon(check, i, entry)
        return found


def _score(value: Any) -> int:
    """The upstream's score as ARD bounds it (0-100); anything else (a string, `NaN`, `true`) is 0."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return 0
    return min(100, max(0, round(value)))
