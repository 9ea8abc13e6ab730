"""`uxlab completion bash|zsh|fish`: print the shell's tab-completion script for `uxlab`.

The script asks `uxlab` itself what can follow the words typed so far (argcomplete runs the
argument parser with the words and prints the options, subcommands and choices that fit),
so completion always matches this version's options. Install it with one command (see
`--help`); it completes `uxlab` on the PATH (an activated `.venv`, or a tool install).
"""

from __future__ import annotations

import argparse

SHELLS = ("bash", "zsh", "fish")
INSTALL = {
    "bash": "echo 'eval \"$(uxlab completion bash)\"' >> ~/.bashrc",
    "zsh": "echo 'eval \"$(uxlab completion zsh)\"' >> ~/.zshrc  (after compinit)",
    "fish": "uxlab completion fish > ~/.config/fish/completions/uxlab.fish",
}


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    lines = "; ".join(f"{shell}: {how}" for shell, how in INSTALL.items())
    parser = subparsers.add_parser(
        "completion",
        help="print the shell completion script (bash, zsh or fish)",
        description=f"Print the tab-completion script of `uxlab` for a shell. Install: {lines}.",
    )
    parser.add_argument("shell", choices=SHELLS, help="the shell to complete in")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from argcomplete.shell_integration import shellcode

    print(shellcode(["uxlab"], shell=args.shell), end="")
    return 0
