"""Prompt text the lead and its sub-agents share, and what is chosen to go into it.

- :mod:`.parts`: the sandbox folders, the response style, the ``small`` profile's rules and
  worked examples (used by :mod:`herdsman.agents.prompt` and :mod:`herdsman.subagents.prompt`);
- :mod:`.skill_ranking`: the skills that fit a request that names none, offered to the model
  (``skills.auto_select``; it reads :mod:`herdsman.skills` and :mod:`herdsman.memory`'s word
  helpers, so it sits above both).
"""
