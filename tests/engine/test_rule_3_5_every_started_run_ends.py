"""DESIGN.md 3.5: every started run ends. If the engine's own handling of a
failure raises (a retry, recording the error), the run still gets its end
record (FAILED, with that error) and ``WorkflowFailed`` names that node with
``.exception`` set. ``RetryConfig`` is validated when it is built."""

from __future__ import annotations

import pytest

from engine import START, RetryConfig, Workflow, WorkflowFailed, node
from engine.models import NodeStatus

from .conftest import Harness


@pytest.mark.parametrize(
    "kwargs",
    [
        {"retry_on": (42,)},
        {"retry_on": 42},
        {"retry_on": ("ValueError",)},
        {"retry_on": (int,)},
        {"max_attempts": 0},
        {"max_attempts": "3"},
        {"initial_delay": -1},
        {"max_delay": float("nan")},
    ],
)
def test_retry_config_is_validated_when_built(kwargs):
    with pytest.raises((TypeError, ValueError)) as info:
        RetryConfig(**kwargs)
    assert "RetryConfig." in str(info.value)
    assert "\n" not in str(info.value)


def test_retry_config_accepts_a_class_or_a_list_of_classes():
    assert RetryConfig(retry_on=ValueError).retry_on == (ValueError,)
    assert RetryConfig(retry_on=[ValueError, KeyError]).retry_on == (ValueError, KeyError)


class BrokenDelay(RetryConfig):
    def delay(self, attempt: int) -> float:
        raise TypeError("the retry policy itself is broken")


async def assert_node_failed_with_end(h: Harness, path: str, code: str) -> WorkflowFailed:
    with pytest.raises(WorkflowFailed) as info:
        await h.start()
    failed = info.value
    assert failed.path == path
    assert failed.exception is not None
    assert failed.error_code == code
    run = await h.run(path)
    assert run.status is NodeStatus.FAILED and run.has_end  # not RUNNING forever under a FAILED root
    assert run.error_code == code
    assert (await h.run("wf@1")).status is NodeStatus.FAILED
    stored = await h.store.events(h.session_id)
    assert [s.event.node_info.status for s in stored if s.event.path == path and s.event.kind == "end"] == [
        NodeStatus.FAILED
    ]
    return failed


async def test_a_retry_that_raises_still_ends_the_run():
    @node(retry=BrokenDelay(max_attempts=3))
    async def flaky(node_input):
        raise ValueError("first failure")

    failed = await assert_node_failed_with_end(Harness(Workflow("wf", [(START, flaky)])), "wf@1/flaky@1", "TypeError")
    assert isinstance(failed.exception, TypeError)
    assert "retry policy" in failed.error_message


async def test_a_retry_config_broken_after_it_was_built_still_ends_the_run():
    config = RetryConfig(max_attempts=2)
    config.retry_on = (42,)  # type: ignore[assignment]  # bypasses the check: isinstance() raises TypeError

    @node(retry=config)
    async def flaky(node_input):
        raise ValueError("boom")

    failed = await assert_node_failed_with_end(Harness(Workflow("wf", [(START, flaky)])), "wf@1/flaky@1", "TypeError")
    assert isinstance(failed.exception, TypeError)


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no message for you")


async def test_an_exception_that_cannot_be_printed_is_recorded_not_left_running():
    @node
    async def odd(node_input):
        raise Unprintable()

    failed = await assert_node_failed_with_end(Harness(Workflow("wf", [(START, odd)])), "wf@1/odd@1", "Unprintable")
    assert isinstance(failed.exception, Unprintable)
    assert "could not be read" in failed.error_message


class NotJSON:
    pass


@pytest.mark.parametrize("how", ["return", "set"])
async def test_an_output_that_cannot_be_stored_fails_the_node_instead_of_leaving_it_running(how):
    @node
    async def odd(ctx, node_input):
        if how == "set":
            ctx.output = NotJSON()
            return
        yield NotJSON()

    failed = await assert_node_failed_with_end(
        Harness(Workflow("wf", [(START, odd)])), "wf@1/odd@1", "OutputNotJSONError"
    )
    assert "cannot be stored as JSON" in failed.error_message and "\n" not in failed.error_message


async def test_a_store_failure_while_recording_is_the_store_s_not_the_node_s():
    from engine.errors import StoreError
    from engine.store import MemoryStore

    class FailsOnErrors(MemoryStore):
        async def append_event(self, session_id, event, **kw):
            if event.error_code:
                raise StoreError("database error: disk I/O error (simulated)")
            return await super().append_event(session_id, event, **kw)

        async def append_events(self, session_id, events, **kw):
            if any(e.error_code for e in events):
                raise StoreError("database error: disk I/O error (simulated)")
            return await super().append_events(session_id, events, **kw)

    @node
    async def boom(node_input):
        raise ValueError("boom")

    h = Harness(Workflow("wf", [(START, boom)]))
    h.store = FailsOnErrors()
    from engine import Runner

    h.runner = Runner("test", h.runner.workflow, h.store)
    with pytest.raises(StoreError, match="simulated"):
        await h.start()  # not a WorkflowFailed blaming the node: the turn is left mid-run, to re-drive
