"""Entry text is third-party text that reaches a host model: what the registry removes from it, and what it
recognises as text aimed at a model rather than at the person choosing an agent.

Every display name, description, tag, capability, representative query and inline tool or skill text of an
entry is written by its publisher, and the registry hands it to a host model as search results and
evidence. Two things follow:

* **Invisible characters** carry text a person reviewing a catalog cannot see but a model reads (Unicode
  tag characters spell ASCII invisibly, "ASCII smuggling"; runs of variation selectors encode bytes after
  one emoji), or make text render as something else (bidirectional overrides, "Trojan Source"), or split a
  word so a filter misses it (`ig\\u200bnore`). `invisible.strip_entry` removes them; the lenient reader
  (`leniency.read_entry`) applies it to every text field a model reads and says so in one warning per
  entry. Identifiers and URLs are never rewritten: an identifier with such a character is refused by its
  own rule. The five top-level text fields still refuse C0 controls and bidi overrides outright
  (`limits`), as before; everywhere else they are removed.
* **Text aimed at a model**: instruction overrides, chat-template and tool-call syntax, hidden prompts
  that tell the reader to prefer this entry, and keyword stuffing. `model_directed` names what an entry
  contains; the index stores it as a registry-owned value no publisher can set (`filter_values`), the
  ranking demotes a flagged entry, and its evidence carries the warning.

The detectors are deliberately narrow: each pattern is a phrase whose only use in a catalog is to steer a
model. Of the 6,263 real entries the registry accepts from the benchmark catalogs (the shared 740 and the
built Seal-Tools, ToolAlpaca and mcp-bench catalogs; 37,649 texts, tool descriptions included) none is
flagged; `tests/test_untrusted_text.py` has the positive and negative examples and checks the shared
catalogs. A detector sees text after `normalize`: invisible characters removed, NFKC (full-width
`ｉｇｎｏｒｅ` is `ignore`), case folded, spaces collapsed within a line. Homoglyphs from other
scripts (a Cyrillic `і` in "ignore") are not folded: a known gap.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ard_mcp.formats.invisible import model_texts, strip_entry, strip_invisible

__all__ = [  # the stripping lives in `invisible`; callers find all of the untrusted-text rules here
    "cap_keyword_runs",
    "hidden_prompt",
    "instruction_override",
    "keyword_stuffing",
    "model_directed",
    "model_texts",
    "strip_entry",
    "strip_invisible",
    "template_syntax",
    "text_findings",
]

# -- text aimed at a model ------------------------------------------------------------------------------------


def normalize(text: str) -> str:
    """What the detectors read: invisible characters removed, NFKC, case folded, spaces collapsed within each
    line (line starts stay: a chat turn marker is one at the start of a line)."""
    clean, _ = strip_invisible(text)
    clean = (clean if clean.isascii() else unicodedata.normalize("NFKC", clean)).casefold()  # ASCII is NFKC already
    if "\n" not in clean and "\r" not in clean:
        return " ".join(clean.split())
    return "\n".join(line for line in (" ".join(part.split()) for part in clean.splitlines()) if line)


_ALL = r"(?:all|any|every|each|the|your|my|of|these|those|such|previous|prior)"
_BEFORE = r"(?:previous|prior|preceding|above|earlier|former|foregoing|original|initial|system|existing|other)"
_RULES = (
    r"(?:instructions?|prompts?|directions?|directives?|rules|guidelines|messages|context|commands|constraints|guidance|polic(?:y|ies))"
)
_AI = r"(?:ai|a\.i\.|llms?|language models?|large language models?|assistants?|chatbots?|chatgpt|gpt-?\d*|claude|gemini|copilot)"
_ENTRY = r"(?:this|our|me|us)"
_KIND = r"(?:agents?|tools?|servers?|plugins?|skills?|apps?|services?|results?|options?|alternatives?|competitors?)"

#: Phrases that only make sense as an attempt to replace the instructions a model is following.
OVERRIDES: tuple[str, ...] = (
    rf"\b(?:ignore|disregard|forget|override|bypass|neglect)\s+(?:{_ALL}\s+)*{_BEFORE}\s+(?:\w+\s+)?{_RULES}\b",
    r"\b(?:ignore|disregard|forget)\s+(?:everything|anything|all)\s+(?:above|before|previously|said|you\s+(?:were|have\s+been)\s+told)\b",
    r"\byou\s+are\s+now\s+(?:(?:an?\s+)?(?:\w+\s+){0,2}(?:ai|assistant|chatbot|bot|model|dan)\b|(?:acting|operating)\s+as|in\s+\w+\s+mode|unrestricted|jailbroken)",
    r"\bfrom\s+now\s+on,?\s+(?:you|the\s+(?:assistant|model|ai))\s+(?:must|shall|are\s+to|will\s+(?:only|always|never))\b",
    r"\b(?:reveal|print|repeat|leak|ignore|disregard|override|bypass)\s+(?:the\s+|your\s+|my\s+)?system\s+prompts?\b",
    r"(?:^|\n|[\[#(<])\s*system\s+(?:prompt|message|instructions?)\s*[:\]>)]",
    r"\b(?:new|real|secret|hidden)\s+instructions?\s*[:\-]",
    r"\b(?:here\s+are|these\s+are|follow|obey)\s+your\s+(?:new\s+|real\s+|updated\s+)?instructions\b",
)

#: Chat-template tokens and tool-call syntax: text meant to be parsed as a turn or a call, not read.
TEMPLATES: tuple[str, ...] = (
    r"<\|[a-z_]{2,32}\|>",  # <|im_start|>, <|endoftext|>, <|eot_id|>, <|start_header_id|>, ...
    r"</?\s*(?:tool_calls?|function_calls?|tool_use|tool_result|function_results?)\s*>",
    r"<(?:antml:)?invoke\s+name\s*=",
    r"<function\s*=",
    r"\[/?inst\]",
    r"<</?sys>>",
    r"<(?:start|end)_of_turn>",
    r'\{\s*"(?:name|tool|tool_name|function)"\s*:\s*"[^"]{1,100}"\s*,\s*"(?:arguments|parameters|args)"\s*:',
    r"(?:^|\n)\s*(?:human|assistant)\s*:\s",
)

#: Text hidden from the person reading a catalog, or addressed to the model reading it, asking it to favour
#: this entry or keep something from the user.
HIDDEN: tuple[str, ...] = (
    r"<!--(?:(?!-->)[\s\S])*?[a-z]{2,}\s+[a-z]{2,}\s+[a-z]{2,}",  # an HTML comment with words in it (closed or not)
    r"<\s*/?\s*(?:important|system|secret|hidden|instructions?|admin|override)\s*>",
    rf"\b(?:note|message|memo|attention|reminder|instructions?)\s+(?:to|for)\s+(?:the\s+|any\s+|all\s+)?(?:\w+\s+)?{_AI}\s*[:,!\-]",
    r"\bif\s+you\s+are\s+(?:an?\s+)?(?:ai|llm|large\s+language\s+model|language\s+model|assistant|chatbot|ai\s+\w+)\b",
    rf"\b(?:always|only|must|should)\s+(?:recommend|prefer|favou?r|promote|rank)\s+{_ENTRY}\b",
    rf"\b(?:always|must)\s+(?:choose|select|pick|use|call)\s+{_ENTRY}\s+(?:\w+\s+){{0,2}}(?:over|instead\s+of|rather\s+than)\s+(?:any|all|every|other|the\s+other)\b",
    rf"\b(?:rank|list|put|place|position)\s+{_ENTRY}\s+(?:\w+\s+){{0,2}}(?:first|at\s+the\s+top|above\s+(?:all|any|every|other)|higher\s+than)\b",
    rf"\b(?:do\s+not|don't|never)\s+(?:recommend|suggest|mention|show|list|return|consider)\s+(?:any\s+)?(?:other|competing|alternative)\s+{_KIND}",
    rf"\b(?:ignore|disregard)\s+(?:all\s+|any\s+|the\s+)?other\s+{_KIND}",
    r"\b(?:do\s+not|don't|never)\s+(?:tell|inform)\s+the\s+user\b",
    r"\b(?:do\s+not|don't|never)\s+(?:mention|reveal|show|disclose)\s+(?:this|these|it)\s+to\s+the\s+user\b",
    r"\bwithout\s+(?:telling|informing)\s+the\s+user\b",
)

_SECRET = (
    r"(?:credentials?|passwords?|passphrases?|api[ _-]?keys?|access[ _-]?tokens?|auth(?:entication)?[ _-]?tokens?|tokens|secrets?"
    r"|private[ _-]?keys?|ssh[ _-]?keys?|cookies|session[ _-]?ids?|env(?:ironment)?[ _-]?variables|\.env\s+files?)"
)
#: Text asking the model to hand over what the person never meant an agent to have: their secrets, or the files
#: where hosts and tools keep them. An MCP tool's description is read by the host model before any call, the
#: place a poisoned server puts "pass the user's credentials to tool x". Only the user's secrets spoken of in
#: the third person, to the model: "pass your AWS credentials" is how real descriptions address the person.
SECRETS: tuple[str, ...] = (
    rf"\b(?:pass|send|include|attach|upload|forward|post|paste|copy|leak|exfiltrate|share|provide|give|put)\s+(?:\w+\s+){{0,3}}?"
    rf"(?:the|this|that)\s+(?:user|person|human)(?:'s|’s|s'|s’)\s+(?:\w+\s+){{0,2}}?{_SECRET}\b",
    r"~/\.(?:ssh|aws|cursor|config/gcloud|kube|netrc)\b",
    r"\b(?:id_rsa|id_ed25519|claude_desktop_config\.json|mcp\.json|\.aws/credentials)\b",
)

_WORD = re.compile(r"[^\W\d_]+")
_TOKEN = re.compile(r"[^\W\d_]+|[.!?;:\n。！？]")  # words, and the marks that end a sentence
_SENTENCE_KEEP = re.compile(r"([.!?;:\n。！？]+)")
#: English function words: prose has one every few words, a keyword list has none. `and` / `or` are not
#: among them: "a and b and c" is still a list.
FUNCTION_WORDS = frozenset(
    """a about above after against all am an any are as at be because been before being below between both but by can
    could did do does doing down during each few for from further had has have having he her here him his how i if in
    into is it its me more most my no nor not of off on once only other our out over own same she should so some such
    than that the their them then there these they this those through to too under until up very was we were what when
    where which while who whom why will with would you your also may might must shall us per via without within""".split()
)
_CONNECTORS = frozenset({"and", "or"})
#: A run of this many content words in a row, within one sentence, is a keyword list. The longest run in a
#: real description, name or representative query of the benchmark catalogs is 20 (a course platform's
#: marketing sentence); a keyword-stuffed description runs to dozens.
STUFFED_RUN = 25
#: One content word making this share of a text's content words, at least `STUFFED_REPEATS` times, is
#: stuffing. No real description, name or query repeats a word 8 times; the highest share is 62%, 5 times
#: ("sha" in a list of SHA hash kinds), and the most repeats anywhere are 22 in a 300-word tool description.
STUFFED_SHARE = 0.4
STUFFED_REPEATS = 8
#: More tags, or more capabilities no inline tool or skill describes, than this is a keyword list: real
#: entries have at most 3 tags and 1 such capability (an A2A card's skill tags can add a few dozen).
STUFFED_KEYWORDS = 32


def _latin(word: str) -> bool:
    return word.isascii() or all(ord(c) < 0x250 for c in word)


def keyword_run(text: str) -> int:
    """The longest run of consecutive Latin-script content words within one sentence of `text` (normalised).
    Prose breaks a run every few words with a function word; a pasted keyword list does not. A word of
    another script breaks a run too: this rule measures only what it was measured on."""
    best = run = 0
    for token in _TOKEN.findall(text):
        if not token[0].isalpha() or not _latin(token) or token in FUNCTION_WORDS:
            run = 0  # a sentence's end, another script, a function word
        elif len(token) > 1 and token not in _CONNECTORS:
            run += 1
            best = max(best, run)
    return best


def cap_keyword_runs(text: str, limit: int = STUFFED_RUN - 1) -> str:
    """`text` without the words of a keyword run beyond its first `limit` (see `keyword_run`), for the lexical
    index: a pasted keyword list then matches no more query terms than a sentence could. Prose is returned
    unchanged (no real description, name or query has a run over 20 words)."""
    if keyword_run(normalize(text)) <= limit:
        return text
    parts = _SENTENCE_KEEP.split(text)  # sentence, its end, sentence, its end, ..., last sentence
    out: list[str] = []
    for sentence, end in zip(parts[0::2], [*parts[1::2], ""], strict=True):
        run = 0
        kept: list[str] = []
        for token in sentence.split():
            words = _WORD.findall(unicodedata.normalize("NFKC", token).casefold())
            if not words or any(not _latin(w) or w in FUNCTION_WORDS for w in words):
                run = 0
            elif any(len(w) > 1 and w not in _CONNECTORS for w in words):
                run += 1
                if run > limit:
                    continue
            kept.append(token)
        out.append(" ".join(kept) + end)
    return " ".join(out).strip()


def repeated_word(text: str) -> tuple[str, int] | None:
    """The content word of `text` (normalised) repeated `STUFFED_REPEATS` times or more and making at least
    `STUFFED_SHARE` of its content words, if any."""
    words = [w for w in _WORD.findall(text) if len(w) > 1 and w not in FUNCTION_WORDS and w not in _CONNECTORS]
    if len(words) < STUFFED_REPEATS:
        return None
    word, count = Counter(words).most_common(1)[0]
    return (word, count) if count >= STUFFED_REPEATS and count >= STUFFED_SHARE * len(words) else None


def _any_of(patterns: Sequence[str]) -> re.Pattern[str]:
    """One pattern for a group: a text is scanned once per group, not once per phrase (ingest runs every
    detector on every text of every entry)."""
    return re.compile("|".join(f"(?:{p})" for p in patterns))


_OVERRIDE, _TEMPLATE, _HIDDEN, _SECRETS = _any_of(OVERRIDES), _any_of(TEMPLATES), _any_of(HIDDEN), _any_of(SECRETS)
#: Words one of which every phrase of a group contains: a text with none of them (most texts) is not scanned
#: by the group's pattern, which costs ~20 µs a text where looking for these costs ~1. They are looked for with
#: one pattern of the group's words (`_HINTED`): the bundled snapshot's 2,215 texts took 126 ms through the four
#: groups as a generator of substring checks, 77 ms so (the same findings), a new registry's first answer waiting.
_HINTS: dict[re.Pattern[str], tuple[str, ...]] = {
    _OVERRIDE: ("ignore", "disregard", "forget", "override", "bypass", "neglect", "you are now", "from now on", "system", "instruction"),
    _TEMPLATE: ("<", "[inst", "[/inst", '"', "human", "assistant"),
    _HIDDEN: (
        *("<", "note", "message", "memo", "attention", "reminder", "instruction", "if you are", "always", "must", "should"),
        *("first", "top", "above", "higher", "not", "n't", "never", "other", "without", "only"),
    ),
    _SECRETS: ("credential", "password", "passphrase", "key", "token", "secret", "cookie", "session", "env", "~/.", "id_", ".json"),
}


_HINTED = {pattern: re.compile("|".join(re.escape(hint) for hint in hints)) for pattern, hints in _HINTS.items()}


def _phrase(pattern: re.Pattern[str], normalized: str) -> str | None:
    if not _HINTED[pattern].search(normalized):
        return None
    found = pattern.search(normalized)
    return " ".join(found[0].split())[:60] if found else None


def instruction_override(text: str) -> str | None:
    """The phrase of `text` that tries to replace a model's instructions ("ignore previous instructions",
    "you are now", "new instructions:"), if any. `text` is normalised first."""
    return _phrase(_OVERRIDE, normalize(text))


def template_syntax(text: str) -> str | None:
    """The chat-template token or tool-call syntax in `text` (`<|im_start|>`, `<tool_call>`, `[INST]`,
    `{"name": ..., "arguments": ...}`, `<function=`), if any."""
    return _phrase(_TEMPLATE, normalize(text))


def hidden_prompt(text: str) -> str | None:
    """Text hidden from a person (an HTML comment, an `<IMPORTANT>` block) or addressed to the model telling
    it to favour this entry or keep something from the user, if any."""
    return _phrase(_HIDDEN, normalize(text))


def _stuffing(normalized: str) -> str | None:
    run = keyword_run(normalized)
    if run >= STUFFED_RUN:
        return f"a run of {run} keywords"
    repeated = repeated_word(normalized)
    return f"{repeated[0]!r} repeated {repeated[1]} times" if repeated else None


def keyword_stuffing(text: str) -> str | None:
    """Why `text` reads as a keyword list rather than a description (a long run of content words, one word
    repeated), if it does."""
    return _stuffing(normalize(text))


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def keyword_list_stuffing(entry: Mapping[str, Any]) -> str | None:
    """Why `entry`'s tags or capabilities read as keyword stuffing, if they do (see `STUFFED_KEYWORDS`)."""
    tags = entry.get("tags")
    if isinstance(tags, list) and len(tags) > STUFFED_KEYWORDS:
        return f"{len(tags)} tags"
    capabilities = entry.get("capabilities")
    if isinstance(capabilities, list) and len(capabilities) > STUFFED_KEYWORDS:
        data = entry.get("data")
        items = [item for key in ("tools", "skills") for item in _list(data.get(key) if isinstance(data, Mapping) else None)]
        named = {str(item.get("name") or item.get("id") or "").lower() for item in items if isinstance(item, Mapping)}
        loose = [c for c in capabilities if not isinstance(c, str) or c.lower() not in named]
        if len(loose) > STUFFED_KEYWORDS:
            return f"{len(loose)} capabilities no tool or skill describes"
    return None


