"""Corpus internalization (ImprintBench; SPECS §4): a method takes in a corpus of new
knowledge (and optionally training QA pairs), then answers held-out questions in six capability
families, n samples each, scored by Pass@1, Pass@k and AllCorrect@k."""
