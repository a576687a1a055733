"""MCP-Bench (github.com/Accenture/mcp-bench): its 28 MCP servers as entries, its 104 tasks as queries.

* Catalog: one `application/mcp-server+json` entry per server of `mcp_servers/commands.json`
  (`urn:air:mcp-bench.example.org:server:<slug>`). The description is the README's line for the server
  ("MCP-Bench includes 28 diverse MCP servers: - [Name](upstream) - what it does"), its upstream
  repository is `metadata.homepage`, and `data` keeps the commands.json record.
* Tools: the repository holds no tool listing (utils/collect_mcp_info.py writes mcp_servers_info.json only
  when the servers are run, and that file is not committed), so each server's tools are read statically
  from the source files its command runs (`SOURCES` names them, with why where it is not obvious):
  Python `@<app>.tool()` functions (name, docstring, parameters from the signature) and
  `Tool(name=..., description=..., inputSchema=...)` records; TypeScript/JavaScript `server.tool(name,
  description, zodShape)` calls, `{name, description, inputSchema}` literals and per-tool classes or
  modules (`name`/`NAME`, `description`/`DESCRIPTION`, `inputSchema`/`SCHEMA`). This is what the server
  lists, not a guess from the tasks; template-string interpolations (`${...}`, filled at run time) are
  dropped, and a name registered twice keeps its first registration, as FastMCP does.
* Queries: every task of the three task files. The query is the task's `fuzzy_description` (the
  user-style wording; `task_description` names the tools to call step by step, so it would test string
  matching, not retrieval). `relevant` = the servers of the task's combination; kind `single-server` or
  `multi-server`, the combination type as `category`.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .common import MCP_TYPE, Dataset, Snapshot, catalog_entry, clean, identifier, json_type, labelled_query, slug, tool

NAME = "mcp-bench"
REPO = "Accenture/mcp-bench"
PUBLISHER = "mcp-bench.example.org"
SERVERS = "mcp_servers/"
COMMANDS = "mcp_servers/commands.json"
TASKS = (
    ("single-server", "tasks/mcpbench_tasks_single_runner_format.json"),
    ("multi-server", "tasks/mcpbench_tasks_multi_2server_runner_format.json"),
    ("multi-server", "tasks/mcpbench_tasks_multi_3server_runner_format.json"),
)

#: Where each server registers its tools, under mcp_servers/; a path ending in `/` means every file in it.
SOURCES: dict[str, tuple[str, ...]] = {
    "OpenAPI Explorer": ("openapi-mcp-server/index.js",),
    "Unit Converter": ("unit-converter-mcp/src/unit_converter_mcp/server.py",),
    "Wikipedia": ("wikipedia-mcp/wikipedia_mcp/server.py",),
    "Google Maps": ("mcp-google-map/src/tools/maps/",),  # one module per tool, listed by src/config.ts
    # bibliomantic_server.py imports `mcp` from the enhanced server (the other two are fallbacks)
    "Bibliomantic": ("bibliomantic-mcp-server/enhanced_bibliomantic_server.py",),
    # the modules biomcp/__init__.py imports that register tools on `mcp_app` (metrics_handler is not imported)
    "BioMCP": ("biomcp/src/biomcp/router.py", "biomcp/src/biomcp/thinking_tool.py", "biomcp/src/biomcp/individual_tools.py"),
    "Call for Papers": ("call-for-papers-mcp/call-for-papers-mcp-main/server.py",),
    "Car Price Evaluator": ("car-price-mcp-main/server.py",),
    "Context7": ("context7-mcp/src/index.ts",),
    "DEX Paprika": ("dexpaprika-mcp/src/index.js",),
    "FruityVice": ("fruityvice-mcp/server.py",),
    "Game Trends": ("game-trends-mcp/server.py",),
    "Huge Icons": ("hugeicons-mcp-server/src/index.ts",),
    "Hugging Face": ("huggingface-mcp-server/src/huggingface/server.py",),
    "Math MCP": ("math-mcp/src/index.ts",),
    "NixOS": ("mcp-nixos/mcp_nixos/server.py",),
    "OSINT Intelligence": ("mcp-osint-server/mcp_osint_server/mcp_osint_server/main.py",),
    "Reddit": ("mcp-reddit/src/mcp_reddit/reddit_fetcher.py",),
    "National Parks": ("mcp-server-nationalparks/src/server.ts", "mcp-server-nationalparks/src/schemas.ts"),
    "Medical Calculator": ("medcalc/medcalc/__main__.py",),  # calculator.py is the library it wraps
    "Metropolitan Museum": ("metmuseum-mcp/src/tools/",),
    "Movie Recommender": ("movie-recommender-mcp/movie-reccomender-mcp/server.py",),
    "NASA Data": ("nasa-mcp/src/nasa_mcp/server.py",),  # main.py runs nasa_mcp.server
    "OKX Exchange": ("okx-mcp/src/index.ts",),
    "Paper Search": ("paper-search-mcp/paper_search_mcp/server.py",),
    # server.py imports the three modules, which register on its `mcp`
    "Scientific Computing": (
        "scientific_computation_mcp/src/server.py",
        "scientific_computation_mcp/src/linear_algebra.py",
        "scientific_computation_mcp/src/vector_calculus.py",
        "scientific_computation_mcp/src/visualization.py",
    ),
    "Weather Data": ("weather_mcp/server.py",),  # weather-mcp/ is an older copy
    "Time MCP": ("time-mcp/src/mcp_server_time/server.py",),
}

_README_SERVER = re.compile(r"^- \[(?P<name>[^\]]+)\]\((?P<url>[^)]+)\) - (?P<description>.+)$", re.MULTILINE)
_UNKNOWN = object()  # a value that is computed at run time: left out

# ---------------------------------------------------------------------------------------------------
# Python: FastMCP decorators and low-level Tool records, read with `ast` (nothing is imported or run)


def _py_value(node: ast.expr | None, names: dict[str, str]) -> Any:
    """A literal's value; f-string fields read as `{expr}`, `Enum.MEMBER.value` through `names`."""
    if node is None:
        return _UNKNOWN
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(
            "{" + ast.unparse(v.value) + "}" if isinstance(v, ast.FormattedValue) else str(v.value) if isinstance(v, ast.Constant) else ""
            for v in node.values
        )
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _py_value(node.left, names), _py_value(node.right, names)
        return left + right if isinstance(left, str) and isinstance(right, str) else _UNKNOWN
    if isinstance(node, ast.Dict):
        out = {}
        for key, value in zip(node.keys, node.values, strict=True):
            k, v = _py_value(key, names), _py_value(value, names)
            if isinstance(k, str) and v is not _UNKNOWN:
                out[k] = v
        return out
    if isinstance(node, ast.List | ast.Tuple):
        return [v for v in (_py_value(e, names) for e in node.elts) if v is not _UNKNOWN]
    if isinstance(node, ast.Attribute | ast.Name):
        return names.get(ast.unparse(node).removesuffix(".value"), _UNKNOWN)
    return _UNKNOWN


