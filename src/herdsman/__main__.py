"""``python -m herdsman`` runs the CLI."""

from herdsman.cli import main

main()
