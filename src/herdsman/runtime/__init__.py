"""Runtime: what runs the agent for the gateway and the CLI, one subpackage per subsystem.

- :mod:`~herdsman.runtime.runs`: the run manager and its parts (admission, the durable queue and
  its workers, the executor, cancel, the recorder), a run's input checks and outcome;
- :mod:`~herdsman.runtime.streaming`: run events published once and read by any number of
  subscribers (in memory or through Redis), in LangGraph's SSE and thread-protocol shapes;
- :mod:`~herdsman.runtime.crons`: scheduled runs, their store and the scheduler;
- :mod:`~herdsman.runtime.storage`: the checkpointer, the record store, thread records, copies and
  deletion, sizes, file versions per checkpoint, assistants;
- :mod:`~herdsman.runtime.tracing`: a thread's trace, sub-agent transcripts, step times, the
  harness's notes told in one line.
"""