def _py_annotation(node: ast.expr | None) -> dict[str, Any]:
    """JSON Schema of a parameter annotation (`str`, `list[int]`, `Optional[x]`, `x | None`,
    `Literal[...]`, `Annotated[x, Field(description=...)]` or `Annotated[x, "description"]`)."""
    if node is None:
        return {}
    if isinstance(node, ast.Constant) and isinstance(node.value, str):  # a string annotation
        try:
            return _py_annotation(ast.parse(node.value, mode="eval").body)
        except SyntaxError:
            return {}
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):  # x | None
        sides = [s for s in (node.left, node.right) if not (isinstance(s, ast.Constant) and s.value is None)]
        return _py_annotation(sides[0]) if sides else {}
    if isinstance(node, ast.Name | ast.Attribute):
        kind = json_type(node.id if isinstance(node, ast.Name) else node.attr)
        return {"type": kind} if kind else {}
    if isinstance(node, ast.Subscript):
        base = node.value.id if isinstance(node.value, ast.Name) else node.value.attr if isinstance(node.value, ast.Attribute) else ""
        args = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
        if base in ("Optional", "Union"):
            real = [a for a in args if not (isinstance(a, ast.Constant) and a.value is None)]
            return _py_annotation(real[0]) if real else {}
        if base == "Annotated":
            schema = _py_annotation(args[0])
            for extra in args[1:]:
                if isinstance(extra, ast.Constant) and isinstance(extra.value, str):
                    schema["description"] = clean(extra.value)
                elif isinstance(extra, ast.Call):
                    described = {k.arg: _py_value(k.value, {}) for k in extra.keywords}
                    if isinstance(described.get("description"), str):
                        schema["description"] = clean(described["description"])
            return schema
        if base == "Literal":
            values = [a.value for a in args if isinstance(a, ast.Constant)]
            kind = json_type(type(values[0]).__name__) if values else None
            return {"type": kind, "enum": values} if kind else {"enum": values}
        if base.lower() in ("list", "sequence", "tuple", "set", "iterable"):
            return {"type": "array"} | ({"items": item} if (item := _py_annotation(args[0])) else {})
        kind = json_type(base)
        return {"type": kind} if kind else {}
    return {}


