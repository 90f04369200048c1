"""``google.adk.workflow._parallel_worker`` look-alike (ADK code and tests import from this private path)."""

from .._nodes import ParallelWorker

_ParallelWorker = ParallelWorker

__all__ = ["ParallelWorker", "_ParallelWorker"]
