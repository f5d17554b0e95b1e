"""Contracts shared by all four protocols: events, queries, responses, systems, models, specs."""
