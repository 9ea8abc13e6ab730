"""Shell completion from uxlab's own argument parser (argcomplete), installed by one command:
each shell's script is loaded by the real shell and asked what follows `uxlab rep` and
`uxlab report --min`, so a new option completes without anyone editing a script."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BIN = str(Path(sys.executable).parent)  # where `uxlab` is installed (the test's venv)


def shell(argv: list[str], script: str = "") -> str:
    if shutil.which(argv[0]) is None:
        pytest.fail(f"{argv[0]} is not installed: .ci/run installs it (apt-get install {argv[0]})")
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(
        [*argv, script], capture_output=True, text=True, env=env, cwd=REPO, timeout=120,
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def bash_completes(line: str) -> list[str]:
    words = line.split() + ([""] if line.endswith(" ") else [])
    script = (
        'eval "$(uxlab completion bash)"; '
        f"COMP_WORDS=({' '.join(repr(w) for w in words)}); COMP_CWORD={len(words) - 1}; "
        f'COMP_LINE="{line}"; COMP_POINT=${{#COMP_LINE}}; _python_argcomplete uxlab; '
        'printf "%s\\n" "${COMPREPLY[@]}"'
    )
    return shell(["bash", "-c"], script).split()


def test_bash_completes_commands_and_options_from_the_parser():
    assert bash_completes("uxlab rep") == ["replay", "report"]
    assert bash_completes("uxlab report --min") == ["--min-attention", "--min-completion"]
    assert {"bash", "fish", "zsh"} <= set(bash_completes("uxlab completion "))


def test_fish_completes_from_the_parser():
    out = shell(["fish", "-c"], 'uxlab completion fish | source; complete -C "uxlab rep"')
    assert [line.split("\t")[0] for line in out.splitlines()] == ["replay", "report"]
    out = shell(["fish", "-c"], 'uxlab completion fish | source; complete -C "uxlab shape -"')
    assert "--out" in out.split() and "--output" not in out  # the old spelling is hidden


def test_zsh_registers_the_completion_and_its_backend_answers(tmp_path):
    registered = shell(
        ["zsh", "-fc"],
        'autoload -U compinit && compinit -u -D && eval "$(uxlab completion zsh)" && '
        "print -r -- ${_comps[uxlab]}",
    )
    assert registered.strip() == "_python_argcomplete"
    # what the zsh function runs: uxlab, asked in zsh's terms, answering into a file
    answer = tmp_path / "answer"
    env = {**os.environ, "_ARGCOMPLETE": "1", "_ARGCOMPLETE_SHELL": "zsh",
           "COMP_LINE": "uxlab rep", "COMP_POINT": "9",
           "_ARGCOMPLETE_STDOUT_FILENAME": str(answer)}  # fmt: skip
    subprocess.run([sys.executable, "-m", "uxlab"], env=env, cwd=REPO, timeout=120, check=False)
    got = answer.read_text(encoding="utf-8")
    assert [c.split(":")[0] for c in got.split("\v")] == ["replay", "report"]


def test_every_shell_has_one_documented_install_command():
    docs = " ".join((REPO / "docs/reference/conventions.md").read_text().split())
    for how in (
        """echo 'eval "$(uxlab completion bash)"' >> ~/.bashrc""",
        """echo 'eval "$(uxlab completion zsh)"' >> ~/.zshrc""",
        "uxlab completion fish > ~/.config/fish/completions/uxlab.fish",
    ):
        assert how in docs
