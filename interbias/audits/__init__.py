"""The audits that embed a corpus themselves, outside ``interbias run``:

- :mod:`interbias.audits.source`: where their vectors come from (a corpus or manifest through the
  clean chain and the embedding cache, or an ``--embeddings`` table);
- :mod:`interbias.audits.geometry` with :mod:`interbias.audits.geometry_sweep`: ``interbias
  geometry`` (one audit; ``--encoders`` and ``--layers`` sweeps) on the measures of
  :mod:`interbias.analysis.geometry`;
- :mod:`interbias.audits.repair`: ``interbias repair`` end to end (grid → split → ORCA training
  of :mod:`interbias.repair` → audit);
- :mod:`interbias.audits.blackbox` with :mod:`interbias.audits.blackbox_voice`: the matched-pair
  protocol for systems that only return scores (``interbias blackbox``).
"""
