"""Group fairness at one common threshold: per-group rates, the speaker-clustered and trial-level tests, crossed groups."""
