"""Answering a Xu Discovery Request (§5-6) from the registry, for `POST /discover` and the MCP
`discover_agents` tool: the request becomes a `SearchQuery` with criteria, the same search
`search_agents` runs; each chosen entry becomes a candidate with bindings, freshness, Xu score components
and matching evidence, redacted to the requested detail.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ard_mcp.formats.entry_facts import bindings_of, source_id_of, status_of
from ard_mcp.formats.identifiers import publisher_of
from ard_mcp.formats.messages import SearchResult, TrustFinding, fit_of
from ard_mcp.formats.timestamps import utc_text
from ard_mcp.formats.xu import (
    DiscoveryConstraints,
    DiscoveryRequest,
    DiscoveryResponse,
    XuCandidate,
    XuFreshness,
    XuMatchedExample,
    XuScoreComponents,
    agent_metadata,
)
from ard_mcp.search.criteria import Criteria, age_seconds, as_list
from ard_mcp.search.query import SearchQuery
from ard_mcp.search.visibility import Viewer

if TYPE_CHECKING:  # the MCP server imports this before it may load numpy (the registry and ranking bring it)
    from ard_mcp.federation.service import FederatedPage, Mode
    from ard_mcp.registry import Registry
    from ard_mcp.search.selection import Candidate

FRESHNESS_HALF_LIFE_DAYS = 180.0
_POLICY = {"active": 1.0, "testing": 0.5, "deprecated": 0.25}
_SUMMARY_ONLY = ("name", "description", "tags", "credential_refs")
_SECRET = ("auth", "signature")  # full detail shows them only to an authorised caller


def criteria_of(request: DiscoveryRequest) -> tuple[Criteria, dict[str, Any], list[str], list[str]]:
    """The selection criteria, what was applied, what could not be, and warnings about it."""
    constraints = request.constraints or DiscoveryConstraints()
    criteria = Criteria.of(
        required_tags=request.required_tags,
        excluded_tags=request.excluded_tags,
        preferred_tags=request.preferred_tags,
        protocols=request.protocols,
        statuses=as_list(constraints.status),
        regions=as_list(constraints.region),
        max_age_seconds=constraints.max_results_age_seconds,
    )
    applied: dict[str, Any] = {}
    for name in ("required_tags", "excluded_tags", "protocols"):
        if getattr(criteria, name):
            applied[name] = list(getattr(criteria, name))
    applied_constraints = {k: v for k, v in constraints.model_dump(exclude_none=True).items() if k in DiscoveryConstraints.model_fields}
    if applied_constraints:
        applied["constraints"] = applied_constraints
    unsupported = [*(request.model_extra or {}), *(constraints.model_extra or {})]
    warnings = [f"filter {name!r} is not supported by this service and was not applied" for name in unsupported]
    if request.client_context:
        warnings.append("client_context is accepted but does not change the ranking")
    return criteria, applied, unsupported, warnings


def _unit(value: float) -> float:
    return round(min(1.0, max(0.0, value)), 4)


def _candidate(
    chosen: Candidate, request: DiscoveryRequest, criteria: Criteria, now: datetime, full_allowed: bool, omitted: set[str]
) -> XuCandidate:
    entry = chosen.agent.entry
    view = agent_metadata(entry)
    age = age_seconds(entry, chosen.agent.indexed_at, now)
    limit = criteria.max_age_seconds
    status = status_of(entry)
    trust = entry.get("trustManifest") or {}
    refs = [trust["identity"]] if trust.get("identity") else []
    refs += [a["uri"] for a in trust.get("attestations") or [] if a.get("uri")]
    fields: dict[str, Any] = {
        "id": source_id_of(entry),
        "identifier": entry["identifier"],
        "name": entry["displayName"],
        "description": entry.get("description"),
        "tags": entry.get("tags"),
        "bindings": bindings_of(entry),
        "score": round((chosen.score or 0) / 100, 4),
        "credential_refs": refs or None,
        "status": status,
        "freshness": XuFreshness(metadata_updated_at=entry.get("updatedAt"), indexed_at=chosen.agent.indexed_at, age_seconds=round(age, 1)),
        "trust": TrustFinding.of(chosen.trust),
    }
    if request.include_evidence and chosen.explain is not None:
        ranked = chosen.explain()
        components = ranked.components
        wanted = set(criteria.required_tags) | set(criteria.preferred_tags)
        tags = {t.lower(): t for t in entry.get("tags") or []}
        fields["score_components"] = XuScoreComponents(
            tag=_unit(len(wanted & tags.keys()) / len(wanted) if wanted else components.get("tag", 0.0)),
            context=_unit(components.get("context", 0.0)),
            example=_unit(components.get("example", 0.0)),
            protocol=1.0,
            freshness=_unit(1 - age / limit if limit else math.pow(0.5, age / 86400 / FRESHNESS_HALF_LIFE_DAYS)),
            policy=_POLICY.get(status, 0.0),
            lexical=_unit(components.get("lexical", 0.0)),
        )
        fields["matched_tags"] = list(dict.fromkeys([*(tags[t] for t in sorted(wanted & tags.keys())), *ranked.matched_tags]))
        fields["matched_examples"] = [
            XuMatchedExample(id=m.label, text=m.text, score=m.similarity, kind=m.kind) for m in ranked.matched_examples
        ]
    hidden: set[str] = set()
    if request.detail == "full":
        for key, value in view.items():
            if key in _SECRET and not full_allowed:
                hidden.add(key)
            elif key not in fields:
                fields[key] = value
    else:
        hidden |= {k for k, v in view.items() if v and k not in fields}
        if request.detail == "minimal":
            hidden |= {k for k in _SUMMARY_ONLY if fields.get(k)}
            for k in _SUMMARY_ONLY:
                fields.pop(k, None)
            fields["bindings"] = [{"protocol": b.get("protocol"), "endpoint": b.get("endpoint")} for b in fields["bindings"]]
    if hidden:
        fields["redacted"] = True
        omitted.update(hidden)
    return XuCandidate.model_validate({k: v for k, v in fields.items() if v is not None})


def _provenance(result: SearchResult, received_at: str) -> dict[str, Any]:
    """What §10 asks a federated candidate to carry: the service whose copy is shown, the publisher's
    authority, its signature, when it was received; and (ours) every registry that returned it."""
    signature = result.trustManifest.signature if result.trustManifest is not None else None
    sources = result.evidence.sources if result.evidence is not None else None
    return {
        "origin_service": result.source,
        "origin_authority": publisher_of(result.identifier),
        **({"origin_signature": signature} if signature else {}),
        "received_at": received_at,
        **({"origin_sources": sources} if sources else {}),
    }


def _remote(result: SearchResult, now: datetime) -> XuCandidate:
    """A candidate another registry returned, with its provenance, this registry's trust check and warnings."""
    entry = result.model_dump(mode="json", exclude_none=True)
    evidence = result.evidence
    return XuCandidate.model_validate(
        {
            "id": source_id_of(entry),
            "identifier": result.identifier,
            "name": result.displayName,
            "description": result.description,
            "tags": result.tags,
            "bindings": bindings_of(entry),
            "score": round(result.score / 100, 4),
            "status": status_of(entry),
            "freshness": XuFreshness(metadata_updated_at=result.updatedAt, indexed_at=utc_text(now), age_seconds=0.0),
            **_provenance(result, utc_text(now)),
            "trust": evidence.trust if evidence is not None else None,
            "warnings": evidence.warnings if evidence is not None else None,
        }
    )


