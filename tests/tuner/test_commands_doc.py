"""docs/commands.md says it "gives every option in full", and named 7 of calibrate's 13 options, none of sensors'
(`--period` was documented nowhere) and not `autotune --version` (trial77 #1). Each option `COMMAND --help` lists is
held to the page's section of that command."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from autotune.cli import build_parser

PAGE = Path(__file__).resolve().parents[2] / "docs" / "commands.md"
COMMANDS = build_parser().parse_args([]).command_parsers


def _sections_of(command: str) -> str:
    """The page's `## ` sections that are the command's: `autotune COMMAND ...` in the heading, or `COMMAND` among
    the commands an "Options shared by `run` and `space`" heading names."""
    sections = re.split(r"^## ", PAGE.read_text(encoding="utf-8"), flags=re.M)[1:]
    return "\n".join(s for s in sections if re.search(rf"`(autotune )?{command}[` ]", s.splitlines()[0]))


def _named(option: str, text: str) -> bool:
    """`option` inside a code span (`--sample SECONDS`, `-q`/`--quiet`), not as part of a longer flag."""
    return re.search(rf"`[^`\n]*(?<![\w-]){re.escape(option)}(?![\w-])[^`\n]*`", text) is not None


def _options(parser: argparse.ArgumentParser) -> list[str]:
    """What `--help` lists: an alias kept out of it (run's -o/--output) is no option to document."""
    return [option for action in parser._actions if action.help != argparse.SUPPRESS
            and not isinstance(action, argparse._HelpAction) for option in action.option_strings]


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_the_commands_page_names_every_option_its_help_lists(command):
    text = _sections_of(command)
    assert text, f"docs/commands.md has no section of `autotune {command}`"
    assert [option for option in _options(COMMANDS[command]) if not _named(option, text)] == [], command


def test_the_commands_page_names_the_top_level_options():
    text = PAGE.read_text(encoding="utf-8")
    assert [option for option in _options(build_parser()) if not _named(option, text)] == []


def test_an_option_is_not_found_inside_a_longer_one():
    assert not _named("--out", "`--output FILE`") and not _named("-o", "`--out DIR`")
    assert _named("--out", "`-o FILE`, `--output FILE` or `--out FILE`") and _named("-q", "`-q`/`--quiet`")