def _annotated_default(node: ast.expr | None) -> bool:
    """Whether `Annotated[x, Field(default=...)]` gives the parameter a default (so it is not required)."""
    if not (isinstance(node, ast.Subscript) and ast.unparse(node.value).endswith("Annotated") and isinstance(node.slice, ast.Tuple)):
        return False
    return any(isinstance(e, ast.Call) and any(k.arg in ("default", "default_factory") for k in e.keywords) for e in node.slice.elts[1:])


def _py_schema(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, Any]:
    """The input schema FastMCP derives from a tool function's signature (self, ctx and Context dropped)."""
    positional = fn.args.posonlyargs + fn.args.args
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(fn.args.defaults)) + list(fn.args.defaults)
    pairs = list(zip(positional, defaults, strict=True)) + list(zip(fn.args.kwonlyargs, fn.args.kw_defaults, strict=True))
    properties: dict[str, Any] = {}
    required = []
    for arg, default in pairs:
        annotation = ast.unparse(arg.annotation) if arg.annotation else ""
        if arg.arg in ("self", "cls", "ctx", "context") or "Context" in annotation:
            continue
        schema = _py_annotation(arg.annotation)
        needed = default is None and not _annotated_default(arg.annotation)
        if isinstance(default, ast.Call) and ast.unparse(default.func).endswith("Field"):  # x: int = Field(...)
            kwargs = {k.arg: k.value for k in default.keywords}
            description = _py_value(kwargs.get("description"), {})
            if isinstance(description, str):
                schema["description"] = clean(description)
            first = default.args[0] if default.args else None
            needed = "default" not in kwargs and "default_factory" not in kwargs and (first is None or ast.unparse(first) == "...")
        elif default is not None and (value := _py_value(default, {})) is not _UNKNOWN and value is not None:
            schema.setdefault("default", value)
        properties[arg.arg] = schema
        if needed:
            required.append(arg.arg)
    return {"type": "object", "properties": properties} | ({"required": required} if required else {})


def _enum_members(tree: ast.Module) -> dict[str, str]:
    """`Class.MEMBER` → its string value, so `Tool(name=TimeTools.CONVERT_TIME.value)` reads as a name."""
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.Assign) and isinstance(item.value, ast.Constant) and isinstance(item.value.value, str):
                    for target in item.targets:
                        if isinstance(target, ast.Name):
                            out[f"{node.name}.{target.id}"] = item.value.value
    return out


