"""Every command of the tutorial and the how-to guides runs as written, page by page.

Each page runs in its own scratch copy of the project (`studies/`, `replays/`, `prices/`,
`tests/data/`), its blocks in order, as a reader in a fresh clone would type them:

- every `$ ` line of a ```console block is a command run by bash in the scratch folder and
  must exit 0; `uv sync` is skipped (this test runs inside the synced environment) and
  `uv run X` runs the environment's X;
- a ```toml title="PATH" block is written to PATH first, as the reader saves it;
- `<!-- docs-test: ... -->` on the line before a block says how to run it: `background`
  (a server: started, waited for on its port, stopped at the end of the page; every port
  the page names is replaced by a free one), `exit=0,1` (the statuses allowed), `slow`
  (the page's test is marked slow), `stand-in "COMMAND" (why)` (a person at the keyboard:
  COMMAND runs instead) and `parse-only (why)` (the commands are checked against uxlab's
  real argument parser, and the project files they name must exist, but not run; the
  reason names the test that runs them).

The pages may hold no ```sh or ```bash block: a command in a guide is either run here or
says why not.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from uxlab.cli import build_parser, main

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
PAGES = [DOCS / "tutorial.md", *sorted((DOCS / "how-to").glob("*.md"))]
MARKER = re.compile(r"^<!-- docs-test: (.*?) -->\s*$")
FENCE = re.compile(r"^```(\S*)(.*)$")
PREAMBLE = (
    'uv() { case "$1" in sync) return 0 ;; run) shift; "$@" ;; *) command uv "$@" ;; esac; }\n'
)


@dataclass
class Block:
    """One fenced block of a page and how the test treats it."""

    lang: str
    title: str | None
    lines: list[str]
    marker: str = ""
    line_no: int = 0

    @property
    def commands(self) -> list[str]:
        """The `$ ` lines, each joined with the lines it continues onto (a trailing `\\`)."""
        out: list[str] = []
        open_ = False
        for line in self.lines:
            if open_:
                out[-1] += " " + line.strip().removesuffix("\\").strip()
            elif line.startswith("$ "):
                out.append(line[2:].removesuffix("\\").strip())
            open_ = (open_ or line.startswith("$ ")) and line.rstrip().endswith("\\")
        return out


@dataclass
class Page:
    path: Path
    blocks: list[Block] = field(default_factory=list)

    @property
    def slow(self) -> bool:
        return any(b.marker.startswith("slow") for b in self.blocks)


def read_page(path: Path) -> Page:
    page = Page(path)
    lines = path.read_text(encoding="utf-8").splitlines()
    i, marker = 0, ""
    while i < len(lines):
        found = MARKER.match(lines[i])
        fence = FENCE.match(lines[i])
        if found:
            marker = found.group(1)
        elif fence and fence.group(1):
            title = re.search(r'title="([^"]+)"', fence.group(2))
            end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
            page.blocks.append(
                Block(
                    fence.group(1),
                    title.group(1) if title else None,
                    lines[i + 1 : end],
                    marker,
                    i + 1,
                )
            )
            i, marker = end, ""
        elif lines[i].strip():
            marker = ""
        i += 1
    return page


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_map(page: Page) -> dict[str, str]:
    """Every port the page's commands name -> a free one (servers of parallel tests differ)."""
    ports: set[str] = set()
    for block in page.blocks:
        for command in block.commands:
            ports |= set(re.findall(r"--port (\d+)", command))
            ports |= set(re.findall(r"127\.0\.0\.1:(\d+)", command))
    return {p: str(free_port()) for p in sorted(ports)}


def with_ports(command: str, ports: dict[str, str]) -> str:
    for old, new in ports.items():
        command = re.sub(rf"(--port |127\.0\.0\.1:){old}\b", rf"\g<1>{new}", command)
    return command


def environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("UXLAB_FPS", "COLUMNS")}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["NO_COLOR"] = "1"
    return env


def check_parses(command: str, where: str, root: Path | None = None) -> None:
    """A command not run here: uxlab's parser must take it, and its project files exist
    (in the project, or written by the page into the scratch copy `root`)."""
    words = shlex.split(command)
    if words[:2] == ["uv", "run"]:
        words = words[2:]
    if not words or words[0] != "uxlab":
        return
    try:
        args, extras = build_parser().parse_known_args(words[1:])
    except SystemExit:
        pytest.fail(f"{where}: uxlab's parser refuses `{command}`")
    assert not extras, f"{where}: `{command}`: unknown arguments {extras}"
    assert getattr(args, "command", None), f"{where}: `{command}` names no subcommand"
    for word in words[1:]:
        if re.match(r"^(studies|replays|prices|tests)/", word):
            found = (REPO / word).exists() or (root is not None and (root / word).exists())
            assert found, f"{where}: `{command}` names {word}, which is missing"


