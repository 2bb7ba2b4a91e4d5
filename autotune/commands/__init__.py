"""One module per subcommand; see autotune/cli.py."""
