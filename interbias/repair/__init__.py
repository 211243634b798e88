"""Repair and black-box audit (TRIAD/ORCA, Sections IV and V).

- :mod:`interbias.encoders.adapter`: the ORCA adapter network and its safetensors file (weights +
  a manifest of training data hashes, seed and hyper-parameters).
- :mod:`interbias.repair.orca`: ORCA training on cached embeddings (three supervised-contrastive
  heads, the orthogonality penalty, group-balanced sampling) and the voice-disjoint split.
- :mod:`interbias.repair.run`: ``interbias audit repair`` end to end (grid → split → train → audit).
- :mod:`interbias.repair.blackbox`: the matched-pair protocol for systems that only return scores.
"""
