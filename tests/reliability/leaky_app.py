"""An app that leaks secrets in every shape an output can carry them: secret
key names of every kind, top-level state keys, a DSN and a bearer token inside
strings, ``["password", value]`` pairs, a schema default, free text in an
interrupt message and in an exception, and (from the test) a wrapped answer,
a start message and an operator's reason."""

from __future__ import annotations

from typing import Any

from engine import START, RequestInput, Workflow, node

SECRETS = {
    "state_api_key": "sk-state-0001",
    "state_authorization": "Basic c3RhdGUtYXV0aA",
    "cookie": "sess-cookie-0002",
    "auth": "auth-value-0003",
    "passwd": "passwd-value-0004",
    "pwd": "pwd-value-0005",
    "passphrase": "passphrase-0006",
    "private_key": "-----BEGIN-KEY-0007",
    "credentials": "cred-value-0008",
    "bearer": "bearer-value-0009",
    "dsn": "dsn-pw-0010",
    "pair": "pair-value-0011",
    "token_text": "tok3n-in-text-0012",
    "schema_default": "default-pw-0013",
    "message_dsn": "msg-dsn-pw-0014",
    "answer_password": "answered-pw-0015",
    "start_message": "start-msg-tok-0016",
    "reason": "reason-pw-0017",
    "echoed": "echoed-pw-0018",
}
S = SECRETS


@node
async def connect(ctx, node_input: str) -> dict[str, Any]:
    ctx.state["api_key"] = S["state_api_key"]
    ctx.state["Authorization"] = S["state_authorization"]
    ctx.state["region"] = "eu-west-1"
    return {
        "host": "db.internal",
        "Cookie": S["cookie"],
        "auth": S["auth"],
        "passwd": S["passwd"],
        "pwd": S["pwd"],
        "passphrase": S["passphrase"],
        "private_key": S["private_key"],
        "credentials": {"user": "svc", "value": S["credentials"]},
        "headers": {"X-Trace": "Bearer " + S["bearer"]},
        "url": f"postgresql://svc:{S['dsn']}@db.internal:5432/app",
        "args": [["password", S["pair"]], ["user", "svc"]],
        "note": f"rotated with token={S['token_text']}",
    }


@node
async def confirm(node_input: dict[str, Any]):
    yield RequestInput(
        f"Rotate the credentials of mysql://root:{S['message_dsn']}@db.internal?",
        payload={"host": node_input["host"]},
        response_schema={
            "type": "object",
            "properties": {
                "rotate": {"type": "boolean"},
                "password": {"type": "string", "maxLength": 40, "default": S["schema_default"]},
            },
            "required": ["rotate"],
        },
        interrupt_id="rotate",
    )


@node
async def rotate(node_input: Any) -> dict[str, Any]:
    raise RuntimeError(f"login refused for svc with {node_input['password']}; vault said no")


workflow = Workflow("leaky", [(START, connect, confirm, rotate)])
