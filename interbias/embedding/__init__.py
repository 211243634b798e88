"""The embedding stage: manifest + chains + encoders → vectors, each computed once and cached.

- :mod:`~interbias.embedding.stage`: ``Embedder`` (cache first, the rest to an executor);
- :mod:`~interbias.embedding.cache`: the SQLite embedding cache;
- :mod:`~interbias.embedding.executors`: who computes them (this process, worker processes, a
  Ray cluster);
- :mod:`~interbias.embedding.jobs`: the process pool with retries.
"""
