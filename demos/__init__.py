"""Runnable lessons and training runs: `python -m demos.NAME --help`."""
