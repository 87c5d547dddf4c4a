"""Runtime: checkpointer and store factories, run helpers."""
