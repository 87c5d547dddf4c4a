"""The ``herdsman`` command's sub-commands and their shared options (the CLI layer).

``herdsman.cli`` is the entry point and registers these; they sit above every other layer of the
harness, so a package below (skills, memory, tools, config) never imports typer options.
"""
