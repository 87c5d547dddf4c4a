"""``herdsman setup``: the setup wizard that writes ``config.yaml`` and ``.env``.

The questions are data (``providers``, ``channels``), what the machine has is found by
``detect``, an API key is tried by ``keycheck``, the answers become edits of the YAML by the pure
functions of ``plan``, ``files`` writes them (round trip: comments and other keys stay), ``wizard``
asks the questions in a terminal and ``command`` is the typer command with a flag per question.
"""
