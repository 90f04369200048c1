"""``hitl show --schemas`` / ``hitl inbox --schemas``: the answer schema as the console's
editor shows it (engine.schema_view), not raw JSON; one block per distinct schema."""

from __future__ import annotations

from .conftest import Hitl, ok


def test_show_prints_each_open_ids_schema_readably(hitl: Hitl) -> None:
    text = ok(hitl("show", "refund-waiting-1", "--schemas"))
    tail = text[text.index("open: finance-order-1001, risk-order-1001"):]
    assert "answer finance-order-1001, risk-order-1001 (2 ids):" in tail
    assert "approved (required)  boolean" in tail and 'note  string · at most 500 chars · default: ""' in tail
    assert '"properties"' not in text  # not the raw JSON Schema
    assert "answer " not in ok(hitl("show", "refund-waiting-1"))  # only when asked


def test_inbox_prints_the_listed_schemas_once_each(hitl: Hitl) -> None:
    text = ok(hitl("inbox", "--app", "labelling_batch", "--schemas"))
    blocks = [line for line in text.splitlines() if line.startswith("answer ")]
    assert len(blocks) == 1 and blocks[0].endswith("ids):")
    assert "  one of cat, dog, bird, fish, other -- What the image shows" in text.splitlines()
    incident = ok(hitl("inbox", "--app", "incident", "--schemas"))
    assert "one of restart, rollback, scale_up, ignore" in incident or "publish (required)  boolean" in incident
