"""What the middlewares, the agents and the runtime read of a run, below the middlewares.

- :mod:`.turn`: the current turn (the user's last message, what followed it, the harness's own
  notes, the files a request names, the tools it offers, the thread's sandbox, the reply a limit
  wrote, the language of the request);
- :mod:`.text_calls`: tool calls a model wrote as text, found, marked and shown as failed steps;
- :mod:`.plan_state`: the plan of a multi-step request as data (read by the plan/act middleware);
- :mod:`.forced_call`: the harness's own short model calls, one forced typed tool call each;
- :mod:`.run_scope`: what the lead and its sub-agents share during one run (the concurrency gate,
  the token budget, the running sub-agents), carried in LangGraph's runtime context.
"""
