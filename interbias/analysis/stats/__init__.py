"""Estimators shared by the analysis: speaker bootstrap, intervals, multiplicity, permutation, equivalence, replicates."""
