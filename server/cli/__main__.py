"""`python -m server.cli`: the same as the `agent-sessions` command."""

from server.cli import main

main()
