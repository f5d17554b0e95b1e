"""The command-line verbs shared by every protocol (results, runs, listing); the protocol
verbs (``generate``, ``run``, ``score``) come from each protocol's package."""
