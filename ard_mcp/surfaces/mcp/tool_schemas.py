"""The schemas `tools/list` advertises: what a host needs to call a tool and to check its answer, without what
pydantic writes for a Python reader.

A host pays for `tools/list` on every connection, before its model has asked anything. As pydantic writes them,
ard-mcp's 10 tools cost 56,993 characters (`bench/tool_surface.py`), 42,546 of them output schemas: each a copy
of the result's models with every field's title and description, the catalog entry's `$defs` repeated from
tool to tool; `search_agents` alone 16,285. Hosts validate `structuredContent` against `outputSchema` (the
SDK's client does, on every call) and show the model the input schema; neither reads a title, and no host
shows a model an output schema's descriptions. Advertised as below, the list is 11,652 characters.

- Input schemas say exactly what pydantic's do: titles are dropped, `$ref`s inlined, `anyOf [X, null]` written as
  `"type": [X, "null"]`, a `const` and an `enum` of one type merged into one `enum`, a `default` of null left out.
  Descriptions, bounds, enums and defaults stay: they are what a model reads to fill the arguments in.
- Output schemas are loosened, never tightened, so every result the full model accepts still validates: the
  result's own fields with their JSON types (an array's item type, a short enum), which fields are required,
  and nothing below that level. The server still checks each result against its full pydantic model
  (`FuncMetadata.convert_result` validates with the model, not with the schema advertised).
"""

from __future__ import annotations

from typing import Any

MAX_ENUM = 8
"""A field's enum is advertised when it is this short (`protocol`: mcp, a2a, http); a longer one costs more
than it tells a host, which then sees the field's type only."""

_JSON_TYPES = {bool: "boolean", int: "integer", float: "number", str: "string", type(None): "null"}

Schema = dict[str, Any]


def advertised_input(schema: Schema) -> Schema:
    """An input schema as pydantic writes it, said in fewer characters with the same meaning."""
    return _input(schema, schema.get("$defs", {}))


def advertised_output(schema: Schema) -> Schema:
    """An output schema that every result of the full one satisfies: the fields every result has, typed."""
    defs = schema.get("$defs", {})
    root = _resolved(schema, defs)
    required = [name for name in root.get("required", ()) if name in root.get("properties", {})]
    if not required:
        return {"type": "object"}
    return {"type": "object", "properties": {name: _field(root["properties"][name], defs) for name in required}, "required": required}


def _resolved(schema: Schema, defs: Schema) -> Schema:
    """`schema` with a `$ref` (or pydantic's one-element `allOf`) replaced by what it points at."""
    while True:
        if "$ref" in schema:
            target = defs[schema["$ref"].rsplit("/", 1)[-1]]
            schema = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
        elif len(schema.get("allOf", ())) == 1:
            schema = {**schema["allOf"][0], **{k: v for k, v in schema.items() if k != "allOf"}}
        else:
            return schema


def _input(schema: Schema, defs: Schema) -> Schema:
    schema = _resolved(schema, defs)
    out: Schema = {}
    for key, value in schema.items():
        if key in ("title", "$defs") or (key == "default" and value is None) or (key == "additionalProperties" and value is True):
            continue
        if key == "properties":
            out[key] = {name: _input(v, defs) for name, v in value.items()}
        elif key == "items" and isinstance(value, dict):
            out[key] = _input(value, defs)
        elif key == "anyOf":
            out.update(_union([_input(branch, defs) for branch in value]))
        else:
            out[key] = value
    return out


def _union(branches: list[Schema]) -> Schema:
    """`anyOf` said shorter where it can be with the same meaning: branches that are all enums (or consts) of
    one type as one enum; a nullable single type as a type list (its enum, if any, with null in it)."""
    plain = [b for b in branches if b != {"type": "null"}]
    nullable = len(plain) < len(branches)
    kinds = {b.get("type") for b in plain}
    if len(plain) > 1 and len(kinds) == 1 and all(set(b) <= {"type", "enum", "const"} and {"enum", "const"} & b.keys() for b in plain):
        plain = [{"type": kinds.pop(), "enum": [v for b in plain for v in (b["enum"] if "enum" in b else [b["const"]])]}]
    if len(plain) != 1 or not isinstance(plain[0].get("type"), str):
        return {"anyOf": branches}
    single = dict(plain[0])
    if nullable:
        single["type"] = [single["type"], "null"]
        if "const" in single:
            single["enum"] = [single.pop("const"), None]
        elif "enum" in single:
            single["enum"] = [*single["enum"], None]
    return single


def _field(schema: Schema, defs: Schema) -> Schema:
    """One field of a result: its JSON type(s), an array's item type, a short enum; `{}` (anything) where a
    branch says nothing of its type."""
    types = _types(schema, defs)
    if types is None:
        return {}
    out: Schema = {"type": types[0] if len(types) == 1 else types}
    enum = _enum(schema, defs)
    if enum is not None and len(enum) <= MAX_ENUM:
        out["enum"] = enum + ([None] if "null" in types else [])
    if "array" in types:
        items = [_resolved(branch, defs).get("items") for branch in _branches(schema, defs) if "array" in (_types(branch, defs) or ())]
        item_types = {tuple(_types(i, defs) or ()) for i in items if isinstance(i, dict)}
        if len(items) == len(item_types) == 1 and () not in item_types and not {"object", "array"} & set(found := item_types.pop()):
            out["items"] = {"type": found[0] if len(found) == 1 else list(found)}
    return out


def _branches(schema: Schema, defs: Schema) -> list[Schema]:
    schema = _resolved(schema, defs)
    union = schema.get("anyOf") or schema.get("oneOf")
    return [b for branch in union for b in _branches(branch, defs)] if union else [schema]


def _types(schema: Schema, defs: Schema) -> list[str] | None:
    """The JSON types a value of `schema` may have, in order; None when some branch allows any."""
    found: list[str] = []
    for branch in _branches(schema, defs):
        kind = branch.get("type")
        if kind is None and "const" in branch:
            kind = _JSON_TYPES.get(type(branch["const"]))
        elif kind is None and "enum" in branch:
            kinds = {_JSON_TYPES.get(type(v)) for v in branch["enum"]}
            kind = kinds.pop() if len(kinds) == 1 else None
        elif kind is None and "properties" in branch:
            kind = "object"
        if kind is None:
            return None
        found += [k for k in ([kind] if isinstance(kind, str) else kind) if k not in found]
    return found


def _enum(schema: Schema, defs: Schema) -> list[Any] | None:
    """Every value a non-null value of `schema` may take, when each of its branches lists them."""
    values: list[Any] = []
    for branch in _branches(schema, defs):
        if branch.get("type") == "null":
            continue
        if "enum" in branch:
            values += branch["enum"]
        elif "const" in branch:
            values.append(branch["const"])
        else:
            return None
    return values or None
