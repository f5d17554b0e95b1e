"""The command line's side of a run: the flags every ``run`` verb shares
(:mod:`clstream.arguments.groups`) and the requests their parsed values become
(:mod:`clstream.arguments.requests`). Below the commands and protocols that parse flags, above
the driver, which takes only the requests (docs/design.md §11.1)."""
