"""The ORCA repair method (TRIAD/ORCA, Section IV); ``interbias audit repair`` runs it through
:mod:`interbias.audits.repair`.

- :mod:`interbias.encoders.adapter`: the ORCA adapter network and its safetensors file (weights +
  a manifest of training data hashes, seed and hyper-parameters).
- :mod:`interbias.repair.orca`: ORCA training on cached embeddings (three supervised-contrastive
  heads, the orthogonality penalty, group-balanced sampling) and the voice-disjoint split.
- :mod:`interbias.repair.heldout` and :mod:`interbias.repair.reference`: the held-out figures
  and the class-mean reference a repair is judged against.
"""
