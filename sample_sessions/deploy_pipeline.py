"""Deploy pipeline: a loop with an approval gate and a flaky verification step.

``deploy -> gate -> verify -> {"retry": deploy, "ok": done}``

* ``deploy`` counts iterations in session state, so every loop iteration is a
  fresh dispatch with a fresh run id (``deploy@1``, ``deploy@2``...) and its
  gate a fresh, session-unique interrupt id (``gate-1``, ``gate-2``...).
* ``gate`` asks the operator to promote or redeploy the canary.
* ``verify`` is flaky on purpose, deterministically: its first attempt of every
  run times out, the retry (``RetryConfig``, same run id) succeeds. It routes
  ``retry`` when the operator asked for a redeploy, else ``ok``.

Start with the version as the message (``"v2.4.1"``).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel

from engine import START, RequestInput, RetryConfig, Workflow, node

app_name = "deploy_pipeline"


class GateDecision(BaseModel):
    decision: Literal["promote", "redeploy"]
    note: str = ""


@node
async def deploy(ctx, node_input: Any) -> dict[str, Any]:
    iteration = int(ctx.state.get("deploy_iterations", 0)) + 1
    ctx.state["deploy_iterations"] = iteration
    version = node_input if isinstance(node_input, str) else node_input["version"]
    canary = {"version": version.strip(), "iteration": iteration, "canary_hosts": 2 + iteration % 3}
    ctx.state["canary"] = canary
    return canary


@node
async def gate(node_input: dict[str, Any]):
    yield RequestInput(
        f"Canary {node_input['version']} (iteration {node_input['iteration']}) on "
        f"{node_input['canary_hosts']} hosts: promote or redeploy?",
        payload=node_input,
        response_schema=GateDecision,
        interrupt_id=f"gate-{node_input['iteration']}",
    )


@node(retry=RetryConfig(max_attempts=3, initial_delay=0.0, retry_on=(TimeoutError,)))
async def verify(ctx, node_input: dict[str, Any]) -> dict[str, Any]:
    if ctx.attempt_count == 1:
        raise TimeoutError("health endpoint did not answer within 5s")
    canary = ctx.state["canary"]
    ctx.route = "retry" if node_input["decision"] == "redeploy" else "ok"
    return {"version": canary["version"], "iteration": canary["iteration"], "healthy": True}


@node
async def done(node_input: dict[str, Any]) -> dict[str, Any]:
    return {"released": node_input["version"], "iterations": node_input["iteration"]}


workflow = Workflow("pipeline", [(START, deploy, gate, verify, {"retry": deploy, "ok": done})])