def _tool_decorator(decorator: ast.expr) -> dict[str, ast.expr] | None:
    """The keyword arguments of `@x.tool()` / `@x.tool(name=...)` / `@x.tool`, or None for another decorator."""
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    if not (isinstance(target, ast.Attribute) and target.attr == "tool"):
        return None
    return {k.arg: k.value for k in decorator.keywords if k.arg} if isinstance(decorator, ast.Call) else {}


def python_tools(source: str) -> list[dict[str, Any]]:
    """The tools a Python MCP server module registers, in source order."""
    tree = ast.parse(source)
    names = _enum_members(tree)
    found: list[tuple[int, dict[str, Any]]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for decorator in node.decorator_list:
                kwargs = _tool_decorator(decorator)
                if kwargs is None:
                    continue
                name = _py_value(kwargs.get("name"), names)
                description = _py_value(kwargs.get("description"), names)
                found.append(
                    (
                        node.lineno,
                        tool(
                            name if isinstance(name, str) else node.name,
                            description if isinstance(description, str) else ast.get_docstring(node) or "",
                            _py_schema(node),
                        ),
                    )
                )
        elif isinstance(node, ast.Call) and ast.unparse(node.func).split(".")[-1] == "Tool":
            kwargs = {k.arg: k.value for k in node.keywords if k.arg}
            name, description = _py_value(kwargs.get("name"), names), _py_value(kwargs.get("description"), names)
            schema = _py_value(kwargs.get("inputSchema"), names)
            if isinstance(name, str):
                found.append(
                    (
                        node.lineno,
                        tool(name, description if isinstance(description, str) else "", schema if isinstance(schema, dict) else None),
                    )
                )
    return [t for _, t in sorted(found, key=lambda pair: pair[0])]


# ---------------------------------------------------------------------------------------------------
# TypeScript / JavaScript: a small scanner (strings, template literals, comments, brackets), enough to
# read the literal arguments and object literals tools are declared with.

_CLOSERS = {"{": "}", "(": ")", "[": "]"}
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "v": "\v", "0": "\0"}
_JS_TOOL_CALL = re.compile(r"\.tool\(\s*")
_JS_NAME_KEY = re.compile(r"\bname\s*:\s*(?=['\"`])")
_JS_MEMBER = re.compile(r"\b(?P<key>name|NAME|description|DESCRIPTION)\s*(?::\s*string\s*)?=\s*(?=['\"`])")
_JS_SCHEMA_MEMBER = re.compile(r"\b(?:inputSchema|SCHEMA)\s*(?::[^=]+)?=\s*")
_ZOD_TYPE = re.compile(r"\bz\s*\.\s*(?:coerce\s*\.\s*)?(\w+)\s*\(")


def _js_string(src: str, i: int) -> tuple[str, int]:
    """The string literal starting at `src[i]` (a quote) and the index after it; `${...}` fields are dropped."""
    quote, i, out = src[i], i + 1, []
    while i < len(src) and src[i] != quote:
        char = src[i]
        if char == "\\" and i + 1 < len(src):
            nxt = src[i + 1]
            if nxt == "u" and re.match(r"[0-9a-fA-F]{4}", src[i + 2 : i + 6]):
                out.append(chr(int(src[i + 2 : i + 6], 16)))
                i += 6
                continue
            if nxt != "\n":  # a backslash before a newline continues the line
                out.append(_ESCAPES.get(nxt, nxt))
            i += 2
        elif quote == "`" and src.startswith("${", i):
            i = _js_skip(src, i + 1)
        else:
            out.append(char)
            i += 1
    return "".join(out), i + 1


def _js_skip(src: str, i: int) -> int:
    """The index after the token at `src[i]`: a whole string, comment or bracketed group, else one character."""
    char = src[i]
    if char in "'\"`":
        return _js_string(src, i)[1]
    if src.startswith("//", i):
        end = src.find("\n", i)
        return len(src) if end < 0 else end
    if src.startswith("/*", i):
        end = src.find("*/", i + 2)
        return len(src) if end < 0 else end + 2
    if char in _CLOSERS:
        closer, i = _CLOSERS[char], i + 1
        while i < len(src) and src[i] != closer:
            i = _js_skip(src, i)
        return i + 1
    return i + 1


