"""Sub-commands of the ftslide CLI (see ftslide/cli.py)."""
