"""What several benchmarks share (not a benchmark itself: ``make bench`` runs the scripts in
``benchmarks/``, this folder holds their helpers)."""
