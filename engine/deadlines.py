"""Deadlines with a default outcome, reminders and escalation: the rules.

A rule is stored with the interrupt it applies to, in its call's arguments
(``args["deadline"]``), so nothing but the store is needed to enforce it (no
workflow code): :mod:`engine.deadline_sweep` fires it. Where it comes from:

* ``RequestInput(..., deadline=timedelta(hours=4), on_deadline=answer(False))``
  in the workflow's code (:class:`engine.nodes.RequestInput`);
* ``[[deadlines]]`` in ``hitl.toml`` per app and node, for workflows you do not
  own (:func:`load_rules`), stamped on the call by the Runner that raises it.

What a rule does, each at a time measured from when the interrupt was asked
(its ``raised_at``), each a *timer* (one row per step in the store, fired
exactly once):

* ``answer(value)`` -- at the deadline, answer with ``value`` (checked against
  the response schema when the rule is built: a bad value is one clear line);
* ``fail(error, message)`` -- at the deadline, fail the waiting node with the
  named error (the invocation is FAILED; a re-drive asks again);
* ``escalate(step, ...)`` -- no default answer; its steps run instead.

Steps (any number, on any outcome): ``remind(after=..., channels=...)``
reminds the owner (or the channels), ``notify(*channels)`` tells other
channels, ``assign(group)`` reassigns the interrupt to a group. A step's
``after`` defaults to the deadline. Every step fired is an audited event
(operator ``deadline``, a reason naming the rule).

Blind spots: the clock is the sweeping process's (keep hosts in NTP); an
interrupt asked again (re-raised) starts its timers again, as its age does.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Literal

from .errors import HitlError

OPERATOR = "deadline"
"""The operator every deadline write is recorded under (``hitl audit --operator deadline``)."""

Do = Literal["answer", "fail", "escalate", "remind", "notify", "assign"]


class DeadlineConfigError(HitlError):
    """A deadline rule is wrong (a bad default answer, duration, channel): one line, nothing stored."""


def seconds(value: Any, what: str) -> float:
    """A duration (``timedelta``, seconds, or text such as ``"4h"``, ``"90m"``, ``"1h30m"``) in seconds."""
    if isinstance(value, timedelta):
        out = value.total_seconds()
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        out = float(value)
    elif isinstance(value, str):
        out = parse_duration(value, what)
    else:
        raise DeadlineConfigError(f"{what} must be a duration (timedelta, seconds or text like '4h'), not {value!r}")
    if not math.isfinite(out) or out < 0:
        raise DeadlineConfigError(f"{what} must be a duration of at least 0, not {value!r}")
    return out


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_PART = re.compile(r"(\d+(?:\.\d+)?)\s*([smhdw])")


def parse_duration(text: str, what: str = "the duration") -> float:
    """``"4h"``, ``"90m"``, ``"1h30m"``, ``"2d"``, ``"45s"`` -> seconds."""
    t = text.strip().lower()
    if not t or _PART.sub("", t).strip():
        raise DeadlineConfigError(f"{what} {text!r} is not a duration; write it like 45s, 90m, 4h, 1h30m or 2d")
    return float(sum(float(n) * _UNITS[u] for n, u in _PART.findall(t)))


@dataclass(frozen=True)
class Step:
    """One reminder or escalation step."""

    do: Literal["remind", "notify", "assign"]
    after: float | None = None
    """Seconds after the interrupt was asked (None: at the deadline)."""
    channels: tuple[str, ...] = ()
    """``[notify.channels]`` names to tell (a reminder without any reminds the owner only)."""
    group: str | None = None
    """``assign``: the group the interrupt is reassigned to."""

    def to_json(self, deadline: float) -> dict[str, Any]:
        out: dict[str, Any] = {"after": deadline if self.after is None else self.after, "do": self.do}
        if self.channels:
            out["channels"] = list(self.channels)
        if self.group:
            out["group"] = self.group
        return out


def remind(after: Any = None, channels: tuple[str, ...] | list[str] = ()) -> Step:
    """Remind the interrupt's owner (and ``channels``) ``after`` it was asked."""
    return Step("remind", None if after is None else seconds(after, "remind(after=)"), _names(channels, "remind"))


