"""Runs: the run manager and what it is made of (admission, the durable queue, workers, the
executor, cancel, recording), and what a run's input and outcome are."""
