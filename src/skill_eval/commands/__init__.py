"""One module per `skill-eval` command: NAME, HELP, add_arguments(parser), run(args) -> int."""