def _js_space(src: str, i: int) -> int:
    while i < len(src) and (src[i].isspace() or src.startswith(("//", "/*"), i)):
        i = _js_skip(src, i) if src[i] == "/" else i + 1
    return i


def _js_text(src: str, i: int) -> tuple[str | None, int]:
    """A string expression at `src[i]`: one literal or several joined by `+`; None if there is none."""
    i = _js_space(src, i)
    if i >= len(src) or src[i] not in "'\"`":
        return None, i
    parts = []
    while True:
        text, i = _js_string(src, i)
        parts.append(text)
        after = _js_space(src, i)
        if after < len(src) and src[after] == "+" and _js_space(src, after + 1) < len(src) and src[_js_space(src, after + 1)] in "'\"`":
            i = _js_space(src, after + 1)
            continue
        return "".join(parts), i


def _js_top(src: str, start: int = 0, end: int | None = None) -> Iterator[int]:
    """Indices of `src[start:end]` outside any string, comment or bracket: where a chain's own calls are."""
    i, end = start, len(src) if end is None else end
    while i < end:
        yield i
        i = _js_skip(src, i)


def _js_split(body: str) -> list[str]:
    """The comma-separated items of an object or array body, at its top level."""
    items, last = [], 0
    for i in _js_top(body):
        if body[i] == ",":
            items.append(body[last:i])
            last = i + 1
    items.append(body[last:])
    return [item.strip() for item in items if item.strip()]


def _js_literal(text: str) -> Any:
    """A JSON-like JavaScript literal (object, array, string, number, boolean, null); anything computed is
    `_UNKNOWN` and is left out of the object or array holding it."""
    text = text.strip()
    if not text:
        return _UNKNOWN
    if text[0] in "'\"`":
        value, end = _js_text(text, 0)
        return value if _js_space(text, end) >= len(text) else _UNKNOWN
    if text[0] == "{" and _js_skip(text, 0) == len(text):
        out = {}
        for item in _js_split(text[1:-1]):
            colon = next((i for i in _js_top(item) if item[i] == ":"), None)
            if colon is None:
                continue
            key = item[:colon].strip()
            key = _js_string(key, 0)[0] if key[:1] in "'\"`" else key
            value = _js_literal(item[colon + 1 :])
            if value is not _UNKNOWN:
                out[key] = value
        return out
    if text[0] == "[" and _js_skip(text, 0) == len(text):
        return [v for v in (_js_literal(item) for item in _js_split(text[1:-1])) if v is not _UNKNOWN]
    try:
        return json.loads(text)  # numbers, true, false, null
    except json.JSONDecodeError:
        return _UNKNOWN


def _zod_property(expr: str) -> tuple[dict[str, Any], bool]:
    """(JSON Schema, required) of one zod chain, e.g. `z.number().optional().default(0).describe("Page")`."""
    top = list(_js_top(expr))
    calls = [m for i in top if (m := _ZOD_TYPE.match(expr, i))]
    kinds = [m[1] for m in calls] + [m[1] for m in _ZOD_TYPE.finditer(expr)]  # z.preprocess(..., z.number())
    kind = next((k for k in kinds if json_type(k) or k == "enum"), None)
    schema: dict[str, Any] = {}
    if kind == "enum":
        enum_call = next((m for m in _ZOD_TYPE.finditer(expr) if m[1] == "enum"), None)
        values = _js_literal(expr[enum_call.end() : _js_skip(expr, enum_call.end() - 1) - 1]) if enum_call else _UNKNOWN
        schema = {"type": "string"} | ({"enum": values} if isinstance(values, list) else {})
    elif kind:
        schema = {"type": json_type(kind)}
    optional = any(expr.startswith(call, i) for i in top for call in (".optional(", ".default(", ".nullish("))
    describe = [i for i in top if expr.startswith(".describe(", i)]
    if describe:
        text, _ = _js_text(expr, describe[-1] + len(".describe("))
        if text:
            schema["description"] = clean(text)
    return schema, not optional


