"""hitl console: the Textual operator console (``console.app``) and the headless ``hitl`` CLI (``console.cli``)."""
