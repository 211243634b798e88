"""``interbias run``: the conductor and the stages it runs, and the run directory they write.

- :mod:`~interbias.run.preflight`: whether an experiment runs here, the grid's size, and the one
  load and check of the experiment ``interbias run`` makes (``experiment_for_run``);
  :mod:`~interbias.run.catalogue`, :mod:`~interbias.run.validate`: ``interbias list`` and ``validate``;
- :mod:`~interbias.run.inputs`: ``RunOptions`` and the inputs loaded before any work (``RunContext``);
- :mod:`~interbias.run.conductor`: load → find the work → embed → score → write;
- :mod:`~interbias.run.work`: what an invocation reuses and still computes (``RunWork``);
- :mod:`~interbias.run.cells`, :mod:`~interbias.run.scoring`: one cell × encoder scored; cosine scoring;
- :mod:`~interbias.run.calibrate`, :mod:`~interbias.run.normalise`: the calibration and
  score-normalisation stages;
- :mod:`~interbias.run.measured`: which trials a results row measured (one rule, one reader);
- :mod:`~interbias.run.results`, :mod:`~interbias.run.rundir`, :mod:`~interbias.run.lock`,
  :mod:`~interbias.run.operations`: the results schema, provenance and run id, the run
  directory's layout (every file name, its readers and the calibration record), its lock, and
  what each operator did;
- :mod:`~interbias.run.export`: scores and embeddings in other tools' formats.
"""
