"""``google.adk.workflow._node_status`` look-alike: ``NodeStatus`` (the engine's; same six values)."""

from ...models import NodeStatus

__all__ = ["NodeStatus"]
