"""What installing ard-mcp costs, where the weight comes from, and how long a fresh server takes to answer.

1. Install: the wheel (`pip wheel . --no-deps`, or `--wheel`) into a fresh virtual environment with pip, timed
   (pip's cache as it is on the machine; `--no-cache` for a cold one); the environment's size on disk and its
   number of distributions.
2. Where it comes from: every distribution's size (its RECORD's files) and what pulls it in. Each of
   ard-mcp's direct requirements is charged with what it alone brings (reached from no other direct
   requirement), and the table says what it shares with the others. Read from the installed metadata by
   the new environment's own Python, so it is the install a user gets, markers and all.
3. First call over stdio, `runs` times: a fresh `ard-mcp serve` (the new environment's, byte-compiled by pip as
   every install is) on a data directory that already holds the bundled snapshot (its first start adds it,
   which is not timed), spoken to in raw JSON-RPC lines: spawn to `initialize` answered, to `tools/list`
   answered, and to the first `search_agents` answered; and the server's own CPU time at that answer (from
   /proc), which a busy machine changes far less than the wall time. Median and best of the runs.
4. Import cost of the heavy packages in that environment: CPU seconds of `python -c "import X"` less a bare
   interpreter's, best of 3.

    python bench/install_weight.py [--wheel DIST.whl] [--runs 7] [--no-cache] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
MIB = 1024 * 1024

# Run by the new environment's Python: every distribution with its size and its requirements (markers
# evaluated there; extras only where ard-mcp's own requirement asks for them).
_INVENTORY = r"""
import json, re
from importlib import metadata
from pip._vendor.packaging.requirements import Requirement

def key(name): return re.sub(r"[-_.]+", "-", name).lower()

def needed(name, extras):
    found = []
    for line in metadata.distribution(name).requires or ():
        req = Requirement(line)
        if req.marker is None or any(req.marker.evaluate({"extra": e}) for e in ["", *extras]):
            found.append((key(req.name), tuple(sorted(req.extras))))
    return found

def closure(name, extras=()):
    todo, seen = [(name, tuple(extras))], set()
    while todo:
        item = todo.pop()
        if item in seen:
            continue
        seen.add(item)
        try:
            todo += needed(*item)
        except metadata.PackageNotFoundError:
            pass
    return sorted({n for n, _ in seen if n in sizes})

sizes = {}
for dist in metadata.distributions():
    size = 0
    for file in dist.files or ():
        try:
            size += file.locate().stat().st_size
        except OSError:
            pass
    sizes[key(dist.metadata["Name"])] = size
direct = needed("ard-mcp", [])
print(json.dumps({"sizes": sizes, "mine": closure("ard-mcp"), "reached": {n: closure(n, e) for n, e in direct}}))
"""


def run(command: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, check=True, **kwargs)


def disk_size(path: Path) -> int:
    """Bytes the files under `path` take (apparent sizes; hard links once)."""
    seen: set[tuple[int, int]] = set()
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            stat = os.lstat(os.path.join(root, name))
            if (stat.st_dev, stat.st_ino) not in seen:
                seen.add((stat.st_dev, stat.st_ino))
                total += stat.st_size
    return total


def install(wheel: Path, venv: Path, cold: bool) -> float:
    run([sys.executable, "-m", "venv", str(venv)])
    command = [str(venv / "bin" / "pip"), "install", "--quiet", "--disable-pip-version-check", str(wheel)]
    started = time.perf_counter()
    run(command + (["--no-cache-dir"] if cold else []), timeout=1800)
    return time.perf_counter() - started


def weight(venv: Path) -> None:
    found = json.loads(run([str(venv / "bin" / "python"), "-c", _INVENTORY]).stdout)
    sizes: dict[str, int] = found["sizes"]
    reached = {name: set(names) for name, names in found["reached"].items()}
    direct, mine = list(reached), set(found["mine"])
    print(
        f"distributions: {len(sizes)} in the environment, {len(mine)} of them ard-mcp and what it requires "
        f"({sum(sizes[d] for d in mine) / MIB:.0f} MiB); the rest is the environment's own (pip, setuptools)"
    )
    print(f"  {'direct requirement':<24} {'brings':>6} {'MiB':>7}   {'its alone':>9} {'MiB':>7}   biggest of its own (MiB)")
    rows = []
    for name in direct:
        others = set().union(*(reached[d] for d in direct if d != name))
        alone = reached[name] - others
        rows.append((sum(sizes[d] for d in alone), name, alone))
    shared = mine - {"ard-mcp"} - set().union(*(alone for _, _, alone in rows))
    for alone_size, name, alone in sorted(rows, reverse=True):
        everything = reached[name]
        biggest = sorted(alone, key=lambda d: -sizes[d])[:4]
        named = ", ".join(f"{d} {sizes[d] / MIB:.0f}" for d in biggest if sizes[d] >= MIB / 2)
        print(
            f"  {name:<24} {len(everything):>6} {sum(sizes[d] for d in everything) / MIB:>7.1f}"
            f"   {len(alone):>9} {alone_size / MIB:>7.1f}   {named}"
        )
    print(f"  {'(shared by several)':<24} {len(shared):>6} {sum(sizes[d] for d in shared) / MIB:>7.1f}")
    print(f"  {'ard-mcp itself':<24} {1:>6} {sizes['ard-mcp'] / MIB:>7.1f}   (the two bundled models and the snapshot)")
    print("  the 12 biggest distributions:")
    for name in sorted(mine, key=lambda d: -sizes[d])[:12]:
        by = sorted(d for d in direct if name in reached[d])
        print(f"    {name:<28} {sizes[name] / MIB:>7.1f} MiB   pulled in by {', '.join(by) if by else '(ard-mcp)'}")


class Server:
    """One fresh `ard-mcp serve` over stdio."""

    def __init__(self, command: list[str], env: dict[str, str]) -> None:
        self.started = time.perf_counter()
        pipe = subprocess.PIPE
        self.process = subprocess.Popen(command, stdin=pipe, stdout=pipe, stderr=subprocess.DEVNULL, text=True, env=env)
        self.next_id = 0

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, **({"params": params} if params else {})})
        assert self.process.stdout is not None
        while True:
            line = self.process.stdout.readline()
            assert line, "the server closed its stdout"
            message: dict[str, Any] = json.loads(line)
            if message.get("id") == self.next_id:
                return message

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def cpu(self) -> float:
        """The server's user + system CPU seconds so far."""
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


