"""Sample apps for hitl-console and the generator of the demo store.

Each app is a module with an ``app_name`` and a ``workflow`` (its root node),
written as a user of the engine would write it (deterministic, no network):

* :mod:`~sample_sessions.refund_approval` -- parallel approvals, a JoinNode, a
  payment side effect that must never run twice;
* :mod:`~sample_sessions.document_review` -- a nested workflow whose reviewer
  yields an output and an interrupt in the same run;
* :mod:`~sample_sessions.deploy_pipeline` -- a loop with an approval gate per
  iteration and a flaky step with retries;
* :mod:`~sample_sessions.labelling_batch` -- an orchestration node running one
  dynamic child per item (dozens of interrupt ids);
* :mod:`~sample_sessions.incident` -- a node that fails after resume, then is
  re-driven;
* :mod:`~sample_sessions.contract_review` -- a parallel worker over N documents,
  the flagged ones waiting for a lawyer independently.

They are registered by default in :class:`engine.apps.AppRegistry`.

:mod:`~sample_sessions.demo` builds a demo store from them::

    python -m sample_sessions --db PATH [--sessions N] [--fresh] [--clock EPOCH]
    hitl demo ...                      # the same

The committed fixture store for tests (``sample_sessions/fixtures/demo.sqlite``,
fixed clock, see :data:`~sample_sessions.demo.FIXTURE_EPOCH`) is regenerated with::

    python -m sample_sessions.fixtures
"""

from . import contract_review, deploy_pipeline, document_review, incident, labelling_batch, refund_approval

APPS = {
    m.app_name: m
    for m in (refund_approval, document_review, deploy_pipeline, labelling_batch, incident, contract_review)
}
"""app name -> sample module."""

__all__ = ["APPS", "contract_review", "deploy_pipeline", "document_review", "incident", "labelling_batch", "refund_approval"]