def notify(*channels: str, after: Any = None) -> Step:
    """Tell ``channels`` (``[notify.channels]`` names) that it is still waiting."""
    if not channels:
        raise DeadlineConfigError("notify() needs at least one channel name")
    return Step("notify", None if after is None else seconds(after, "notify(after=)"), _names(channels, "notify"))


def assign(group: str, after: Any = None, channels: tuple[str, ...] | list[str] = ()) -> Step:
    """Reassign the interrupt to ``group`` (and tell ``channels``)."""
    if not isinstance(group, str) or not group.strip():
        raise DeadlineConfigError(f"assign() needs a group name, not {group!r}")
    return Step("assign", None if after is None else seconds(after, "assign(after=)"), _names(channels, "assign"),
                group.strip())


def _names(channels: Any, what: str) -> tuple[str, ...]:
    if isinstance(channels, str):
        channels = (channels,)
    out = tuple(channels)
    if not all(isinstance(c, str) and c.strip() for c in out):
        raise DeadlineConfigError(f"{what}(): channel names must be non-empty text, not {list(out)!r}")
    return out


@dataclass(frozen=True)
class Outcome:
    """What happens at the deadline (:func:`answer`, :func:`fail`, :func:`escalate`)."""

    do: Literal["answer", "fail", "escalate"]
    value: Any = None
    error: str | None = None
    message: str = ""
    steps: tuple[Step, ...] = field(default_factory=tuple)


def answer(value: Any, *steps: Step) -> Outcome:
    """At the deadline answer with ``value`` (an ordinary audited answer, operator ``deadline``)."""
    return Outcome("answer", value=value, steps=_steps(steps))


def fail(error: str, message: str = "", *steps: Step) -> Outcome:
    """At the deadline fail the waiting node with the error ``error`` (a name, such as ``NoApprover``)."""
    if not isinstance(error, str) or not re.fullmatch(r"[A-Za-z_][\w.]*", error):
        raise DeadlineConfigError(f"fail() needs an error name such as 'NoApprover', not {error!r}")
    return Outcome("fail", error=error, message=str(message), steps=_steps(steps))


def escalate(*steps: Step) -> Outcome:
    """No default answer: run ``steps`` (reminders, notifications, reassignments)."""
    if not steps:
        raise DeadlineConfigError("escalate() needs at least one step (remind, notify or assign)")
    return Outcome("escalate", steps=_steps(steps))


def _steps(steps: tuple[Any, ...]) -> tuple[Step, ...]:
    for s in steps:
        if not isinstance(s, Step):
            raise DeadlineConfigError(f"a deadline step must be remind(), notify() or assign(), not {s!r}")
    return tuple(steps)


def build(deadline: Any, on_deadline: Outcome | None, schema: dict[str, Any] | None, *, rule: str,
          where: str) -> dict[str, Any]:
    """The JSON stored with the interrupt (``args["deadline"]``), checked now:
    the durations, and a default answer against the response schema (coerced
    as a human's answer would be). ``where`` names the question in errors."""
    from .responses import coerce_response

    after = seconds(deadline, f"{where}: deadline")
    if on_deadline is None:
        raise DeadlineConfigError(f"{where}: a deadline needs on_deadline= (answer(...), fail(...) or escalate(...))")
    if not isinstance(on_deadline, Outcome):
        raise DeadlineConfigError(f"{where}: on_deadline must be answer(...), fail(...) or escalate(...), "
                                  f"not {on_deadline!r}")
    timers: list[dict[str, Any]] = [s.to_json(after) for s in on_deadline.steps]
    if on_deadline.do == "answer":
        value, errors = coerce_response(schema, on_deadline.value)
        if errors:
            raise DeadlineConfigError(f"{where}: the default answer {on_deadline.value!r} does not fit the response "
                                      f"schema: {'; '.join(errors)}")
        timers.append({"after": after, "do": "answer", "value": value})
    elif on_deadline.do == "fail":
        timers.append({"after": after, "do": "fail", "error": on_deadline.error, "message": on_deadline.message})
    timers.sort(key=lambda t: t["after"])  # stable: steps at the deadline come before its outcome
    return {"rule": rule, "after": after, "on_deadline": on_deadline.do, "timers": timers}


