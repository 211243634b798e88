"""interbias: compound-condition speaker-verification benchmark harness."""

__version__ = "0.1.0"
