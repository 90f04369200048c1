"""engine.bulk: one answer for many open interrupts across sessions.

"Approve the 40 refunds under 50 EUR older than 2 h" (tests/bulk_store.py):
the filter selects exactly them, the dry run summarises per invocation, the
submit writes one ordinary answer per invocation with one batch id on every
audit row, and a refused item is reported with its reason while the others
are applied. Run over every store kind (PostgreSQL with $HITL_TEST_PG_URL)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from engine import Content, Runner, bulk, operations
from engine.apps import AppRegistry
from engine.errors import HitlError
from engine.operator_actions import cancel_invocation
from engine.store.base import SessionStore
from sample_sessions import document_review
from sample_sessions.demo import FIXTURE_EPOCH
from tests import bulk_store
from tests.contract.builders import open_store

KINDS = ["memory", "sqlite", "postgres"]


@pytest.fixture(params=KINDS)
async def refunds(request: pytest.FixtureRequest, tmp_path: Path):
    store = await open_store(request.param, tmp_path)
    built = await bulk_store.build(store, FIXTURE_EPOCH)
    yield store, built
    await store.close()


# ---------------------------------------------------------------- the filter
def test_parse_where_reads_every_kind_of_term_and_prints_back_the_same() -> None:
    w = bulk.parse_where('app=refund_approval node=finance_approval age>2h amount<50 currency=EUR "never arrived"')
    assert (w.app, w.node, w.older_than, w.text) == ("refund_approval", "finance_approval", 7200.0, "never arrived")
    assert w.fields == (bulk.FieldTest("amount", "<", 50), bulk.FieldTest("currency", "=", "EUR"))
    assert bulk.parse_where(str(w)) == w
    assert bulk.parse_where("payload.app=x customer~grace").fields == (
        bulk.FieldTest("app", "=", "x"), bulk.FieldTest("customer", "~", "grace"))
    assert bulk.parse_age("1h30m") == 5400 and bulk.format_age(5400) == "90m"


@pytest.mark.parametrize(
    ("term", "says"),
    [("age<2h", "only age>DURATION"), ("age>soon", "not a duration"), ("amount<", "no value"),
     ("app>x", "app takes ="), ('text="open', "unclosed quote"), ("<5", "not FIELD OP VALUE")],
)
def test_a_bad_filter_term_is_one_clear_error(term: str, says: str) -> None:
    with pytest.raises(HitlError, match=says):
        bulk.parse_where(term)


def test_payload_tests_compare_numbers_as_numbers_and_never_match_a_missing_or_other_typed_field() -> None:
    t = bulk.FieldTest
    assert t("amount", "<", 50).matches({"amount": 49.9}) and not t("amount", "<", 50).matches({"amount": 50})
    assert not t("amount", "<", 50).matches({"amount": "12"})  # a string is not a number
    assert not t("amount", "!=", 50).matches({})  # missing matches nothing, not even !=
    assert not t("flag", "=", 1).matches({"flag": True})  # True is not 1
    assert t("order.id", "=", "a").matches({"order": {"id": "a"}})
    assert not t("amount", "<", 50).matches(None)


async def test_the_filter_selects_exactly_the_40_old_small_refunds_oldest_first(refunds) -> None:
    store, built = refunds
    picked = await bulk.select(store, bulk.parse_where(bulk_store.FILTER), now=built.now)
    assert len(picked) == 40
    assert {(r.session_id, r.invocation_id) for r in picked} == set(built.small.values())
    assert len({r.session_id for r in picked}) == 30  # across sessions
    assert all(re.fullmatch(r"refund@\d+/finance_approval@\d+", r.path) for r in picked)
    assert all(r.args["payload"]["amount"] == bulk_store.amount(r.args["payload"]["order_id"]) < 50 for r in picked)
    assert [r.raised_at for r in picked] == sorted(r.raised_at for r in picked)
    # each condition narrows: without the age the 3 young ones come in, without the amount the 5 big ones
    assert len(await bulk.select(store, bulk.parse_where(f"app={bulk_store.APP} node=finance_approval amount<50"),
                                 now=built.now)) == 43
    assert len(await bulk.select(store, bulk.parse_where("node=finance_approval age>2h amount<50"),
                                 now=built.now)) == 41  # + the legacy app's
    assert len(await bulk.select(store, bulk.parse_where("node=finance_approval age>2h"), now=built.now)) == 46
    assert len(await bulk.select(store, bulk.parse_where("age>2h"), now=built.now)) == 92  # finance + risk
    assert len(await bulk.select(store, bulk.parse_where("fraud age>2h"), now=built.now)) == 46  # risk's message text
    assert await bulk.select(store, bulk.parse_where("node=finance"), now=built.now) == []  # names match exactly


async def test_the_store_filters_agree_with_where_matches_row_by_row(refunds) -> None:
    """The store's query (node, text, age) and Where.matches (the reference) pick the same rows."""
    store, built = refunds
    every = (await store.open_interrupts(limit=1000)).items
    for line in ["node=refund", "node=risk_approval", "text=GRACE", "text=refund age>3h", "age>4h30m", "text=zzz"]:
        w = bulk.parse_where(line)
        expected = [r for r in every if w.matches(r, built.now)]
        assert await bulk.select(store, w, now=built.now) == expected, line


