"""The lead agent: factory, system prompt and thread state schema."""
