"""Blind quality measures of an utterance as a deployed system sees it (never the operator's
record): speech duration after the front end, a WADA-SNR estimate, and the embedding's
magnitude before normalisation; for a trial, the min and max over its two sides."""
