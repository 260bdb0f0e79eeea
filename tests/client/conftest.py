"""Fixtures shared by the client tests."""
from __future__ import annotations

import pytest
from fakes.http_fault_server import fault_servers


@pytest.fixture
def fake():
    """``fake(**options)``: a started FaultServer, stopped afterwards."""
    yield from fault_servers()
