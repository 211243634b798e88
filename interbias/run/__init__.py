"""``interbias run``: the conductor and the stages it runs, and the run directory they write.

- :mod:`~interbias.run.preflight`: whether an experiment runs here, and the grid's size;
  :mod:`~interbias.run.catalogue`, :mod:`~interbias.run.validate`: ``interbias list`` and ``validate``;
- :mod:`~interbias.run.conductor`: load → find the work → embed → score → write;
- :mod:`~interbias.run.work`: what an invocation reuses and still computes (``RunWork``);
- :mod:`~interbias.run.cells`, :mod:`~interbias.run.scoring`: one cell × encoder scored; cosine scoring;
- :mod:`~interbias.run.calibrate`, :mod:`~interbias.run.normalise`: the calibration and
  score-normalisation stages;
- :mod:`~interbias.run.measured`: which trials a results row measured (one rule, one reader);
- :mod:`~interbias.run.results`, :mod:`~interbias.run.rundir`, :mod:`~interbias.run.lock`,
  :mod:`~interbias.run.operations`: the results schema and provenance, the run directory's layout,
  its lock, and what each operator did;
- :mod:`~interbias.run.export`: scores and embeddings in other tools' formats.
"""