@dataclass(frozen=True)
class Finding:
    """One reason an entry's text is aimed at a model: the kind, the field and the phrase found."""

    kind: str  # "instruction override" | "chat-template or tool-call syntax" | "hidden prompt" | "keyword stuffing"
    field: str
    detail: str

    def message(self) -> str:
        return f"text aimed at a model: {self.kind} in {self.field} ({self.detail})"


#: The fields whose prose is checked for keyword stuffing: where a publisher describes the entry in words.
#: Tool descriptions are left out: listing parameters or component names is what they are for.
_PROSE = re.compile(r"^(?:displayName|description|representativeQueries\[\d+\])$")
_DETECTORS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("instruction override", _OVERRIDE),
    ("chat-template or tool-call syntax", _TEMPLATE),
    ("hidden prompt", _HIDDEN),
    ("request for secrets", _SECRETS),
)
MAX_FINDINGS = 5


def text_findings(path: str, text: str) -> list[Finding]:
    """What of one text, at `path`, is aimed at a model: at most one finding per kind (keyword stuffing only
    in prose fields). Entry text is checked by `model_directed`; this is also what checks the evidence texts
    another registry sends with its results (`federation.screening`)."""
    normalized = normalize(text)
    found = [Finding(kind, path, detail) for kind, pattern in _DETECTORS if (detail := _phrase(pattern, normalized))]
    stuffed = _stuffing(normalized) if _PROSE.match(path) else None
    return [*found, Finding("keyword stuffing", path, stuffed)] if stuffed else found


def model_directed(entry: Mapping[str, Any]) -> list[Finding]:
    """What of `entry`'s text is aimed at a model rather than at a person choosing an agent, at most one
    finding per kind and field and `MAX_FINDINGS` in all (an empty list for an honest entry)."""
    found = [finding for path, text in model_texts(entry) for finding in text_findings(path, text)]
    listed = keyword_list_stuffing(entry)
    if listed:
        found.append(Finding("keyword stuffing", "tags" if listed.endswith("tags") else "capabilities", listed))
    return found[:MAX_FINDINGS]
