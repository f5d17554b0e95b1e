"""Model backends and what wraps them (tokenizers, caching, usage accounting)."""
