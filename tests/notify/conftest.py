"""The notification tests' fixtures: the demo store (built once, as tests/browser builds it)."""

from tests.browser.conftest import demo_db  # noqa: F401 (a fixture here too)
