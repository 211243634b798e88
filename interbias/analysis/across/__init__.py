"""Across runs: inventories, comparisons and the paired regression gate, leaderboards, encoder cards."""
