"""Countermeasure, spoof-aware (SASV) and adversarial-attack analysis of run directories."""
