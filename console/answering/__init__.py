"""Answering interrupts from the console, by composition.

The session screen and the inbox each *own* the pieces; none of them is a mixin:

* :mod:`.selection` -- :class:`~.selection.InterruptSelection` (which open ids of
  one invocation are selected) and :class:`~.selection.AnswerDraft` (what the
  operator typed). Plain objects, no Textual.
* :mod:`.prompts` -- what the re-drive and cancel confirmations say, from the
  invocation's health (plain functions, no Textual).
* :mod:`.jobs` -- :class:`~.jobs.WriteJob` (one write as confirmed) and :func:`~.jobs.execute`,
  which runs it through :mod:`engine.operations` (no widgets).
* :mod:`.writes` -- runs one write in an app worker and posts what happens as
  messages (:class:`~console.messages.WriteEvent`, :class:`~console.messages.WriteDone`).
* :mod:`.session_side` -- the session screen's answering: selection on the tree,
  opening the editor, re-drive / cancel, the write's outcome.

The response editor is :mod:`console.screens.answer`; the modals are
:mod:`console.screens.answer_dialogs`.
"""