def _zod_shape(body: str) -> dict[str, Any]:
    """JSON Schema of a zod object shape `{ key: z.string().describe(...), ... }` (the text inside braces)."""
    properties: dict[str, Any] = {}
    required = []
    for item in _js_split(body):
        colon = next((i for i in _js_top(item) if item[i] == ":"), None)
        if colon is None:
            continue
        key = item[:colon].strip()
        key = _js_string(key, 0)[0] if key[:1] in "'\"`" else key
        properties[key], needed = _zod_property(item[colon + 1 :])
        if needed:
            required.append(key)
    return {"type": "object", "properties": properties} | ({"required": required} if required else {})


def _js_schema(src: str, i: int, everything: str) -> dict[str, Any] | None:
    """The input schema whose expression starts at `src[i]`: a JSON-like literal, a zod shape, `z.object({...})`,
    or `zodToJsonSchema(Name)` with `Name = z.object({...})` found in `everything` (the server's files)."""
    i = _js_space(src, i)
    if src.startswith("{", i):
        end = _js_skip(src, i)
        literal = _js_literal(src[i:end])
        if isinstance(literal, dict) and literal.get("type") == "object":
            return literal
        return _zod_shape(src[i + 1 : end - 1])
    match = re.compile(r"z\s*\.\s*object\s*\(\s*\{").match(src, i)
    if match:
        return _zod_shape(src[match.end() : _js_skip(src, match.end() - 1) - 1])
    match = re.compile(r"zodToJsonSchema\(\s*(\w+)\s*\)").match(src, i)
    if match:
        named = re.search(rf"\b{match[1]}\s*=\s*z\s*\.\s*object\s*\(\s*\{{", everything)
        if named:
            return _zod_shape(everything[named.end() : _js_skip(everything, named.end() - 1) - 1])
    return None


def _js_key(src: str, i: int, key: str) -> int | None:
    """The index after `key:` if it is the next thing at `src[i]` (after a comma and space)."""
    i = _js_space(src, i)
    if src.startswith(",", i):
        i = _js_space(src, i + 1)
    match = re.compile(rf"{key}\s*:\s*").match(src, i)
    return match.end() if match else None


def js_tools(source: str, everything: str = "") -> list[dict[str, Any]]:
    """The tools a TypeScript/JavaScript MCP server file declares, in source order (see the module docstring)."""
    everything = everything or source
    found: list[tuple[int, dict[str, Any]]] = []
    for match in _JS_TOOL_CALL.finditer(source):  # server.tool("name", "description", {shape}, handler)
        name, i = _js_text(source, match.end())
        if name is None:
            continue
        i = _js_space(source, i)
        description, i = _js_text(source, i + 1) if source.startswith(",", i) else (None, i)
        i = _js_space(source, i)
        schema = _js_schema(source, i + 1, everything) if source.startswith(",", i) else None
        found.append((match.start(), tool(name, description or "", schema)))
    for match in _JS_NAME_KEY.finditer(source):  # { name: "...", description: "...", inputSchema: ... }
        name, i = _js_text(source, match.end())
        at = _js_key(source, i, "description")
        if name is None or at is None:
            continue
        description, i = _js_text(source, at)
        at = _js_key(source, i, "inputSchema")
        if description is None or at is None:
            continue  # a resource or a server's own name, not a tool
        found.append((match.start(), tool(name, description, _js_schema(source, at, everything))))
    members = {m["key"].lower(): (m.start(), _js_text(source, m.end())[0]) for m in reversed(list(_JS_MEMBER.finditer(source)))}
    if "name" in members and "description" in members:  # one tool per class or module
        schema_at = _JS_SCHEMA_MEMBER.search(source)
        schema = _js_schema(source, schema_at.end(), everything) if schema_at else None
        found.append((members["name"][0], tool(members["name"][1] or "", members["description"][1] or "", schema)))
    return [t for _, t in sorted(found, key=lambda pair: pair[0]) if t["name"]]