async def test_more_matches_than_the_limit_is_refused() -> None:
    from engine.store import MemoryStore

    store = MemoryStore()
    built = await bulk_store.build(store, FIXTURE_EPOCH)
    with pytest.raises(HitlError, match="more than 10 open interrupts match"):
        await bulk.select(store, bulk.parse_where("age>2h"), now=built.now, limit=10)


# ---------------------------------------------------------------- dry run
async def test_dry_run_summarises_per_invocation_and_writes_nothing(refunds) -> None:
    store, built = refunds
    groups = bulk.group(await bulk.select(store, bulk.parse_where(bulk_store.FILTER), now=built.now))
    before = {sid: (await store.get_session(sid)).last_seq for sid, _ in built.small.values()}
    seen: list[tuple[int, int]] = []
    plan = await bulk.dry_run(store, groups, bulk_store.APPROVE, registry=bulk_store.registry(),
                              on_progress=lambda n, total: seen.append((n, total)))
    assert plan.summary() == "40 interrupts in 40 invocations: 40 auto-complete, 0 re-execute, 0 refused"
    assert seen[-1] == (40, 40) and len(seen) == 40
    assert all(i.nodes == [i.group.records[0].path] for i in plan.items)
    assert {sid: (await store.get_session(sid)).last_seq for sid, _ in built.small.values()} == before


async def test_dry_run_tells_re_executions_and_refusals_with_their_reasons() -> None:
    from engine.store import MemoryStore

    store = MemoryStore()
    built = await bulk_store.build(store, FIXTURE_EPOCH)
    async for _ in Runner(document_review.app_name, document_review.workflow, store).run(
        "u", "doc-1", Content.from_text("Q3 report")
    ):
        pass
    (doc_inv,) = [i.invocation_id for i in await store.list_invocations("doc-1")]
    (sid, inv), (sid2, inv2) = list(built.small.values())[:2]
    await cancel_invocation(store, sid2, inv2, operator="olga", reason="duplicate order")
    reg = bulk_store.registry()
    reg.register(document_review.app_name, document_review.workflow)
    refs = [
        bulk.ItemRef(sid, inv, f"finance-{bulk_store.SMALL[0]}"),
        bulk.ItemRef(sid2, inv2, f"finance-{bulk_store.SMALL[1]}"),  # cancelled
        bulk.ItemRef("doc-1", doc_inv, "signoff-q3-report"),  # the reviewer (rerun_on_resume) re-executes
        bulk.ItemRef("nope", "inv", "x"),  # no such session
    ]
    groups = await bulk.items(store, refs)
    plan = await bulk.dry_run(store, groups, {"decision": "approve"}, registry=reg)
    assert [i.verdict for i in plan.items] == ["refused", "refused", "re-execute", "refused"]
    assert plan.summary() == "4 interrupts in 4 invocations: 0 auto-complete, 1 re-execute, 3 refused"
    first, cancelled, doc, nope = plan.items
    assert "approved" in (first.reason or "")  # not an Approval: the schema's own message
    assert "cancelled" in (cancelled.reason or "") and "olga" in (cancelled.reason or "")
    assert doc.nodes == ["document@1/review@1/reviewer@1"]
    assert "nope" in (nope.reason or "")
    assert all((i.reason or "").endswith("nothing was written") for i in plan.refused)
    # an app whose code is not registered: what the real answer would say
    plan = await bulk.dry_run(store, groups[:1], bulk_store.APPROVE, registry=AppRegistry(samples=False))
    assert plan.items[0].refused and "refund_approval" in (plan.items[0].reason or "")


