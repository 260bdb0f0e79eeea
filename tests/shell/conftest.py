"""Fixtures of the shell tests: a BashTools with small limits, closed after each test."""
from __future__ import annotations

import pytest

from raider_sync.shell import BashTools, Tasks

GRACE = 0.3


@pytest.fixture
def tasks():
    return Tasks()


@pytest.fixture
def make_shell(tmp_path):
    """make_shell(**options) -> BashTools in tmp_path with a short kill_grace; all closed."""
    made = []

    def make(**options):
        options.setdefault("working_directory", str(tmp_path))
        options.setdefault("kill_grace", GRACE)
        shell = BashTools(**options)
        made.append(shell)
        return shell

    yield make
    for shell in made:
        shell.close()


@pytest.fixture
def shell(make_shell, tasks):
    return make_shell(tasks=tasks)
