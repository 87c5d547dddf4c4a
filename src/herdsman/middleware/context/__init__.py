"""Context engineering: what the model sees of a long thread, in one place.

- :mod:`.summarization`: old history summarized when the thread grows (``summarization:``);
- :mod:`.tool_output_offload`: a long tool result saved to a file, the model sees a preview
  (``context.offload_tool_output_chars``, ``preview_head_chars``, ``preview_tail_chars``);
- :mod:`.loop_detection`: a model repeating one tool call is warned, then stopped
  (``context.loop_warn_after``, ``loop_stop_after``);
- :mod:`.memory_injection`: what long-term memory knows about the user, added to the prompt;
- :mod:`.uploads_notice`: files just uploaded are announced to the model (``context.announce_uploads``).

The plan (``context.todos``) is LangChain's own ``TodoListMiddleware``; the order of all of them
is in :func:`herdsman.agents.stack.build_middleware`. ``benchmarks/context_budget.py`` measures the
budget a long run keeps.
"""
