"""An app that handles secrets everywhere a value can be: session state, node
input and output, an interrupt's payload, the operator's answer."""

from __future__ import annotations

from typing import Any

from engine import START, RequestInput, Workflow, node

SECRET = "hunter2-s3cr3t"


@node
async def connect(ctx, node_input: str) -> dict[str, Any]:
    ctx.state["api_key"] = SECRET
    ctx.state["region"] = "eu-west-1"
    return {"host": "db.internal", "password": SECRET, "nested": [{"access_token": SECRET}]}


@node
async def confirm(node_input: dict[str, Any]):
    yield RequestInput(
        "Rotate the credentials?",
        payload={"host": node_input["host"], "client_secret": SECRET},
        response_schema={
            "type": "object",
            "properties": {"rotate": {"type": "boolean"}, "new_password": {"type": "string"}},
            "required": ["rotate"],
        },
        interrupt_id="rotate",
    )


@node
async def rotate(node_input: Any) -> dict[str, Any]:
    return {"rotated": True, "answer": node_input}


workflow = Workflow("secrets", [(START, connect, confirm, rotate)])
