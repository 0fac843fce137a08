"""Small private helpers shared across packages: the lexicon, logistic heads, JSON in model text, redaction,
the terminal boundary, registries."""
