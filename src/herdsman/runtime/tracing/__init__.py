"""Tracing: a thread's trace from its checkpoints, sub-agent transcripts, the model's step times,
and the harness's notes told in one line."""