def rule_of(args: dict[str, Any] | None) -> dict[str, Any] | None:
    """The stored rule of an interrupt's call arguments (None: it has none)."""
    found = (args or {}).get("deadline")
    return found if isinstance(found, dict) and isinstance(found.get("timers"), list) else None


def due_at(args: dict[str, Any] | None, raised_at: float) -> float | None:
    """When the interrupt's deadline passes (None: it has none)."""
    rule = rule_of(args)
    if rule is None:
        return None
    try:
        return raised_at + float(rule["after"])
    except (KeyError, TypeError, ValueError):
        return None


def describe(timer: dict[str, Any], rule: dict[str, Any]) -> str:
    """The reason recorded with a fired timer: names the rule and what it did."""
    after = _human(float(rule.get("after", 0)))
    name = rule.get("rule") or "RequestInput"
    do = timer.get("do")
    if do == "answer":
        return f"deadline rule {name}: no answer within {after}; default answer applied"
    if do == "fail":
        return f"deadline rule {name}: no answer within {after}; failed with {timer.get('error')}"
    when = _human(float(timer.get("after", 0)))
    return f"deadline rule {name}: {do} after {when}"


def _human(s: float) -> str:
    """``14400`` -> ``4h``; ``5400`` -> ``1h30m``; ``45`` -> ``45s``."""
    s = round(s)
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if s >= size:
            parts.append(f"{s // size}{unit}")
            s %= size
    if s or not parts:
        parts.append(f"{s}s")
    return "".join(parts)


def time_left(due: float | None, now: float) -> str:
    """``3h12m left``, ``due now``, ``overdue 5m`` -- what the console and the CLI show ('' without a deadline)."""
    if due is None:
        return ""
    left = due - now
    if left >= 60:
        return f"{_human(left - left % 60)} left"
    if left > -60:
        return "due now"
    return f"overdue {_human(-left - (-left) % 60)}"


# ------------------------------------------------------------------ hitl.toml
@dataclass(frozen=True)
class ConfigRule:
    """A ``[[deadlines]]`` entry: a rule for an app's node, set without its code."""

    name: str
    app: str
    node: str | None
    deadline: float
    outcome: Outcome

    def matches(self, app_name: str, path: str) -> bool:
        if app_name != self.app:
            return False
        if self.node is None:
            return True
        leaf = path.rsplit("/", 1)[-1].split("@", 1)[0]
        return leaf == self.node


