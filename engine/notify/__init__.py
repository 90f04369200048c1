"""Notifications: tell people when a human is needed.

- :mod:`.config` -- ``[notify]`` of ``hitl.toml``: rules (which events, the
  inbox's filter terms, which channels) and channels (webhook, Slack, SMTP),
  secrets from the config or the environment, never shown.
- :mod:`.facts` -- what needs a notification now, read from the rows the store
  writes in the same transaction as the causing event (the outbox: see
  :mod:`engine.store.notify`), each with a stable key.
- :mod:`.channels` -- sending one notification: the webhook's JSON with its
  HMAC-SHA256 signature over a timestamp, Slack's incoming-webhook format,
  e-mail over SMTP with STARTTLS; :func:`.channels.verify_signature` is what a
  receiver runs.
- :mod:`.sender` -- :class:`~.sender.Sender`: claim, send, record, with retries
  and backoff (``hitl notify``, or inside ``hitl worker``).
- :mod:`.links` -- signed, expiring, single-use answer links bound to one
  interrupt and one recipient (``hitl link``, the answer page of ``hitl serve``).
"""
