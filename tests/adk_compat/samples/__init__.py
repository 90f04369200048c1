"""ADK 2.x workflow snippets with human input, from ADK's documentation, with only their imports changed.

Each module names the page and section it comes from (google/adk-docs) and,
where the snippet needed more than its imports, what changed and why.
"""
