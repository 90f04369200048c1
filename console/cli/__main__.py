"""``python -m console.cli``: the ``hitl`` command."""

from console.cli import main

main()