def wait_for_port(port: int, server: subprocess.Popen, where: str, deadline_s: float = 120):
    """Wait until the background server accepts connections (or fail if it exited)."""
    start = time.monotonic()
    while time.monotonic() - start < deadline_s:
        if server.poll() is not None:
            out = server.stdout.read() if server.stdout else ""
            pytest.fail(f"{where}: the background server exited ({server.returncode}):\n{out}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    pytest.fail(f"{where}: nothing listened on port {port} within {deadline_s:.0f} s")


def stop(server: subprocess.Popen) -> None:
    if server.poll() is None:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()


def in_process(command: str) -> list[str] | None:
    """`uv run uxlab ARGS` without shell syntax -> ARGS, to run through `uxlab.cli.main`."""
    if re.search(r"[|&;<>$`]", command) or not command.startswith("uv run uxlab "):
        return None
    return shlex.split(command)[3:]


def run_command(command: str, root: Path, env: dict[str, str]) -> tuple[int, str]:
    """Run one command in `root`: (exit status, the end of its output).

    `uv run uxlab ...` runs through `uxlab.cli.main` in this process, the entry point the
    `uxlab` script calls (a new interpreter per command would spend most of the test's time
    importing numpy and pandas again); anything else runs in bash.
    """
    argv = in_process(command)
    if argv is None:
        done = subprocess.run(
            ["bash", "-c", PREAMBLE + command],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        return done.returncode, (done.stdout + done.stderr)[-4000:]
    out = io.StringIO()
    here = Path.cwd()
    os.chdir(root)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            try:
                status = main(argv)
            except SystemExit as exc:
                status = exc.code if isinstance(exc.code, int) else 2
    finally:
        os.chdir(here)
    return int(status or 0), out.getvalue()[-4000:]


def scratch_project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    shutil.copytree(REPO / "studies", root / "studies")
    shutil.copytree(REPO / "replays", root / "replays")
    shutil.copytree(REPO / "prices", root / "prices")
    shutil.copytree(REPO / "tests" / "data", root / "tests" / "data")
    return root


def run_page(page: Page, root: Path) -> None:
    env = environment()
    ports = port_map(page)
    servers: list[subprocess.Popen] = []
    rel = page.path.relative_to(REPO)
    try:
        for block in page.blocks:
            where = f"{rel}:{block.line_no}"
            if block.lang in ("sh", "bash"):
                pytest.fail(f"{where}: a ```{block.lang} block in a guide; use ```console")
            if block.lang == "toml" and block.title:
                target = root / block.title
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text("\n".join(block.lines) + "\n", encoding="utf-8")
                continue
            if block.lang != "console" or not block.commands:
                continue
            marker = block.marker
            if marker.startswith("parse-only"):
                assert "(" in marker, f"{where}: parse-only must say why and what covers it"
                for command in block.commands:
                    check_parses(command, where, root)
                continue
            commands = block.commands
            if marker.startswith("stand-in"):
                stand_in = re.match(r'stand-in "([^"]+)" \(', marker)
                assert stand_in, f'{where}: write stand-in "COMMAND" (why)'
                for command in commands:
                    check_parses(command, where, root)
                commands = [stand_in.group(1)]
            allowed = {0}
            if status := re.match(r"exit=([\d,]+)", marker):
                allowed = {int(x) for x in status.group(1).split(",")}
            for command in commands:
                command = with_ports(command, ports)
                if marker.startswith("background"):
                    server = subprocess.Popen(
                        ["bash", "-c", PREAMBLE + command],
                        cwd=root,
                        env=env,
                        stdout=subprocess.PIPE,
                        stderr=subprocess.STDOUT,
                        text=True,
                        start_new_session=True,
                    )
                    servers.append(server)
                    port = re.search(r"--port (\d+)", command)
                    assert port, f"{where}: a background command needs --port"
                    wait_for_port(int(port.group(1)), server, where)
                    continue
                status, output = run_command(command, root, env)
                assert status in allowed, f"{where}: `{command}` exited {status}:\n{output}"
                assert "Traceback" not in output, f"{where}: `{command}`:\n{output}"
    finally:
        for server in servers:
            stop(server)


def page_params():
    params = []
    for path in PAGES:
        page = read_page(path)
        marks = [pytest.mark.slow] if page.slow else []
        params.append(pytest.param(page, id=path.stem, marks=marks))
    return params


@pytest.mark.parametrize("page", page_params())
def test_every_command_of_the_page_runs(page, tmp_path):
    run_page(page, scratch_project(tmp_path))


def test_the_guides_have_commands_and_no_unmarked_shell_blocks():
    for path in PAGES:
        page = read_page(path)
        for block in page.blocks:
            assert block.lang not in ("sh", "bash"), f"{path.name}:{block.line_no}: ```{block.lang}"
    assert read_page(DOCS / "tutorial.md").blocks, "the tutorial has no commands"
