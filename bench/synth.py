"""Deterministic synthetic ARD catalogs of any size, recombined from the real entries in `<shared>/data`.

    from synth import Sources, Generator
    gen = Generator(Sources.load(shared_dir), seed=4)
    entries = gen.entries(10_000)          # list of plain dicts (ARD v0.5 catalog entries)
    manifest = {"specVersion": "1.0", "entries": entries}

What is recombined, and how:

* MCP servers (~45%): tools from a LiveMCPBench server, mixed with a few tools from another one (the
  tools keep their real names and input schemas), capabilities = the tool names, sometimes 2-3
  representative queries from the MetaTool pool;
* OpenAPI plugins (~25%): a MetaTool plugin's description and 2-5 of its representative queries, topped up
  from other plugins;
* A2A agents (~15%): skills built from real tool and plugin descriptions, sometimes 2-3 queries;
* description-only MCP servers (~15%): the MCP-registry seed descriptions.

Every text that becomes an embedded example is unique across the catalog: the first use of a real text is
verbatim, later uses get light synonym rewording plus a qualifier clause whose (template, audience,
region) combination is a bijection of how often that text was used before, so two variants of one source
text never coincide. Names carry a number suffix, identifiers are `urn:air:<domain>:<namespace>:<slug>-<n>`.
About 6 examples per agent (as `ard_mcp.index.example_texts.extract_examples` counts them).

Filters: `type` is spread over three media types; `tags` are drawn from a skewed list (the most common
tag is on ~20% of agents); the tag `post-quantum` and `metadata.tier = "certified"` are each on ~0.5% of
agents (the "selective filter" case). The generator is sequential and seeded, so the catalog of size N
is the first N entries of every larger one, and `Generator.more()` continues the same stream.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MCP = "application/mcp-server-card+json"
OPENAPI = "application/openapi+json"
A2A = "application/a2a-agent-card+json"

TAG_FILTER = "code"  # the common tag the benchmark filters on
TYPE_FILTER = OPENAPI  # the type the benchmark filters on
RARE_TAG = "post-quantum"
RARE_METADATA = ("tier", "certified")
RARE_SHARE = 0.005

TAGS = {  # tag -> weight; "code" ends up on ~20% of agents
    "code": 15,
    "discovery": 12,
    "productivity": 11,
    "finance": 9,
    "data": 8,
    "communication": 7,
    "media": 6,
    "file-access": 6,
    "visualization": 5,
    "entertainment": 5,
    "education": 4,
    "travel": 4,
    "location": 3,
    "security": 3,
    "health": 3,
    "commerce": 3,
    "devops": 2,
    "legal": 1,
    "science": 1,
    "miscellaneous": 2,
}

AUDIENCES = [
    "small businesses",
    "data teams",
    "students",
    "researchers",
    "developers",
    "marketers",
    "analysts",
    "support agents",
    "sales teams",
    "journalists",
    "designers",
    "travellers",
    "clinicians",
    "teachers",
    "accountants",
    "lawyers",
    "recruiters",
    "product managers",
    "site reliability engineers",
    "gamers",
    "investors",
    "retailers",
    "logistics planners",
    "city planners",
    "nonprofits",
    "hobbyists",
    "musicians",
    "photographers",
    "writers",
    "translators",
    "event organisers",
    "field technicians",
    "farmers",
    "energy traders",
    "insurers",
    "hotel staff",
    "content creators",
    "podcasters",
    "security analysts",
    "procurement officers",
    "public agencies",
    "e-commerce sellers",
]
REGIONS = [
    "Europe",
    "North America",
    "Latin America",
    "Southeast Asia",
    "East Asia",
    "South Asia",
    "the Nordics",
    "the Middle East",
    "West Africa",
    "East Africa",
    "Oceania",
    "the Baltics",
    "Iberia",
    "the Alps",
    "Central Europe",
    "the Caribbean",
    "the Andes",
    "Scandinavia",
    "the Balkans",
    "the UK",
    "Ireland",
    "Canada",
    "Mexico",
    "Brazil",
    "Argentina",
    "Japan",
    "Korea",
    "India",
    "Indonesia",
    "Vietnam",
    "Australia",
    "New Zealand",
    "Germany",
    "France",
    "Italy",
    "Spain",
    "Poland",
    "Turkey",
    "Egypt",
    "Kenya",
    "Nigeria",
    "South Africa",
    "Morocco",
    "the Gulf states",
    "California",
    "Texas",
    "New York",
    "Quebec",
    "Bavaria",
    "Catalonia",
    "Lombardy",
    "Hokkaido",
    "Patagonia",
    "Siberia",
    "Anatolia",
    "Scotland",
    "Wales",
    "Flanders",
    "Tuscany",
    "Provence",
]
# Each template names the audience and the region, so distinct (template, audience, region) give
# distinct texts.
TEMPLATES = [
    "{text} ({audience}, {region})",
    "{text} Used by {audience} across {region}.",
    "For {audience} in {region}: {text}",
    "{text} Tailored to {audience} working in {region}.",
    "{text} — popular with {audience} in {region}",
    "{text} Suited to {audience} based in {region}.",
    "In {region}, for {audience}: {text}",
]
# Long texts get their qualifier in front: examples are clipped at 1,000 characters and the model reads
# only its first 256 tokens, so a qualifier at the end of a long text would not make it unique.
PREFIX_TEMPLATES = [
    "For {audience} in {region}: {text}",
    "In {region}, for {audience}: {text}",
    "[{region} · {audience}] {text}",
    "{audience} in {region} rely on this. {text}",
    "Made for {audience} ({region}). {text}",
]
LONG_TEXT = 400
QUERY_TEMPLATES = [
    "{text} I work with {audience} in {region}.",
    "{text} (we are {audience} in {region})",
    "As one of the {audience} in {region}: {text}",
    "{text} This is for {audience} around {region}.",
    "Quick question from {audience} in {region}. {text}",
    "{text} Context: {audience}, {region}.",
    "Helping {audience} in {region} — {text}",
]
QUERY_PREFIX_TEMPLATES = [
    "As one of the {audience} in {region}: {text}",
    "Quick question from {audience} in {region}. {text}",
    "Helping {audience} in {region} — {text}",
    "We are {audience} in {region}. {text}",
]
SYNONYMS = {
    "search": ["look up", "find"],
    "get": ["fetch", "retrieve"],
    "create": ["make", "generate"],
    "data": ["information", "records"],
    "tool": ["utility", "helper"],
    "server": ["service", "backend"],
    "helps": ["assists", "lets"],
    "users": ["people", "customers"],
    "list": ["enumerate", "show"],
    "provides": ["offers", "gives"],
    "find": ["locate", "discover"],
    "information": ["details", "info"],
    "quickly": ["fast", "rapidly"],
    "easily": ["simply", "effortlessly"],
    "files": ["documents", "file objects"],
    "show": ["display", "present"],
    "recommend": ["suggest", "propose"],
    "latest": ["newest", "most recent"],
    "help": ["assist", "support"],
    "manage": ["handle", "administer"],
    "returns": ["gives back", "yields"],
    "current": ["present", "up-to-date"],
    "can": ["could", "would"],
    "best": ["top", "finest"],
}
BRANDS = [
    "Nimbus",
    "Aurora",
    "Vertex",
    "Kestrel",
    "Lumen",
    "Orbit",
    "Quartz",
    "Harbor",
    "Atlas",
    "Beacon",
    "Cobalt",
    "Delta",
    "Ember",
    "Fjord",
    "Granite",
    "Helix",
    "Indigo",
    "Juniper",
    "Krypton",
    "Lattice",
    "Meridian",
    "Nova",
    "Onyx",
    "Prism",
    "Quill",
    "Raven",
    "Sierra",
    "Tundra",
    "Umbra",
    "Vortex",
    "Willow",
    "Xenon",
    "Yarrow",
    "Zephyr",
    "Acorn",
    "Basalt",
    "Cinder",
    "Dune",
    "Echo",
    "Falcon",
]
SUFFIXES = ["", " Pro", " Lite", " Cloud", " Hub", " Connect", " Assistant", " Agent", " Studio", " Suite"]
DOMAIN_WORDS = [
    "acme",
    "globex",
    "initech",
    "umbrella",
    "stark",
    "wayne",
    "tyrell",
    "cyberdyne",
    "soylent",
    "hooli",
    "vandelay",
    "wonka",
    "oscorp",
    "massive",
    "pied",
    "aperture",
    "blackmesa",
    "gringotts",
    "monarch",
    "zorg",
]
TLDS = ["com", "io", "dev", "ai", "org", "net", "co", "app", "cloud", "tech"]

_WORD = re.compile(r"\b([A-Za-z]+)\b")
_SLUG = re.compile(r"[^a-z0-9]+")


def slug(text: str) -> str:
    return _SLUG.sub("-", text.lower()).strip("-")[:40] or "agent"


@dataclass
class Sources:
    """The real material: LiveMCPBench servers (tools), MetaTool plugins (queries), seed descriptions."""

    servers: list[dict[str, Any]]
    plugins: list[dict[str, Any]]
    seeds: list[dict[str, Any]]
    queries: list[str] = field(default_factory=list)  # every MetaTool representative query

    @classmethod
    def load(cls, shared: Path) -> Sources:
        data = shared / "data"

        def entries(name: str) -> list[dict[str, Any]]:
            return json.loads((data / name / "catalog.json").read_text(encoding="utf-8"))["entries"]

        servers = [e for e in entries("livemcpbench") if isinstance(e.get("data"), dict) and e["data"].get("tools")]
        plugins = [e for e in entries("metatool") if e.get("representativeQueries")]
        seeds = [e for e in entries("mcp-registry-seed") if e.get("description") and e.get("displayName")]
        queries = sorted({q for p in plugins for q in p["representativeQueries"]})
        if not servers or not plugins or not seeds:
            raise SystemExit(f"{data}: expected livemcpbench/, metatool/ and mcp-registry-seed/ catalogs")
        return cls(servers, plugins, seeds, queries)


class Variator:
    """Unique variants of repeated source texts (see the module docstring)."""

    STRIDE = 7919  # prime, coprime with each space, so (n * STRIDE) % space is a permutation of 0..space-1

    def __init__(self, templates: list[str], prefix_templates: list[str]) -> None:
        self.templates = templates
        self.prefix_templates = prefix_templates
        self.uses: dict[str, int] = {}

    def __call__(self, text: str) -> str:
        n = self.uses.get(text, 0)
        self.uses[text] = n + 1
        if n == 0:
            return text
        templates = self.prefix_templates if len(text) > LONG_TEXT else self.templates
        space = len(templates) * len(AUDIENCES) * len(REGIONS)
        assert space % self.STRIDE
        k = (n * self.STRIDE) % space
        template = templates[k % len(templates)]
        k //= len(templates)
        audience, region = AUDIENCES[k % len(AUDIENCES)], REGIONS[k // len(AUDIENCES)]
        out = template.format(text=self.reword(text, n), audience=audience, region=region)
        if n >= space:  # only past ~10k uses of one text
            out = f"(variant {n // space}) {out}"
        return out

    @staticmethod
    def reword(text: str, n: int) -> str:
        """Swap some words for synonyms; which ones depends on n (deterministically)."""

        def swap(match: re.Match[str]) -> str:
            word = match.group(1)
            options = SYNONYMS.get(word.lower())
            if not options or (hash_word(word) + n) % 3 == 0:
                return word
            choice = options[(n + hash_word(word)) % len(options)]
            return choice.capitalize() if word[0].isupper() else choice

        return _WORD.sub(swap, text)


def hash_word(word: str) -> int:
    return sum(map(ord, word))  # stable across processes, unlike hash()


class Generator:
    def __init__(self, sources: Sources, seed: int = 4) -> None:
        self.src = sources
        self.rng = random.Random(seed)
        self.texts = Variator(TEMPLATES, PREFIX_TEMPLATES)
        self.query_texts = Variator(QUERY_TEMPLATES, QUERY_PREFIX_TEMPLATES)
        self.count = 0
        self.tag_names = list(TAGS)
        self.tag_weights = [TAGS[t] for t in self.tag_names]
        self.publishers = [f"{w}{i}.{t}" for i, (w, t) in enumerate((w, t) for t in TLDS for w in DOMAIN_WORDS)]

    # -- pieces ---------------------------------------------------------------------------------
    def _name(self, base: str) -> str:
        r = self.rng
        base = re.sub(r"^io\.github\.[^/]+/", "", base).replace("_", " ").strip() or "Agent"
        return f"{r.choice(BRANDS)} {base}{r.choice(SUFFIXES)} {self.count + 1}"

    def _identifier(self, namespace: str, name: str) -> str:
        r = self.rng
        if r.random() < 0.4:
            publisher, namespace = "github.com", f"{r.choice(DOMAIN_WORDS)}-{r.randrange(5000)}"
        else:
            publisher = r.choice(self.publishers)
        return f"urn:air:{publisher}:{namespace}:{slug(name)}-{self.count + 1}"

    def _tags(self) -> list[str]:
        r = self.rng
        tags = list(dict.fromkeys(r.choices(self.tag_names, self.tag_weights, k=r.choice((1, 1, 2, 2, 3)))))
        if r.random() < RARE_SHARE:
            tags.append(RARE_TAG)
        return tags

    def _metadata(self, origin: str) -> dict[str, Any]:
        r = self.rng
        meta: dict[str, Any] = {"source": f"synthetic:{origin}", "region": r.choice(REGIONS), "stars": r.randrange(2000)}
        if r.random() < RARE_SHARE:
            meta[RARE_METADATA[0]] = RARE_METADATA[1]
        return meta

    def _description(self, text: str) -> str:
        r = self.rng
        text = Variator.reword(text, r.randrange(1000))
        extra = r.random()
        if extra < 0.5:
            text += f" Built for {r.choice(AUDIENCES)} in {r.choice(REGIONS)}."
        elif extra < 0.7:
            feature = r.choice(("caching", "batch mode", "webhooks", "offline mode", "SSO", "audit logs"))
            text = f"{r.choice(('Now with', 'Includes', 'Adds'))} {feature}. {text}"
        return text

    def _queries(self, k: int, pool: list[str] | None = None) -> list[str]:
        r = self.rng
        chosen = r.sample(pool, min(k, len(pool))) if pool else []
        while len(chosen) < k:
            q = r.choice(self.src.queries)
            if q not in chosen:
                chosen.append(q)
        return [self.query_texts(q) for q in chosen]

    def _tool(self, tool: dict[str, Any]) -> dict[str, Any]:
        out = {"name": tool["name"], "description": self.texts(tool.get("description") or tool["name"])}
        if "inputSchema" in tool:
            out["inputSchema"] = tool["inputSchema"]  # shared, never mutated
        return out

    def _common(self, entry: dict[str, Any], origin: str) -> dict[str, Any]:
        r = self.rng
        entry["tags"] = self._tags()
        entry["version"] = f"{r.randrange(4)}.{r.randrange(20)}.{r.randrange(10)}"
        entry["updatedAt"] = f"2025-{r.randrange(1, 13):02d}-{r.randrange(1, 29):02d}T{r.randrange(24):02d}:{r.randrange(60):02d}:00Z"
        entry["metadata"] = self._metadata(origin)
        return entry

    # -- kinds ----------------------------------------------------------------------------------
    def _mcp(self) -> dict[str, Any]:
        r = self.rng
        main = r.choice(self.src.servers)
        tools = main["data"]["tools"]
        picked = r.sample(tools, min(len(tools), r.randint(4, 9)))
        if r.random() < 0.7:
            other = r.choice(self.src.servers)
            names = {t["name"] for t in picked}
            extra = [t for t in other["data"]["tools"] if t["name"] not in names]
            picked += r.sample(extra, min(len(extra), r.randint(1, 3)))
        name = self._name(main["displayName"])
        description = self._description(main.get("description") or main["data"].get("description") or name)
        tools_out = [self._tool(t) for t in picked]
        entry: dict[str, Any] = {
            "identifier": self._identifier("mcp", name),
            "displayName": name,
            "type": MCP,
            "description": description,
            "capabilities": [t["name"] for t in tools_out],
            "data": {"name": name, "description": description, "tools": tools_out},
        }
        if r.random() < 0.3:
            entry["representativeQueries"] = self._queries(r.randint(2, 3))
        return self._common(entry, "livemcpbench")

    def _openapi(self) -> dict[str, Any]:
        r = self.rng
        plugin = r.choice(self.src.plugins)
        name = self._name(plugin["displayName"])
        description = self._description(plugin.get("description") or name)
        entry = {
            "identifier": self._identifier("plugin", name),
            "displayName": name,
            "type": OPENAPI,
            "description": description,
            "representativeQueries": self._queries(r.randint(4, 5), plugin["representativeQueries"]),
            "data": {"name_for_model": slug(name).replace("-", "_"), "description_for_model": description},
        }
        return self._common(entry, "metatool")

    def _a2a(self) -> dict[str, Any]:
        r = self.rng
        skills = []
        for _ in range(r.randint(4, 7)):
            if r.random() < 0.5:
                tool = r.choice(r.choice(self.src.servers)["data"]["tools"])
                skill_name, text = tool["name"].replace("_", " ").title(), tool.get("description") or tool["name"]
            else:
                plugin = r.choice(self.src.plugins)
                skill_name, text = plugin["displayName"].replace("_", " ").title(), plugin.get("description") or plugin["displayName"]
            if all(s["name"] != skill_name for s in skills):
                skills.append({"id": slug(skill_name), "name": skill_name, "description": self.texts(text), "tags": self._tags()[:1]})
        name = self._name(skills[0]["name"] + " agent")
        description = self._description(f"An agent that can {', '.join(s['name'].lower() for s in skills[:3])}.")
        entry: dict[str, Any] = {
            "identifier": self._identifier("agent", name),
            "displayName": name,
            "type": A2A,
            "description": description,
            "data": {"name": name, "description": description, "version": "1.0.0", "skills": skills},
        }
        if r.random() < 0.4:
            entry["representativeQueries"] = self._queries(r.randint(2, 3))
        return self._common(entry, "a2a")

    def _seed(self) -> dict[str, Any]:
        r = self.rng
        seed = r.choice(self.src.seeds)
        name = self._name(seed["displayName"])
        description = self._description(seed["description"])
        data = {k: v for k, v in (seed.get("data") or {}).items() if k in ("repository", "packages", "remotes")}
        entry = {
            "identifier": self._identifier("server", name),
            "displayName": name,
            "type": MCP,
            "description": description,
            "data": {"name": name, "description": description, **data},
        }
        return self._common(entry, "mcp-registry-seed")

    # -- stream ---------------------------------------------------------------------------------
    def next(self) -> dict[str, Any]:
        pick = self.rng.random()
        entry = self._mcp() if pick < 0.45 else self._openapi() if pick < 0.70 else self._a2a() if pick < 0.85 else self._seed()
        self.count += 1
        return entry

    def entries(self, n: int) -> list[dict[str, Any]]:
        return [self.next() for _ in range(n)]

    def more(self, n: int) -> list[dict[str, Any]]:
        """The next n entries of the stream: new agents that are not in the catalog generated so far."""
        return self.entries(n)


def changed(entry: dict[str, Any], n: int) -> dict[str, Any]:
    """A realistic update of a stored entry: new description and one tool/skill/query text, newer updatedAt."""
    out = json.loads(json.dumps(entry))
    out["description"] = f"{out.get('description', '')} Updated in release {n}."
    out["updatedAt"] = f"2026-02-{1 + n % 28:02d}T12:00:00Z"
    data = out.get("data") or {}
    for key in ("tools", "skills"):
        if data.get(key):
            data[key][0]["description"] = f"{data[key][0].get('description', '')} Now supports pagination (v{n})."
            break
    else:
        if out.get("representativeQueries"):
            out["representativeQueries"][0] += f" Please answer in under {n + 50} words."
    return out


if __name__ == "__main__":  # quick look: python bench/synth.py 5
    import sys

    gen = Generator(Sources.load(Path(__file__).resolve().parent.parent.parent / "shared"))
    for e in gen.entries(int(sys.argv[1]) if len(sys.argv) > 1 else 3):
        print(json.dumps({k: v for k, v in e.items() if k != "data"}, ensure_ascii=False)[:600])