def first_call(venv: Path, data_dir: Path, query: str) -> dict[str, float]:
    env = {**os.environ, "ARD_MCP_LOG_LEVEL": "WARNING", "PATH": f"{venv / 'bin'}:{os.environ['PATH']}"}
    server = Server([str(venv / "bin" / "ard-mcp"), "serve", "--data-dir", str(data_dir)], env)
    try:
        init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}
        server.request("initialize", init)
        out = {"initialize": server.elapsed()}
        server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        server.request("tools/list")
        out["tools/list"] = server.elapsed()
        answer = server.request("tools/call", {"name": "search_agents", "arguments": {"text": query}})
        out["first search_agents"] = server.elapsed()
        out["server CPU at that answer"] = server.cpu()
        assert not answer["result"].get("isError"), answer
        return out
    finally:
        server.close()


def first_calls(venv: Path, runs: int) -> None:
    query = "read and write files in a local folder"
    with tempfile.TemporaryDirectory() as data:
        first_call(venv, Path(data), query)  # the data directory's first start adds the bundled snapshot: not timed
        samples = []
        for _ in range(runs):
            time.sleep(0.5)  # the previous server's data directory released, its CPU settled
            samples.append(first_call(venv, Path(data), query))
    print(f"first call over stdio, a fresh `ard-mcp serve` each time ({runs} runs; seconds from spawn; median / best):")
    for what in samples[0]:
        values = [s[what] for s in samples]
        print(f"  {what:<28} {statistics.median(values):6.2f} / {min(values):5.2f}")


def import_costs(venv: Path) -> None:
    python = str(venv / "bin" / "python")

    def cpu(code: str) -> float:
        best = float("inf")
        for _ in range(3):
            before = os.times()
            subprocess.run([python, "-c", code], check=True)
            after = os.times()
            best = min(best, after.children_user + after.children_system - before.children_user - before.children_system)
        return best

    bare = cpu("pass")
    print("import cost in the new environment (CPU seconds of a fresh interpreter importing it, less a bare one's; best of 3):")
    for label, code in (
        ("ard-mcp serve before its handshake", "import ard_mcp.assembly.cli, ard_mcp.surfaces.mcp.server"),
        ("  of which the mcp SDK", "import mcp.server.mcpserver"),
        ("the registry (numpy, SQLite, ranking)", "import ard_mcp.registry"),
        ("chromadb", "import chromadb"),
        ("onnxruntime", "import onnxruntime"),
        ("tokenizers", "import tokenizers"),
    ):
        print(f"  {label:<40} {cpu(code) - bare:5.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--wheel", type=Path, help="install this wheel (default: build one from this checkout)")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--no-cache", action="store_true", help="install without pip's cache (every download timed)")
    parser.add_argument("--keep", type=Path, help="make the virtual environment here and keep it")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ard-mcp-install-"))
    try:
        wheel = args.wheel
        if wheel is None:
            started = time.perf_counter()
            run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(work / "dist"), str(REPO)], timeout=600)
            (wheel,) = (work / "dist").glob("ard_mcp-*.whl")
            print(f"wheel: {wheel.name}, {wheel.stat().st_size / MIB:.1f} MiB, built in {time.perf_counter() - started:.1f} s")
        venv = args.keep or work / "venv"
        seconds = install(wheel, venv, args.no_cache)
        cache = "without pip's cache" if args.no_cache else "with pip's cache as this machine has it"
        print(f"install: {seconds:.1f} s ({cache}); the environment: {disk_size(venv) / MIB:.0f} MiB on disk")
        weight(venv)
        import_costs(venv)
        first_calls(venv, args.runs)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