# ---------------------------------------------------------------------------------------------------


def server_tools(snapshot: Snapshot, server: str) -> list[dict[str, Any]]:
    """Every tool of one server, from the files `SOURCES` names; a name registered twice keeps the first."""
    paths = [p for spec in SOURCES[server] for p in (snapshot.files(SERVERS + spec) if spec.endswith("/") else [SERVERS + spec])]
    texts = {path: snapshot.text(path) for path in paths}
    everything = "\n".join(texts.values())
    tools: dict[str, dict[str, Any]] = {}
    for path, text in texts.items():
        found = python_tools(text) if path.endswith(".py") else js_tools(text, everything) if path.endswith((".js", ".ts")) else []
        for item in found:
            tools.setdefault(item["name"], item)
    return list(tools.values())


def readme_servers(readme: str) -> dict[str, tuple[str, str]]:
    """Server name → (upstream repository URL, one-line description) from the README's server list."""
    return {m["name"].strip(): (m["url"].strip(), m["description"].strip()) for m in _README_SERVER.finditer(readme)}


def _licence_text(snapshot: Snapshot) -> str:
    """The repository has no LICENSE file at this commit; its README declares Apache-2.0. The servers under
    mcp_servers/ keep their own licences, whose files are appended."""
    parts = [
        "MCP-Bench (github.com/Accenture/mcp-bench) has no LICENSE file at this commit. Its README declares the\n"
        "Apache License 2.0 (badge: https://opensource.org/licenses/Apache-2.0).\n\n"
        "The tool names and descriptions in this catalog come from the third-party MCP servers bundled under\n"
        "mcp_servers/, each under its own licence; the licence files found there follow.\n"
    ]
    for path in snapshot.files(SERVERS):
        parts_of_path = path.split("/")
        if len(parts_of_path) == 3 and re.match(r"LICEN[CS]E(\.(md|txt))?$", parts_of_path[2], re.IGNORECASE):
            parts.append(f"\n===== {path} =====\n\n{snapshot.text(path).strip()}\n")
    return "".join(parts)


def build(git_dir: Path) -> Dataset:
    snapshot = Snapshot(git_dir)
    commands: dict[str, dict[str, Any]] = snapshot.json(COMMANDS)
    listed = readme_servers(snapshot.text("README.md"))
    if set(commands) != set(SOURCES):
        raise ValueError(f"{COMMANDS} and SOURCES disagree: {sorted(set(commands) ^ set(SOURCES))}")

    ids: dict[str, str] = {}
    entries = []
    for server, command in commands.items():
        url, description = listed.get(server, (None, ""))
        ids[server] = identifier(PUBLISHER, "server", slug(server))
        tools = server_tools(snapshot, server)
        data = {"name": server, "description": description, "repository": url, "command": command, "tools": tools}
        entries.append(
            catalog_entry(
                ident=ids[server],
                name=server,
                media_type=MCP_TYPE,
                description=description,
                tags=[],
                data={k: v for k, v in data.items() if v is not None},
                source=NAME,
                homepage=url,
            )
        )

    queries = []
    for kind, path in TASKS:
        for combination in snapshot.json(path)["server_tasks"]:
            servers = combination.get("servers") or [combination["server_name"]]
            for task in combination.get("tasks") or []:
                text = task.get("fuzzy_description") or task.get("task_description") or ""
                if not text.strip() or any(s not in ids for s in servers):
                    continue
                queries.append(
                    labelled_query(f"mcpb-{task['task_id']}", text, [ids[s] for s in servers], kind, combination.get("combination_type"))
                )

    return Dataset(NAME, "MCP-Bench servers", REPO, snapshot.commit, "Apache-2.0", _licence_text(snapshot), entries, queries)