def load_rules(data: dict[str, Any], source: str = "hitl.toml") -> tuple[ConfigRule, ...]:
    """``[[deadlines]]`` of a parsed hitl.toml::

        [[deadlines]]
        name = "refund default"           # named in the audit's reason
        app = "refunds"
        node = "approve"                  # optional: every node of the app
        after = "4h"
        on_deadline = "answer"            # answer | fail | escalate
        answer = false                    # on_deadline = "answer"
        error = "NoApprover"              # on_deadline = "fail" (message = "...")
        remind_after = "1h"               # optional steps: remind the owner (remind_channels = [...])
        notify = ["pager"]                # at notify_after (default: the deadline)
        assign = "finance-leads"          # at assign_after (default: the deadline)

    A default answer is checked against each interrupt's schema when the rule
    is stamped on it (its schema is in the call); everything else here."""
    entries = data.get("deadlines", [])
    if not isinstance(entries, list):
        raise DeadlineConfigError(f"{source}: [[deadlines]] must be an array of tables")
    out = []
    for i, e in enumerate(entries):
        where = f"{source}: [[deadlines]] #{i + 1}"
        if not isinstance(e, dict):
            raise DeadlineConfigError(f"{where} must be a table")
        known = {"name", "app", "node", "after", "on_deadline", "answer", "error", "message", "remind_after",
                 "remind_channels", "notify", "notify_after", "assign", "assign_after"}
        extra = sorted(set(e) - known)
        if extra:
            raise DeadlineConfigError(f"{where}: unknown key {extra[0]!r} (known: {', '.join(sorted(known))})")
        app = e.get("app")
        if not isinstance(app, str) or not app:
            raise DeadlineConfigError(f"{where}: app = \"NAME\" is required")
        after = seconds(e.get("after", ""), f"{where}: after")
        steps: list[Step] = []
        if "remind_after" in e:
            steps.append(remind(e["remind_after"], e.get("remind_channels", ())))
        if "notify" in e:
            steps.append(notify(*_names(e["notify"], "notify"), after=e.get("notify_after")))
        if "assign" in e:
            steps.append(assign(e["assign"], after=e.get("assign_after")))
        kind = e.get("on_deadline")
        if kind == "answer":
            if "answer" not in e:
                raise DeadlineConfigError(f"{where}: on_deadline = \"answer\" needs answer = VALUE")
            outcome = answer(e["answer"], *steps)
        elif kind == "fail":
            outcome = fail(str(e.get("error", "")), str(e.get("message", "")), *steps)
        elif kind == "escalate":
            outcome = escalate(*steps) if steps else escalate()
        else:
            raise DeadlineConfigError(f"{where}: on_deadline must be \"answer\", \"fail\" or \"escalate\", not {kind!r}")
        node = e.get("node")
        out.append(ConfigRule(str(e.get("name") or f"{app}{'.' + node if node else ''}"), app, node, after, outcome))
    return tuple(out)


def check_rules(rules: tuple[ConfigRule, ...], apps: dict[str, Any]) -> None:
    """Each rule for one of ``apps`` (name -> root workflow) names a node its graph
    has (DeadlineConfigError otherwise: checked when the workers start, not when the
    first interrupt is raised)."""
    for r in rules:
        root = apps.get(r.app)
        if root is None or r.node is None:
            continue
        names = _node_names(root)
        if r.node not in names:
            raise DeadlineConfigError(f"hitl.toml deadline rule {r.name!r}: app {r.app} has no node {r.node!r} "
                                      f"(its nodes: {', '.join(sorted(names))})")


def _node_names(node: Any, seen: set[int] | None = None) -> set[str]:
    seen = set() if seen is None else seen
    if id(node) in seen:
        return set()
    seen.add(id(node))
    out = {str(getattr(node, "name", ""))}
    for child in (getattr(node, "nodes", None) or {}).values():
        out |= _node_names(child, seen)
    for attr in ("node", "child"):
        inner = getattr(node, attr, None)
        if inner is not None and hasattr(inner, "name") and not isinstance(inner, str):
            out |= _node_names(inner, seen)
    return out


def stamp(args: dict[str, Any], app_name: str, path: str, rules: tuple[ConfigRule, ...]) -> dict[str, Any]:
    """``args`` with the first matching hitl.toml rule stored in it (a rule the
    code set itself wins). Raises DeadlineConfigError when its default answer
    does not fit this interrupt's schema (the node fails, naming the rule)."""
    if not rules or rule_of(args) is not None:
        return args
    for r in rules:
        if r.matches(app_name, path):
            built = build(r.deadline, r.outcome, args.get("response_schema"), rule=r.name,
                          where=f"hitl.toml deadline rule {r.name!r} at {path}")
            return {**args, "deadline": built}
    return args
