"""Confining a package server: the argv that starts a stdio MCP server, fetched as an npm or PyPI package,
inside bubblewrap with resource limits, so that its code cannot reach the operator's files, secrets,
processes or (unless granted) the network.

The argv, outermost first; every limit is in it because the SDK spawns it (no preexec_fn):

    env -i                                     nothing of the caller's environment
    bwrap                                      the filesystem view; pid, ipc, uts, cgroup (and net) namespaces
    setpriv --reuid UID ... (as root)          the sandbox uid, no capabilities
    bwrap --unshare-user --disable-userns      (as root; otherwise the bwrap above does this)
          --args FD                            the declared variables, read from a descriptor: set for what follows
    prlimit --data --as --nproc --cpu --nofile --fsize
    COMMAND

Nothing of an entry reaches a process that runs on the host or with privileges: `env`, the outer bwrap and
setpriv run with a fixed environment and fixed arguments, and the declared variables (names and values an
entry may choose) are set by the innermost bwrap, already the sandbox uid inside every namespace, for
prlimit and the server alone. An entry declaring `LD_PRELOAD` into its own wheel ran code as root on the host
when the values were in the launcher's environment (issue #53); such names are refused besides
(`formats.package_variables`), here too.

What it covers: the server sees the system directories (/usr and the /lib, /bin links) and a few /etc files
(`ETC`, never passwd, shadow or the rest of /etc), read-only; its package directory and runtime
directories read-only; its state directory read-write (also its HOME and working directory); a private
/tmp of `tmp_bytes`; /proc of its own pid namespace (ard-mcp and every other host process are invisible);
a minimal /dev. /root, /home, the registry's data directory, token and credential files are not there
unless they are a runtime directory, so callers bind the Python installation (the interpreter's base prefix),
never a home directory. It has no network (its own namespace: loopback only) unless `network`, no controlling
terminal (a new session: no TIOCSTI), no capabilities, cannot make user namespaces, runs as a non-root
uid, dies with ard-mcp, and is bounded in memory, processes, CPU time, open files and file size.

What it does not cover: the kernel reachable from an unprivileged process (there is no seccomp filter);
memory summed over the server's processes (each is bounded, not their total, and shared memory written
to a memfd is bounded per file by `file_bytes` only: a memory cgroup would bound the sum, and cgroups need
creating and removing around the process, which an argv cannot do); the disk its state directory fills
(each file is bounded, not their number); CPU time summed over its processes (each has `cpu_seconds`);
wall-clock time (idle servers are the lifecycle's to stop); with `network`, everything the host can reach,
its loopback services and abstract Unix sockets included; what the server answers (untrusted text, for
the rooms that read it). A server may read what the system directories hold, the kernel's /proc files,
and the argv (host paths of its directories, the names of its variables). Its state directory is its own:
ard-mcp, as root, must not open paths in it (a server can put a link there), so a log of its stderr lives
beside the directory, not in it.

Why each part, measured on Debian 12 (kernel 6.18, bwrap 0.8.0, util-linux 2.38, coreutils 9.1) as root:

- `bwrap --unshare-all` run by root maps the sandbox's uid 0 to the host's root (uid_map `0 0 1`), which
  RLIMIT_NPROC exempts and from which setpriv cannot drop (no other uid is mapped). So as root the view is
  built by a bwrap without a user namespace and `setpriv` drops to `Confinement.uid` inside it. Root must
  build it: bwrap run by another uid cannot bind what that uid cannot reach (`setpriv --reuid=61000 bwrap
  --ro-bind /root/.pyenv/versions/3.11.7 ...`: "Can't find source path: Permission denied", /root being
  0700), and the interpreter, the package cache and the state may all live under such a directory.
- bwrap makes the parents of a bind's destination 0700 (/root and /root/.pyenv read 0700 inside), which
  the sandbox uid cannot enter; `--perms 0755 --dir` makes each first (a no-op for one that exists).
- Under setpriv alone the server could still `unshare -U -r` (a user namespace of its own, with every
  capability in it: the kernel surface most recent local privilege escalations went through); the inner
  `bwrap --disable-userns` makes that fail ("No space left on device").
- RLIMIT_NPROC counts tasks (threads too) per user namespace, and `prlimit` runs inside the innermost one,
  so each server has `processes` of its own though all share the uid (two sandboxes holding 40 processes
  each under a limit of 64 both ran); node 20 runs 11 threads serving MCP, CPython 3.11 runs 3.
- Memory: RLIMIT_AS alone does not fit node, which reserves address space it never uses (VmPeak 0.7 GiB
  idle, 1.4 GiB holding 0.45 GiB, 1.5 GiB holding 0.58 GiB; under an AS limit of 1 GiB node died holding
  0.18 GiB). RLIMIT_DATA tracks what is held (VmData within 10% of VmHWM): node 20 needs about 103 MiB of
  it to answer tools/list with the MCP SDK, CPython 3.11 with the mcp package about 71 MiB, and a 2 GiB
  bytearray fails under 1 GiB. It misses shared mappings (a 2 GiB MAP_SHARED mapping was made and written
  under DATA=1 GiB), which RLIMIT_AS, set above node's reservations plus `memory_bytes`, stops. A memfd
  filled by write() escapes both; RLIMIT_FSIZE bounds each ("File too large").
- /tmp is a tmpfs, whose pages count against no rlimit: `--size` bounds it ("No space left on device").
- The declared variables reach the innermost bwrap as `--setenv NAME VALUE` items on a memfd (`--args FD`,
  NUL-separated), so a value never appears on a command line, which every local user can read in /proc,
  and never in the environment of a process outside the sandbox; the descriptor passes through env, the
  outer bwrap and setpriv unread. The caller starts `Command.argv` with `Command.environment` and
  `pass_fds=Command.pass_fds`, then calls `Command.close`.
- Without a sandbox (`unsandboxed`, the operator's choice) the server runs as ard-mcp's own user with no
  boundary at all, so the values are read by `env -S '${NAME}'` from the environment it is started with:
  the launcher there is no more privileged than the server it starts, and the refused names still apply.
"""