# ---------------------------------------------------------------- submit
async def test_submit_is_one_audited_batch_and_a_refusal_never_hides(refunds) -> None:
    store, built = refunds
    groups = bulk.group(await bulk.select(store, bulk.parse_where(bulk_store.FILTER), now=built.now))
    # meanwhile: someone answers one of them, someone cancels another
    (sa, ia), (sc, ic) = built.small[bulk_store.SMALL[3]], built.small[bulk_store.SMALL[7]]
    await operations.answer(store, sa, {f"finance-{bulk_store.SMALL[3]}": {"approved": False}}, ia,
                            registry=bulk_store.registry(), operator="fiona")
    await cancel_invocation(store, sc, ic, operator="olga", reason="customer withdrew")
    progress: list[tuple[str, int, int]] = []
    done = await bulk.submit(
        store, groups, bulk_store.APPROVE, registry=bulk_store.registry(), operator="ann", reason="small refunds",
        on_result=lambda r, n, total: progress.append((r.status, n, total)),
    )
    assert done.summary() == f"batch {done.batch}: 38 applied, 2 refused of 40 invocations"
    assert not done.ok and len(progress) == 40 and progress[-1][1:] == (40, 40)
    refused = {(r.group.session_id, r.group.invocation_id): r.reason for r in done.not_applied}
    assert set(refused) == {(sa, ia), (sc, ic)}
    assert f"finance-{bulk_store.SMALL[3]}" in refused[(sa, ia)] and "already" in refused[(sa, ia)]
    assert "cancelled" in refused[(sc, ic)] and "customer withdrew" in refused[(sc, ic)]
    # the others were applied: their finance approval completed, risk still open
    still = {r.interrupt_id for r in (await store.open_interrupts(limit=1000)).items}
    applied = [o for o in bulk_store.SMALL if o not in (bulk_store.SMALL[3], bulk_store.SMALL[7])]
    assert not any(f"finance-{o}" in still for o in applied)
    assert all(f"risk-{o}" in still for o in applied)
    # one audit row per applied invocation, tied by the batch id, with operator and reason
    rows = [r for r in (await store.audit_log(action="answer", limit=200)).items if r.details.get("batch")]
    assert len(rows) == 38 and {r.details["batch"] for r in rows} == {done.batch}
    assert {(r.operator, r.reason) for r in rows} == {("ann", "small refunds")}
    assert sorted((r.session_id, r.invocation_id) for r in rows) == sorted(
        built.small[o] for o in applied)
    assert all(len(r.details["ids"]) == 1 for r in rows)  # one message per invocation
    lines = [r.line() for r in done.results]
    assert sum(line.startswith("applied ") for line in lines) == 38
    assert sum(line.startswith("refused ") for line in lines) == 2


async def test_submit_with_an_invalid_answer_refuses_every_item_and_writes_nothing(refunds) -> None:
    store, built = refunds
    groups = bulk.group(await bulk.select(store, bulk.parse_where(bulk_store.FILTER), now=built.now))
    seqs = {sid: (await store.get_session(sid)).last_seq for sid, _ in built.small.values()}
    done = await bulk.submit(store, groups, {"approved": "maybe"}, registry=bulk_store.registry())
    assert done.count("refused") == 40 and done.count("applied") == 0
    assert all("approved" in (r.reason or "") for r in done.results)
    assert {sid: (await store.get_session(sid)).last_seq for sid, _ in built.small.values()} == seqs


async def test_an_invocation_with_two_selected_ids_gets_one_message_with_both(tmp_path: Path) -> None:
    store: SessionStore = await open_store("sqlite", tmp_path)
    built = await bulk_store.build(store, FIXTURE_EPOCH)
    sid, inv = built.small[bulk_store.SMALL[0]]
    groups = bulk.group(await bulk.select(store, bulk.parse_where(f"session={sid}"), now=built.now))
    ids = sorted(g for grp in groups if grp.invocation_id == inv for g in grp.interrupt_ids)
    assert ids == [f"finance-{bulk_store.SMALL[0]}", f"risk-{bulk_store.SMALL[0]}"]
    done = await bulk.submit(store, groups, bulk_store.APPROVE, registry=bulk_store.registry(), operator="ann")
    assert done.ok
    result = next(r for r in done.results if r.group.invocation_id == inv)
    assert result.outcome is not None and "pay" in " ".join(result.outcome.ran)  # both approved: it paid
    await store.close()
