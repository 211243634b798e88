"""The embedding stage: manifest + chains + encoders → vectors, each computed once and cached.

- :mod:`~interbias.embedding.stage`: ``Embedder`` (cache first, the rest to an executor);
- :mod:`~interbias.embedding.cache`: the SQLite embedding cache;
- :mod:`~interbias.embedding.executors`: who computes them, picked by name (``make_executor``);
- :mod:`~interbias.embedding.tasks`: the unit of work (``EmbedTask``), the ``Executor`` base and
  embedding in this process (decode once, prefetch, CUDA length batches);
- :mod:`~interbias.embedding.local`: the ``local`` executor (this process or worker processes);
- :mod:`~interbias.embedding.ray`: the ``ray`` executor (Ray actors);
- :mod:`~interbias.embedding.jobs`: the process pool with retries.
"""