from __future__ import annotations

import functools
import os
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ard_mcp.formats import package_variables

SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"
ETC = (  # name resolution, TLS roots, the linker cache, the time zone, /usr/bin links through alternatives
    "resolv.conf",
    "hosts",
    "host.conf",
    "nsswitch.conf",
    "gai.conf",
    "services",
    "protocols",
    "ssl/certs",
    "ssl/openssl.cnf",
    "ld.so.cache",
    "localtime",
    "alternatives",
    "mime.types",
)
TRUST_BUNDLES = ("/etc/ssl/certs/ca-certificates.crt",)  # the system store's bundle, inside ETC's ssl/certs
TRUST_FILE_VARIABLES = ("NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "npm_config_cafile")
NO_WASM_GUARDS = "--disable-wasm-trap-handler"  # `_takes_no_wasm_guards`
TRIAL_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Confinement:
    """What one server process may use (the operator's to tune); the reasons for each default are above."""

    memory_bytes: int = 1 << 30  # RLIMIT_DATA: what it may allocate (heap, stacks, private mappings)
    address_space_bytes: int = 3 << 30  # RLIMIT_AS: node's reservations (~1 GiB) + memory_bytes + room; bounds shared mappings
    processes: int = 64  # RLIMIT_NPROC: processes and threads of this server
    cpu_seconds: int = 600  # RLIMIT_CPU, per process over its life: killed (SIGKILL) when spent
    open_files: int = 1024  # RLIMIT_NOFILE: node loading a large package opened more than 256 at once (EMFILE; @wong2/mcp-cli)
    file_bytes: int = 256 << 20  # RLIMIT_FSIZE: any one file it writes, memfds included
    tmp_bytes: int = 64 << 20  # the size of its private /tmp (a tmpfs, in memory)
    uid: int = 64000  # as root, the uid (and gid) it runs as: one no account on the host uses

    def prlimit(self) -> list[str]:
        """The `prlimit` command setting each limit, soft and hard alike (hard: it cannot raise them)."""
        return [
            _tool("prlimit"),
            f"--data={self.memory_bytes}",
            f"--as={self.address_space_bytes}",
            f"--nproc={self.processes}",
            f"--cpu={self.cpu_seconds}",
            f"--nofile={self.open_files}",
            f"--fsize={self.file_bytes}",
            "--",
        ]


@dataclass(frozen=True)
class Launch:
    """How to start one server: host paths, each mounted at the same path inside."""

    command: tuple[str, ...]  # argv inside the sandbox, its first word an absolute path
    package_dir: Path  # read-only; its files must be readable by others (the sandbox uid)
    state_dir: Path  # the server's private writable directory, its HOME and working directory
    runtime_dirs: tuple[Path, ...] = ()  # read-only directories the command needs (an interpreter's prefix)
    environment: Mapping[str, str] = field(default_factory=dict)  # the only variables it gets, besides HOME, PATH, TMPDIR, LANG
    network: bool = False  # False: its own network namespace, loopback only; True: the host's network
    package_view: Path | None = None  # the server's writable view of package_dir (`views`), bound at package_dir's path
    folders: tuple[tuple[Path, bool], ...] = ()  # the person's folders it is given, each (path, writable), at their own paths


@dataclass(frozen=True)
class Command:
    """What starts one server: `argv` with `environment` (fixed: nothing of the entry's) and the descriptors in
    `pass_fds` (the declared variables, for the innermost bwrap), which `close` closes once it has started."""

    argv: list[str]
    environment: dict[str, str]
    pass_fds: tuple[int, ...] = ()

    def close(self) -> None:
        for fd in self.pass_fds:
            os.close(fd)


class SandboxUnavailable(Exception):
    """No sandbox can be made here: `reason`, and `hint`, what the operator can do about it."""

    def __init__(self, reason: str, hint: str) -> None:
        super().__init__(f"{reason}: {hint}")
        self.reason = reason
        self.hint = hint


def _tool(name: str) -> str:
    """A util-linux or coreutils program, looked for where the sandbox's view has it too."""
    found = shutil.which(name, path="/usr/bin:/bin")
    if found is None:
        package = "coreutils" if name in ("env", "true") else "util-linux"
        raise SandboxUnavailable(f"{name} is not installed", f"apt-get install {package}")
    return found


def _bwrap(bwrap: str) -> str:
    found = shutil.which(bwrap)
    if found is None:
        raise SandboxUnavailable(f"bubblewrap ({bwrap}) is not installed", "apt-get install bubblewrap")
    return os.path.abspath(found)


def check_available(bwrap: str = "bwrap") -> None:
    """Raise SandboxUnavailable unless a sandbox can be made here: the programs are there, and a trial
    sandbox (`true`, confined as a server is) runs. Made once per bwrap and uid; about 20 ms."""
    failure = _trial(_bwrap(bwrap), os.geteuid() == 0)
    if failure:
        raise SandboxUnavailable(
            f"bubblewrap cannot make a sandbox here ({failure})",
            "it needs user namespaces (sysctl user.max_user_namespaces above 0, and where the kernel has it "
            "kernel.unprivileged_userns_clone=1) and, in a container, permission to create namespaces",
        )


@functools.cache
def _trial(bwrap: str, as_root: bool) -> str:
    """What a trial sandbox said on stderr when it failed ("" when it ran)."""
    with tempfile.TemporaryDirectory(prefix="ard-mcp-sandbox-") as scratch:
        here = Path(scratch)
        confinement = Confinement()
        if as_root:
            _hand_over(here, confinement.uid)
        argv = _argv(bwrap, Launch(command=(_tool("true"),), package_dir=here, state_dir=here), confinement, as_root, None)
        try:
            done = subprocess.run(argv, env={}, stdin=subprocess.DEVNULL, capture_output=True, timeout=TRIAL_TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return str(exc)
    said = done.stderr.decode(errors="replace").strip().splitlines()
    return "" if done.returncode == 0 else (said[-1] if said else f"exit status {done.returncode}")


def sandboxed(launch: Launch, confinement: Confinement, *, bwrap: str = "bwrap", as_root: bool | None = None) -> Command:
    """What runs `launch` confined; raises SandboxUnavailable where no sandbox can be made, ValueError for a
    launch that may not run (`_check`).

    As root this hands the state directory to the sandbox uid (chown, mode 0700): the one change it
    makes on disk, and to that directory alone, never to what is inside it (a server could put a link there,
    which a recursive chown made by root would follow). `as_root` is whether ard-mcp runs as root (its
    effective uid says, by default); a registry run by another user runs the server as that user, in a user
    namespace of the single bwrap."""
    _check(launch)
    found = _bwrap(bwrap)
    check_available(found)
    privileged = os.geteuid() == 0 if as_root is None else as_root
    if privileged:
        _hand_over(launch.state_dir, confinement.uid)
    fd = _variables_fd(launch) if launch.environment else None
    return Command(_argv(found, launch, confinement, privileged, fd), {}, () if fd is None else (fd,))


def unsandboxed(launch: Launch, confinement: Confinement) -> Command:
    """What runs `launch` for an operator who allowed unsandboxed servers: the same environment, working
    directory and limits, no isolation at all (it runs as ard-mcp's user, and as root RLIMIT_NPROC does not bind)."""
    _check(launch)
    names = sorted(launch.environment)
    reads = ["-S", " ".join(f"{name}=${{{name}}}" for name in names)] if names else []
    variables = [f"{name}={value}" for name, value in _set(launch)]
    argv = [_tool("env"), "-i", "-C", str(launch.state_dir), *reads, *variables, *confinement.prlimit(), *launch.command]
    return Command(argv, dict(launch.environment))


def _check(launch: Launch) -> None:
    if not launch.command or not os.path.isabs(launch.command[0]):
        raise ValueError(f"a sandboxed command starts with an absolute path, not {launch.command[:1]}")
    grants = [folder for folder, _ in launch.folders]
    for directory in (launch.package_dir, launch.state_dir, *launch.runtime_dirs, *filter(None, [launch.package_view]), *grants):
        if not directory.is_absolute() or not directory.is_dir():
            raise ValueError(f"{directory} is not an absolute path to a directory")
    for name, value in launch.environment.items():
        refused = package_variables.refusal(name)
        if refused is not None:
            raise ValueError(refused)
        if "\0" in value:
            raise ValueError(f"the value of {name} holds a NUL character, which no environment can hold")


def _variables_fd(launch: Launch) -> int:
    """A memfd holding `--setenv NAME VALUE` for each declared variable, NUL-separated (bwrap's `--args`)."""
    items = [part for name in sorted(launch.environment) for part in ("--setenv", name, launch.environment[name])]
    fd = os.memfd_create("ard-mcp-variables", os.MFD_CLOEXEC)
    try:
        data = "".join(f"{item}\0" for item in items).encode()
        while data:
            data = data[os.write(fd, data) :]
        os.lseek(fd, 0, os.SEEK_SET)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _hand_over(state_dir: Path, uid: int) -> None:
    """Make `state_dir` (the directory itself, not a link) the sandbox uid's alone."""
    found = os.lstat(state_dir)
    if not stat.S_ISDIR(found.st_mode):
        raise ValueError(f"the state directory {state_dir} is not a directory")
    if (found.st_uid, found.st_gid) != (uid, uid):
        os.chown(state_dir, uid, uid, follow_symlinks=False)
    os.chmod(state_dir, 0o700)


def _set(launch: Launch) -> list[tuple[str, str]]:
    """What the sandbox sets, over any declared variable of the same name."""
    bins = [str(d / "bin") for d in (*launch.runtime_dirs, launch.package_dir) if (d / "bin").is_dir()]
    path = ":".join([*bins, SYSTEM_PATH])
    base = [("HOME", str(launch.state_dir)), ("TMPDIR", "/tmp"), ("LANG", "C.UTF-8"), ("PATH", path)]
    node = shutil.which("node", path=path)
    wasm = [("NODE_OPTIONS", NO_WASM_GUARDS)] if node is not None and _takes_no_wasm_guards(node) else []
    return base + wasm + (_trust() if launch.network else [])


@functools.cache
def _takes_no_wasm_guards(node: str) -> bool:
    """Whether `node` (the first on the sandbox's PATH) takes `NO_WASM_GUARDS` (node 20.15 and 22.2 on). Why the
    option: V8 reserves about 10 GiB of address space for each WebAssembly memory, over the sandbox's RLIMIT_AS,
    and node's own `fetch` parses HTTP with WebAssembly: every `fetch()` of a server crashed ("Out of memory:
    Cannot allocate Wasm memory"), and so did mcp-server-fetch's markdown mode (readabilipy runs node). An older
    node refuses the option at start, so it is asked once first (about 40 ms)."""
    try:
        probe = [node, NO_WASM_GUARDS, "-e", ""]
        return subprocess.run(probe, capture_output=True, timeout=TRIAL_TIMEOUT_S, env={"PATH": SYSTEM_PATH}).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _trust() -> list[tuple[str, str]]:
    """The machine's own TLS roots (bound read-only: `ETC`) named to the runtimes that do not read them unasked, for
    a server allowed the network. Why: node and Python's certifi carry their own lists, so behind a TLS-inspecting
    proxy (its CA in the system store, as on this machine) every HTTPS request of a server failed, and a package
    that installs its own helpers on first use (mcp-server-fetch's readabilipy runs `npm install`) broke."""
    bundle = next((p for p in TRUST_BUNDLES if os.path.isfile(p)), None)
    if bundle is None:
        return []
    return [*((name, bundle) for name in TRUST_FILE_VARIABLES), ("SSL_CERT_DIR", "/etc/ssl/certs")]


def _argv(bwrap: str, launch: Launch, confinement: Confinement, as_root: bool, variables_fd: int | None) -> list[str]:
    """The argv; `variables_fd`, where given, is read by the bwrap that is already the sandbox uid."""
    state = str(launch.state_dir)
    argv = [_tool("env"), "-i", bwrap, "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc", "--unshare-uts"]
    argv += ["--unshare-cgroup-try", *([] if launch.network else ["--unshare-net"])]
    reads = [] if variables_fd is None else ["--args", str(variables_fd)]
    inner = [*confinement.prlimit(), *launch.command]
    if as_root:
        argv += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_SETPCAP"]  # setpriv's, then dropped
        uid = str(confinement.uid)
        drop = [_tool("setpriv"), f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=-all", "--bounding-set=-all", "--"]
        inner = [*drop, bwrap, "--unshare-user", "--disable-userns", *reads, "--dev-bind", "/", "/", "--chdir", state, "--", *inner]
    else:
        argv += ["--unshare-user", "--disable-userns", *reads]
    for name, value in _set(launch):
        argv += ["--setenv", name, value]
    return [*argv, *_view(launch, confinement), "--chdir", state, "--", *inner]


def _view(launch: Launch, confinement: Confinement) -> list[str]:
    """The mounts: system directories, /proc, /dev, /tmp, then the parents of each bind made enterable,
    then the binds (the state directory last, so it is writable wherever it lies; the package's writable view,
    where it has one, at the package's own path)."""
    view: list[str] = []
    for system in SYSTEM_DIRS:
        if os.path.islink(system):
            view += ["--symlink", os.readlink(system), system]
        elif os.path.isdir(system):
            view += ["--ro-bind", system, system]
    view += ["--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--size", str(confinement.tmp_bytes), "--tmpfs", "/tmp"]
    binds = [("--ro-bind-try", Path("/etc", name), Path("/etc", name)) for name in ETC]
    binds += [("--ro-bind", directory, directory) for directory in launch.runtime_dirs]
    package = ("--bind", launch.package_view) if launch.package_view is not None else ("--ro-bind", launch.package_dir)
    binds += [(package[0], package[1], launch.package_dir), ("--bind", launch.state_dir, launch.state_dir)]
    binds += [("--bind" if writable else "--ro-bind", folder, folder) for folder, writable in launch.folders]
    parents = {parent for _, _, path in binds for parent in path.parents if parent != Path("/")}
    for parent in sorted(parents, key=lambda p: len(p.parts)):
        view += ["--perms", "0755", "--dir", str(parent)]
    for how, source, path in binds:
        view += [how, str(source), str(path)]
    return view
