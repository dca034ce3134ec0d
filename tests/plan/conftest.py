import pytest

from plan_fixtures import fig6_topology


@pytest.fixture
def fig6():
    return fig6_topology()
