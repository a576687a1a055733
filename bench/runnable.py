"""How much of the bundled snapshot ard-mcp can run here, and why the rest cannot (issue #54's target: at
least 60%, and every MCP reference server).

    python bench/runnable.py [--snapshot ard_mcp/data/public-mcp-servers.snapshot.xz] [--json FILE]

An entry is runnable when `packages.specs.package_of` gives it an npm or PyPI package spec: what `call_agent`
installs and starts in the sandbox with no more than the person's approval. The seed's `unknown` registry,
which the installer resolves by asking both registries at call time, is counted apart, and so are entries
that run elsewhere (a remote endpoint `call_agent` reaches over HTTP). The rest are counted by the reason
`package_of` gives (container image only, no package, a launcher's arguments, ...). The MCP project's
reference servers (current and archived, as its README lists them) are listed one by one.

This reads the snapshot only; whether the packages install and answer is `bench/package_sample.py`'s.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from ard_mcp.index import snapshot  # noqa: E402
from ard_mcp.packages.specs import PackageSpec, package_of  # noqa: E402

_REFERENCE = ("reference-servers", "archived")  # the README sections' keywords (build_snapshot.slug)


def kind(entry: dict[str, Any]) -> tuple[str, str]:
    """(kind, what): `package` with its key, `unknown-registry`, `remote`, or why it cannot run here."""
    found = package_of(entry)
    if isinstance(found, PackageSpec):
        return ("package" if found.registry != "unknown" else "unknown-registry"), found.key()
    if (entry.get("data") or {}).get("remotes"):
        return "remote", str(entry["data"]["remotes"][0].get("url"))
    return found.kind, found.reason


def reference(entry: dict[str, Any]) -> bool:
    data = entry.get("data") or {}
    url = str((data.get("repository") or {}).get("url") or "").lower()
    return "github.com/modelcontextprotocol/servers" in url and bool(set(data.get("keywords") or []) & set(_REFERENCE))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--snapshot", type=Path, default=snapshot.BUNDLED)
    parser.add_argument("--json", type=Path, help="write each entry's kind and what to this file")
    args = parser.parse_args()
    entries = snapshot.read(args.snapshot).entries
    kinds = {e["identifier"]: kind(e) for e in entries}
    counts = Counter(k for k, _ in kinds.values())
    total = len(entries)
    print(f"{args.snapshot.name}: {total} servers")
    for name, count in counts.most_common():
        print(f"  {name:<18} {count:>5}  {count / total:6.1%}")
    runnable = counts["package"]
    verdict = "PASS" if runnable >= 0.6 * total else "FAIL"
    print(f"runnable here (an npm or PyPI package): {runnable} of {total} = {runnable / total:.1%} (target 60%: {verdict})")
    print(f"  with the unknown registry's: {runnable + counts['unknown-registry']} = {(runnable + counts['unknown-registry']) / total:.1%}")
    print(f"  usable through ard-mcp (a package, or a remote it calls): {(runnable + counts['remote']) / total:.1%}")
    print("the MCP reference servers:")
    listed = [e for e in entries if reference(e)]
    for entry in sorted(listed, key=lambda e: e["identifier"]):
        what, detail = kinds[entry["identifier"]]
        print(f"  {entry['displayName']:<22} {what:<16} {detail}")
    print(f"  runnable: {sum(kinds[e['identifier']][0] == 'package' for e in listed)} of {len(listed)}")
    if args.json:
        args.json.write_text(json.dumps({i: {"kind": k, "what": w} for i, (k, w) in sorted(kinds.items())}, indent=1) + "\n")


if __name__ == "__main__":
    main()
