"""subagents."""
