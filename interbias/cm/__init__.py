"""Countermeasures (CM, spoofing detectors): models, their training recipe and scoring.

A CM maps a 16 kHz waveform to the softmax posterior of the bona fide class (higher = more
bona fide, the interbias score convention). :mod:`interbias.cm.models` is the registry.
"""
