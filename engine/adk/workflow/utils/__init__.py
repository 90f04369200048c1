"""``google.adk.workflow.utils`` look-alike (only the HITL helpers ADK code imports)."""
