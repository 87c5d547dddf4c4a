"""Threads and storage: the checkpointer, the record store, thread records, copies and deletion,
their sizes, file versions per checkpoint, and assistants."""
