"""One module per subcommand: plain arguments in, a result and an exit code out."""
