"""A serving process moves what its warm-up loaded out of the cyclic garbage collector's way (`gc.freeze`), so a
full collection no longer stalls every request in flight; a process that opens and closes registries (this one)
never does."""

from __future__ import annotations

import gc
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from ard_mcp.surfaces.mcp.lazy_registry import warm_up_soon
from tests.processes import free_port, quiet_env, wait_for

FROZEN = "objects frozen out of the garbage collector's way"


def _frozen_line(stderr: Path, process: subprocess.Popen[str]) -> str:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        lines = [line for line in stderr.read_text(encoding="utf-8").splitlines() if FROZEN in line]
        if lines:
            return lines[0]
        assert process.poll() is None, stderr.read_text(encoding="utf-8")[-3000:]
        time.sleep(0.2)
    pytest.fail(f"no warm-up froze anything: {stderr.read_text(encoding='utf-8')[-3000:]}")


def _frozen_count(line: str) -> int:
    return int(line.split("warmed up: ")[1].split(maxsplit=1)[0])


@pytest.mark.parametrize("transport", ["stdio", "streamable-http"])
def test_a_serve_process_freezes_what_it_loaded(tmp_path: Path, transport: str) -> None:
    port = free_port()
    stderr = tmp_path / "stderr.log"
    data = tmp_path / "data"
    command = [sys.executable, "-m", "ard_mcp", "serve", "--data-dir", str(data), "--log-level", "DEBUG", "--transport", transport]
    if transport != "stdio":
        command += ["--port", str(port)]
    with open(stderr, "w", encoding="utf-8") as err:
        process = subprocess.Popen(command, env=quiet_env(data), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True)
        try:
            if transport != "stdio":
                wait_for(f"http://127.0.0.1:{port}/healthz", process, "ard-mcp serve")
            # the model, Chroma, the MCP SDK and the search's copy: far more than a bare interpreter's few thousand
            assert _frozen_count(_frozen_line(stderr, process)) > 20_000
        finally:
            process.terminate()
            process.communicate(timeout=30)


def test_a_warm_up_in_a_process_that_does_not_only_serve_freezes_nothing() -> None:
    before = gc.get_freeze_count()
    warmed = threading.Event()
    warm_up_soon(warmed.set, delay=0)
    assert warmed.wait(10)
    time.sleep(0.2)  # past the warm-up's last step
    assert gc.get_freeze_count() == before
