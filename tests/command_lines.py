"""Command lines as documentation writes them (README, --help examples): split into netweave
invocations and parsed by the real click command without running them."""

from __future__ import annotations

import shlex

import typer

import netweave.cli


def invocations(line: str) -> list[list[str]]:
    """The argument lists of every ``netweave …`` in a shell line (``&&``-joined commands, a trailing
    ``# comment`` and ``> file`` redirections removed)."""
    words = shlex.split(line, comments=True)
    out, current = [], []
    for word in words + ["&&"]:
        if word in ("&&", ";", "||"):
            if current and current[0] == "netweave":
                out.append(current[1:])
            current = []
        else:
            current.append(word)
    return [[w for i, w in enumerate(args) if w != ">" and (i == 0 or args[i - 1] != ">")] for args in out]


def parse(args: list[str]) -> None:
    """Parse ``args`` as the ``netweave`` command would (options, choices, types), running nothing;
    click raises on anything it would refuse."""
    from netweave.cli.command import netweave_command

    command = netweave_command()
    ctx = command.make_context("netweave", list(args))
    rest = _rest(ctx)
    while hasattr(command, "commands") and rest:
        name, command, rest = command.resolve_command(ctx, rest)
        ctx = command.make_context(name, rest, parent=ctx)
        rest = _rest(ctx) if hasattr(command, "commands") else list(ctx.args)
    assert not rest, f"left over: {rest}"


def _rest(ctx) -> list[str]:
    """A group context's unparsed words: the sub-command and its arguments."""
    protected = getattr(ctx, "_protected_args", None)
    if protected is None:
        protected = getattr(ctx, "protected_args", [])
    return list(protected) + list(ctx.args)


def command_names() -> list[str]:
    """Every leaf command as words (``graph stats``)."""
    found = []

    def walk(group, path):
        for name, sub in group.commands.items():
            if hasattr(sub, "commands"):
                walk(sub, path + [name])
            else:
                found.append(" ".join(path + [name]))

    walk(typer.main.get_command(netweave.cli.app), [])
    return found
