"""docs/configuration.md's settings table names every variable of `Settings` and
`.env.example`, and nothing else, with the same literal defaults: the page a newcomer
reads is the one kept in step with the code."""

from __future__ import annotations

import re
from pathlib import Path

from server.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
CONFIGURATION_MD = ROOT / "docs" / "configuration.md"
ENV_EXAMPLE = ROOT / ".env.example"

_NAME = re.compile(r"`([A-Z][A-Z0-9_]*)`")
_LITERAL = re.compile(r"^`([^`]*)`$")
# Written as a literal in the table but a rule in Settings, which holds "" and applies it.
RULE_DEFAULTS = {"NODE_URL": "http://HOST:PORT"}


def settings_table(text: str) -> dict[str, str | None]:
    """Variable -> default from the table under "## Settings" (None: not one literal)."""
    section = text.split("\n## Settings\n", 1)[1].split("\n## ", 1)[0]
    table: dict[str, str | None] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not cells[0].startswith("`"):
            continue
        names = _NAME.findall(cells[0])
        defaults = [d.strip() for d in cells[1].split(" / ")]
        if len(defaults) != len(names):
            defaults = [cells[1]] * len(names)
        for name, default in zip(names, defaults, strict=True):
            assert name not in table, f"{name} twice in docs/configuration.md"
            literal = _LITERAL.match(default)
            table[name] = literal.group(1) if literal else None
    return table


def env_example_names() -> set[str]:
    return set(re.findall(r"^(?:#\s?)?([A-Z][A-Z0-9_]*)=", ENV_EXAMPLE.read_text(), re.M))


def test_the_table_names_every_setting_and_nothing_else() -> None:
    table = settings_table(CONFIGURATION_MD.read_text())
    assert len(table) >= 20, table  # the parser found the table
    variables = Settings.variables()
    assert set(table) == set(variables), (
        f"missing: {sorted(set(variables) - set(table))}, "
        f"unknown: {sorted(set(table) - set(variables))}"
    )
    assert set(table) == env_example_names()


def test_every_literal_default_is_the_settings_default() -> None:
    table = settings_table(CONFIGURATION_MD.read_text())
    variables = Settings.variables()
    literal = {name: default for name, default in table.items() if default is not None}
    assert len(literal) >= 20, literal
    for name, rule in RULE_DEFAULTS.items():
        assert (literal.pop(name), variables[name]) == (rule, ""), name
    assert literal == {name: variables[name] for name in literal}


def test_the_parser_sees_a_missing_row() -> None:
    text = CONFIGURATION_MD.read_text()
    row = next(line for line in text.splitlines() if line.startswith("| `LEASE_SECONDS`"))
    assert "LEASE_SECONDS" not in settings_table(text.replace(row + "\n", ""))
