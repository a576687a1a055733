"""Which environment variable names a server description may declare for its package.

A declared variable is set in the package server's environment, and its value can come from the entry
itself (a default anyone can register). Some names change what a process does before any of its own code
runs: the dynamic loader reads `LD_PRELOAD` and its kin, glibc reads `GCONV_PATH`, `LOCPATH` and
`GLIBC_TUNABLES`, Python reads `PYTHONSTARTUP`, `PYTHONPATH` and every `PYTHON*`, node reads `NODE_OPTIONS`
(`--require`), npm reads every `npm_config_*`, bash runs `BASH_ENV`, sh runs `ENV`, Perl, Ruby and the JVM
have `PERL5OPT`, `RUBYOPT` and `JAVA_TOOL_OPTIONS`. An entry declaring `LD_PRELOAD` with a default into its
own installed wheel ran code as root on the host, in the processes that build the sandbox (issue #53). Such
names are refused outright, at registration and again at launch, whatever the sandbox does with the value:
a server that needs one is not one ard-mcp runs. Names must also be names (`[A-Za-z_][A-Za-z0-9_]*`): the
sandbox passes them to programs that read `NAME=value`.

Measured on the MCP registry seed (471 servers, 400 declared variables): 4 declare a refused name
(`PYTHONUNBUFFERED`, `PYTHONIOENCODING`, `PYTHONPATH`, `PATH`), none an invalid one. `NODE_ENV` is the one
`NODE_*` name allowed: the application reads it, node does not.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_STARTUP_PREFIXES = (  # a name starting with one of these (case-insensitive) changes how a program starts
    ("ld_", "the dynamic loader"),
    ("dyld_", "the dynamic loader"),
    ("python", "the Python interpreter"),
    ("npm_config_", "npm"),
    ("node_", "node"),  # NODE_ENV aside (`_ALLOWED`): read by the application, not by node
    ("malloc_", "the C library's allocator"),
    ("glibc_", "the C library"),
    ("perl", "Perl"),
    ("ruby", "Ruby"),
    ("java_tool_options", "the JVM"),
    ("_java_options", "the JVM"),
    ("jdk_java_options", "the JVM"),
    ("dotnet_", "the .NET runtime"),
    ("coreclr_", "the .NET runtime"),
    ("deno_", "Deno"),
    ("bun_", "Bun"),
    ("uv_", "uv"),
    ("pip_", "pip"),
    ("lua_", "Lua"),
    ("gconv_path", "the C library's character conversion"),
    ("locpath", "the C library's locales"),
    ("nlspath", "the C library's message catalogs"),
    ("hostaliases", "the C library's name resolution"),
    ("res_options", "the C library's name resolution"),
    ("localdomain", "the C library's name resolution"),
)
_STARTUP_NAMES = {  # exact names (case-insensitive)
    "bash_env": "bash",
    "env": "sh",
    "shellopts": "bash",
    "bashopts": "bash",
    "ps4": "bash",
    "ifs": "the shell",
    "cdpath": "the shell",
    "globignore": "bash",
    "prompt_command": "bash",
    "path": "every program (which programs run)",
    "home": "the sandbox (it sets it)",
    "tmpdir": "the sandbox (it sets it)",
    "lang": "the sandbox (it sets it)",
    "openssl_conf": "OpenSSL (a configuration file that can load modules)",
    "openssl_modules": "OpenSSL",
    "openssl_engines": "OpenSSL",
    "ssl_cert_file": "TLS verification",
    "ssl_cert_dir": "TLS verification",
    "node_extra_ca_certs": "TLS verification in node",
    "gem_path": "Ruby",
    "gem_home": "Ruby",
    "classpath": "the JVM",
    "electron_run_as_node": "Electron",
    "tz": "the C library's time zone (a file it loads)",
}
_ALLOWED = frozenset({"node_env"})


def refusal(name: str) -> str | None:
    """Why `name` may not be declared, or None when it may."""
    if not NAME.match(name):
        return f"{name!r} is not a variable name (letters, digits and _, not first a digit)"
    lowered = name.lower()
    if lowered in _ALLOWED:
        return None
    what = _STARTUP_NAMES.get(lowered) or next((who for prefix, who in _STARTUP_PREFIXES if lowered.startswith(prefix)), None)
    if what is not None:
        return f"{name} changes how {what} starts or behaves, so no entry may set it"
    return None


def declared_names(package: Mapping[str, Any]) -> list[str]:
    """The variable names one package of a server description declares (either spelling of the field)."""
    raw = package.get("environmentVariables", package.get("environment_variables"))
    names = (item.get("name") for item in raw if isinstance(item, Mapping)) if isinstance(raw, list) else ()
    return [name for name in names if isinstance(name, str)]


def check_server_description(data: Any, field: str) -> str | None:
    """Why the packages of the server description `data` declare a variable that may not be declared, naming
    where (`field`), or None."""
    packages = data.get("packages") if isinstance(data, Mapping) else None
    for i, package in enumerate(packages if isinstance(packages, list) else []):
        for name in declared_names(package) if isinstance(package, Mapping) else []:
            reason = refusal(name.strip())
            if reason is not None:
                return f"{field}.packages[{i}].environmentVariables: {reason}"
    return None
