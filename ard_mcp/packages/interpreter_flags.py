"""Which runtime arguments an entry may give the interpreter that starts its package (node for npm, Python for
PyPI), before the package's own program.

A runtime argument goes to the interpreter, not to the server, and some make the interpreter run other code
than the package's: Python's `-c CODE` and `-m MODULE` (ard-mcp starts a PyPI server as `python -I -S -B
[runtime arguments] -c ENTRY`, and Python runs the first `-c` it meets), `-i` (read code from stdin, which
is the MCP channel), a script or `-` before ours; node's `-e`/`--eval`, `-p`/`--print`, `-r`/`--require`,
`--import`, `--loader`, `--env-file` (it may set `NODE_OPTIONS`), `--inspect*` (a debugger anyone who can
reach its port drives), a script before ours. A registrant's entry naming an approved package with `-c
CODE` ran its own code with the approval's network access and secret (issue #53). These are refused unless
the operator allows them (`--allow-interpreter-code`); a positional item is refused unless it is the value
of an option known to take one (`-X dev`, `-W ignore`, `--title NAME`), since an interpreter reads any
other as the program to run. Short options cluster in both (`-Bc CODE`, `-pe CODE`), so each letter counts.
"""

from __future__ import annotations

_PYTHON_CODE = frozenset("cmi")  # short options that run other code (or read it from stdin)
_PYTHON_VALUED = frozenset({"--check-hash-based-pycs"})  # long options taking a value (-X and -W: below)
_NODE_CODE_SHORT = frozenset("eprid")  # -e -p -r -i; -d is no option of node's: refused rather than guessed at
_NODE_CODE_LONG = (
    "--eval",
    "--print",
    "--require",
    "--import",
    "--loader",
    "--experimental-loader",
    "--env-file",
    "--env-file-if-exists",
    "--inspect",
    "--inspect-brk",
    "--inspect-wait",
    "--inspect-port",
    "--debug-port",
    "--interactive",
    "--experimental-policy",
    "--run",
    "--test",
    "--watch",
    "--watch-path",
    "--snapshot-blob",
    "--build-snapshot",
    "--experimental-sea-config",
    "--openssl-config",
)
_NODE_VALUED = frozenset(
    {"-C", "--conditions", "--title", "--max-old-space-size", "--max-semi-space-size", "--stack-size", "--unhandled-rejections"}
    | {"--dns-result-order", "--disable-warning", "--max-http-header-size"}
)


def _python(item: str) -> tuple[bool, bool]:
    """Whether the option `item` makes Python run other code, and whether the next item is its value."""
    if item.startswith("--"):
        return False, item in _PYTHON_VALUED
    letters = item[1:]
    for i, letter in enumerate(letters):
        if letter in _PYTHON_CODE:
            return True, False
        if letter in "XW":  # the rest of the item is its value, else the next item is
            return False, i == len(letters) - 1
    return False, False


def _node(item: str) -> tuple[bool, bool]:
    """Whether the option `item` makes node run other code, and whether the next item is its value."""
    name = item.split("=", 1)[0]
    if item.startswith("--"):
        runs = any(name == flag or name.startswith(flag + "-") for flag in _NODE_CODE_LONG)
    else:
        runs = any(letter in _NODE_CODE_SHORT for letter in name[1:])
    return runs, "=" not in item and name in _NODE_VALUED


def refused(registry: str, arguments: tuple[str, ...]) -> str | None:
    """Why the runtime `arguments` of a `registry` ("npm": node, "pypi": Python) package may not be given, or None."""
    read, interpreter = (_node, "node") if registry == "npm" else (_python, "Python")
    takes_value = False
    for item in arguments:
        if takes_value:
            takes_value = False
            continue
        if item in ("-", "--") or not item.startswith("-"):
            return f"runtime argument {item!r} would be read by {interpreter} as the program to run, in place of the package's"
        runs_code, takes_value = read(item)
        if runs_code:
            return f"runtime argument {item!r} makes {interpreter} run code other than the package's"
    return None
