"""The answer page of a signed link: ``/answer/{token}`` on ``hitl serve``.

No console and no sign-in: the link is the credential (:mod:`engine.notify.links`:
signed, expiring, bound to one interrupt as raised and to one recipient). The
page shows the interrupt's message and payload (secrets masked), a form built
from its schema (:func:`engine.schema_view.form_spec`: Approve/Reject for a
boolean, or for an object with one required boolean; fields for the rest; a
JSON box when the schema has no form), a reason, and a dry run. The answer
goes through :func:`engine.operations.answer` (or, without the app's code
here, :func:`engine.handoff.queue_answer`) with the recipient as the
operator, so ``hitl audit`` names them.

Single use by construction: the form is offered only while that raising of
the interrupt is open. Once it is answered (here or anywhere), cancelled or
asked again, or the link expired, the page says so, and who answered when.
A forged, altered or oversized token is "not valid" (403); an expired one
410. Posts from another origin are refused by the server's guard.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

import aiohttp_jinja2
from aiohttp import web

from engine.errors import HitlError

if TYPE_CHECKING:
    from .api_core import ApiContext

PREFIX = "/answer/"
SLACK_ACTIONS = PREFIX + "slack/actions"
"""The Request URL of the Slack app whose Approve/Reject buttons call back."""
MAX_SLACK_BODY = 64 * 1024


def _when(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(t))


class AnswerPages:
    def __init__(self, ctx: ApiContext, config: Any) -> None:
        self.ctx = ctx
        self.secret: str | None = config.link_secret if config is not None else None
        self.slack_secrets = [c.signing_secret for c in (config.channels.values() if config is not None else ())
                              if c.type == "slack" and c.signing_secret]

    def routes(self) -> list[web.RouteDef]:
        return [web.post(SLACK_ACTIONS, self.slack), web.get(PREFIX + "{token}", self.page),
                web.post(PREFIX + "{token}", self.post)]

    def _render(self, request: web.Request, status: int = 200, **context: Any) -> web.Response:
        base = {"heading": "Answer", "meta": "", "message": "", "payload": "", "status_line": "", "status_class": "",
                "plan": "", "form": False, "fields": [], "json_field": False, "schema_text": "", "boolean": False}
        response = aiohttp_jinja2.render_template("answer.html", request, {**base, **context}, status=status)
        response.headers["Cache-Control"] = "no-store"
        response.headers["Referrer-Policy"] = "no-referrer"
        return response

    async def _link(self, request: web.Request) -> Any:
        from engine.notify.links import LinkError, read_token

        if not self.secret:
            raise web.HTTPNotFound(text="answer links are not configured on this server ([notify] link_secret_env)\n")
        try:
            return read_token(self.secret, request.match_info["token"])
        except LinkError as exc:
            raise _Refused(410 if exc.reason == "expired" else 403, str(exc)) from None

    async def _state(self, link: Any) -> tuple[Any | None, str | None]:
        """(the open interrupt record, None) or (None, what happened to it)."""
        store = self.ctx.db
        rows = await store.lookup_interrupts(link.session_id, [link.interrupt_id])
        row = max(rows, key=lambda r: r.raised_seq, default=None)
        if row is None:
            return None, "this interrupt does not exist (any more)"
        if row.raised_seq != link.raised_seq:
            return None, "this question was asked again since the link was made; this link was for the earlier one"
        if row.status == "open":
            return row, None
        who, when = "someone", None
        if row.resolved_seq is not None:
            event = (await store.event_at(link.session_id, row.resolved_seq)).event
            who = (event.custom_metadata or {}).get("operator") or "someone"
            when = event.timestamp
        verb = "answered" if row.status == "resolved" else "cancelled"
        return None, f"already {verb} by {who}" + (f" at {_when(when)}" if when else "")

    async def page(self, request: web.Request) -> web.StreamResponse:
        try:
            link = await self._link(request)
        except _Refused as r:
            return self._render(request, r.status, heading="This link does not work", status_line=r.message,
                                status_class="error")
        row, gone = await self._state(link)
        if row is None:
            return self._render(request, 200, heading="Nothing to answer", status_line=gone, status_class="done")
        return self._render(request, **self._form(link, row))

    def _form(self, link: Any, row: Any, **extra: Any) -> dict[str, Any]:
        from engine.schema_view import NotAForm, form_spec, schema_text

        red = self.ctx.redactor()
        red.learn_from(row.args)
        schema = row.args.get("response_schema")
        ctx: dict[str, Any] = {
            "heading": f"{row.app_name}: {row.interrupt_id}",
            "meta": f"for {link.to} · session {row.session_id} · link expires {_when(link.expires)}",
            "message": red.text(str(row.args.get("message", ""))),
            "payload": json.dumps(red.value(row.args.get("payload")), indent=2, ensure_ascii=False)
            if row.args.get("payload") is not None else "",
            "form": True,
        }
        try:
            spec = form_spec(schema)
        except NotAForm:
            spec = None
        if spec is not None and spec.kind == "boolean":
            ctx["boolean"] = True
        elif spec is not None and spec.kind == "object" and all(f.kind in ("boolean", "enum", "string", "integer",
                                                                               "number") for f in spec.fields):
            flags = [f for f in spec.fields if f.kind == "boolean" and f.required]
            ctx["boolean"] = len(flags) == 1
            ctx["fields"] = [{"name": f.name, "label": f.name, "required": f.required, "help": f.help_text(),
                              "choices": [json.dumps(c) if not isinstance(c, str) else c for c in f.enum]
                              if f.kind == "enum" else (["true", "false"] if f.kind == "boolean" else []),
                              "value": "" if not f.has_default else str(f.default)}
                             for f in spec.fields if not (ctx["boolean"] and f is flags[0])]
        else:
            ctx["json_field"] = True
            ctx["schema_text"] = schema_text(schema)
        return {**ctx, **extra}

    def _value(self, form: Any, row: Any, action: str) -> Any:
        from engine.jsonin import loads
        from engine.schema_view import NotAForm, form_spec

        try:
            spec = form_spec(row.args.get("response_schema"))
        except NotAForm:
            spec = None
        decision = action.removeprefix("dry-")
        if spec is not None and spec.kind == "boolean":
            return decision == "approve"
        if spec is not None and spec.kind == "object" and "json" not in form:
            value: dict[str, Any] = {}
            flags = [f for f in spec.fields if f.kind == "boolean" and f.required]
            for f in spec.fields:
                if len(flags) == 1 and f is flags[0]:
                    value[f.name] = decision == "approve"
                    continue
                raw = str(form.get(f"f.{f.name}", ""))
                if raw != "":
                    value[f.name] = raw  # the engine's validation coerces ("42" -> 42, "true" -> true)
            return value
        return loads(str(form.get("json", "")), "the answer")

    async def post(self, request: web.Request) -> web.StreamResponse:
        from engine import operations

        try:
            link = await self._link(request)
        except _Refused as r:
            return self._render(request, r.status, heading="This link does not work", status_line=r.message,
                                status_class="error")
        row, gone = await self._state(link)
        if row is None:
            return self._render(request, 409, heading="Nothing to answer", status_line=gone, status_class="done")
        form = await request.post()
        action = str(form.get("action", "submit"))
        reason = str(form.get("reason", "")).strip()[:2000] or None
        red = self.ctx.redactor()
        store = self.ctx.db
        try:
            answers = {row.interrupt_id: self._value(form, row, action)}
            red.learn_from(answers)
            if action.startswith("dry-"):
                from console.cli.render import render_plan

                dry = await operations.dry_run(store, row.session_id, answers, row.invocation_id,
                                               app_name=row.app_name, registry=self.ctx.registry)
                plan = "\n".join(red.text(line) for line in render_plan(red, dry.plan, row.session_id, dry.next_runs))
                return self._render(request, **self._form(link, row, plan=plan))
            done = await self._answer(row, answers, link.to, reason)
        except HitlError as exc:
            return await self._refusal(request, link, exc, red)
        if done.error is not None and not done.written:
            return await self._refusal(request, link, done.error, red)
        return self._render(request, heading="Answered", status_class="done",
                            status_line=f"answered by {link.to} at {_when(time.time())}; thank you")

    async def _answer(self, row: Any, answers: dict[str, Any], operator: str, reason: str | None) -> Any:
        """The answer, as the operator: here, or left to a worker when this server has no code for the app."""
        from engine import operations

        store = self.ctx.db  # here, or left to a worker without the app's code (engine.routing); not followed
        done = await operations.answer(store, row.session_id, answers, row.invocation_id, registry=self.ctx.registry,
                                       operator=operator, reason=reason, via="auto", wait=False)
        for waker in list(self.ctx.wakers):
            waker.poke()
        return done

    async def slack(self, request: web.Request) -> web.StreamResponse:
        """A Slack button's callback: answered only when Slack's signature over the
        body checks out (a channel's ``signing_secret``) and its link is good."""
        from urllib.parse import parse_qs

        from engine.notify.channels import verify_slack
        from engine.notify.links import LinkError, read_token

        from .config import valid_name

        if not self.slack_secrets or not self.secret:
            raise web.HTTPNotFound(text="no Slack channel with a signing_secret on this server\n")
        body = await request.content.read(MAX_SLACK_BODY + 1)
        ts, sig = request.headers.get("X-Slack-Request-Timestamp"), request.headers.get("X-Slack-Signature")
        if len(body) > MAX_SLACK_BODY or not any(verify_slack(s, ts, sig, body) for s in self.slack_secrets):
            return web.json_response({"text": "refused: not a signed Slack request"}, status=401)
        try:
            payload = json.loads(parse_qs(body.decode("utf-8"))["payload"][0])
            decision, _, token = str(payload["actions"][0]["value"]).partition(":")
            user = payload.get("user") or {}
            clicker = str(user.get("username") or user.get("name") or user.get("id") or "")
        except (KeyError, IndexError, TypeError, ValueError, UnicodeDecodeError):
            return web.json_response({"text": "refused: not a button of a hitl message"}, status=400)
        if decision not in ("approve", "reject"):
            return web.json_response({"text": "refused: not a button of a hitl message"}, status=400)

        def say(text: str) -> web.Response:
            return web.json_response({"response_type": "ephemeral", "replace_original": False, "text": text})

        try:
            link = read_token(self.secret, token)
        except LinkError as exc:
            return say(str(exc))
        row, gone = await self._state(link)
        if row is None:
            return say(gone or "nothing to answer")
        operator = f"{clicker} via {link.to}" if clicker and valid_name(f"{clicker} via {link.to}") else link.to
        try:
            done = await self._answer(row, {row.interrupt_id: self._value({}, row, decision)}, operator, None)
        except HitlError as exc:
            return say(" ".join(str(exc).split()))
        if done.error is not None and not done.written:
            _, gone = await self._state(link)
            return say(gone or " ".join(str(done.error).split()))
        return say(f"{decision}d by {operator}")

    async def _refusal(self, request: web.Request, link: Any, exc: BaseException, red: Any) -> web.Response:
        from .api_core import one_line

        row, gone = await self._state(link)
        if row is None:
            return self._render(request, 409, heading="Nothing to answer", status_line=gone, status_class="done")
        return self._render(request, 422, **self._form(link, row, status_line=one_line(red, str(exc)),
                                                       status_class="error"))


class _Refused(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message
