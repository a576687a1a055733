"""CI: the installed wheel works on its own. Run by the fresh environment's Python, outside the checkout, with the
clean clone the wheel was built from as its argument.

- Every file the package ships beside its code is in the install: each tracked file under `ard_mcp/` that is not
  Python (the web page's templates and static files, the bundled snapshot) at the same place, and each under
  `models/` under `ard_mcp/bundled_model/` (pyproject's force-include), the default model (`models/tools/`) too.
- The commands a person runs first work from there: `ard-mcp ingest` of the example catalog and `ard-mcp search`
  on the default model, which finds the PDF converter first; `ard-mcp snapshot show` reads the bundled snapshot.

    .ci/check_wheel.py CLONE
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import ard_mcp
from ard_mcp.config import default_model_dir

EXPECTED_FIRST = "urn:air:paperforge.io:documents:pdf-converter"


def main() -> int:
    clone = Path(sys.argv[1]).resolve()
    installed = Path(ard_mcp.__file__).resolve().parent
    assert clone not in installed.parents, f"ard_mcp was imported from the clone ({installed}), not from the install"
    tracked = subprocess.run(["git", "-C", str(clone), "ls-files", "ard_mcp", "models"], capture_output=True, text=True, check=True)
    missing = []
    for name in tracked.stdout.splitlines():
        path = Path(name)
        if path.suffix == ".py":
            continue
        target = installed.joinpath(*path.parts[1:]) if path.parts[0] == "ard_mcp" else installed / "bundled_model" / Path(*path.parts[1:])
        if not target.is_file():
            missing.append(f"{name} (expected at {target})")
    assert not missing, "the wheel lacks files the package ships:\n  " + "\n  ".join(missing)
    model = default_model_dir().resolve()
    assert installed in model.parents and (model / "model.onnx").is_file(), f"the default model is not the bundled one: {model}"

    ard_mcp_command = str(Path(sys.executable).parent / "ard-mcp")
    with tempfile.TemporaryDirectory() as data:
        base = [ard_mcp_command]
        subprocess.run([*base, "ingest", "--data-dir", data, str(clone / "examples" / "ai-catalog.json")], check=True)
        found = subprocess.run(
            [*base, "search", "--data-dir", data, "convert a scanned PDF to text"], capture_output=True, text=True, check=True
        )
        first = json.loads(found.stdout)["results"][0]["identifier"]
        assert first == EXPECTED_FIRST, f"the search found {first} first, not {EXPECTED_FIRST}"
        subprocess.run([*base, "snapshot", "show", "--data-dir", data], check=True, stdout=subprocess.DEVNULL)
    print(
        f"wheel: {len(tracked.stdout.splitlines())} tracked files checked, the default model {model.name} bundled; ingest and search work"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