def _local(candidate: XuCandidate, result: SearchResult) -> XuCandidate:
    """A local candidate in a federated answer: the local copy, with the provenance of the merge (every
    registry that also returned it), as a remote candidate has."""
    provenance = _provenance(result, candidate.freshness.indexed_at)
    return XuCandidate.model_validate({**candidate.model_dump(mode="json", by_alias=True), **provenance})


Federate = Callable[[SearchQuery, "Mode"], "FederatedPage"]
"""Runs a federated search (`Federation.search`, bridged to the caller's thread) for a Xu request."""


def discover(
    registry: Registry, request: DiscoveryRequest, viewer: Viewer, *, full_allowed: bool = True, federate: Federate | None = None
) -> DiscoveryResponse:
    """Answer a Discovery Request from the registry, among the entries `viewer` may see. `full_allowed` is
    whether the caller is authorised to see authentication details with `detail=full` (§7.4); `federate`,
    when the request asks for federation and there are upstreams, merges their candidates in (§10)."""
    now = datetime.now(UTC)
    criteria, applied, unsupported, warnings = criteria_of(request)
    query = SearchQuery.of(request.query, criteria=criteria, page_size=request.limit)
    page = registry.search(query, now, viewer)
    omitted: set[str] = set()
    candidates = [_candidate(c, request, criteria, now, full_allowed, omitted) for c in page.candidates]
    for candidate, chosen in zip(candidates, page.candidates, strict=True):
        candidate.warnings = registry.ranker.warnings(chosen.agent.id) or None  # shown at every detail level, like trust
        candidate.fit = fit_of(chosen.score, page.confident) if chosen.score is not None else None
    referrals = None
    if federate is not None and request.federation != "none":
        federated = federate(query, request.federation)
        warnings += federated.warnings
        referrals = federated.referrals or None
        local = {c.identifier: c for c in candidates}
        candidates = [_local(local[r.identifier], r) if r.identifier in local else _remote(r, now) for r in federated.results]
    if page.confidence == "low":
        warnings.append("low confidence: nothing fits the query well enough; these are only the closest agents")
    if omitted:
        reason = "needs a valid bearer token" if request.detail == "full" else f"detail={request.detail}"
        more = "" if request.detail == "full" else "; ask for detail=full"
        warnings.append(f"fields omitted ({reason}): {', '.join(sorted(omitted))}{more}")
    return DiscoveryResponse(
        request_id=f"req-{uuid.uuid4().hex}",
        generated_at=utc_text(now),
        candidates=candidates,
        applied_filters=applied,
        unsupported_filters=unsupported,
        warnings=warnings,
        referrals=referrals,
    )
