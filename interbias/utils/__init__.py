"""Plumbing every stage shares; nothing here knows about speakers, audio or models.

- :mod:`~interbias.utils.errors`: the typed errors (``InterbiasError`` and its kinds);
- :mod:`~interbias.utils.atomic`: atomic file writes; :mod:`~interbias.utils.crashpoints`: test hooks
  that kill the process at a named point;
- :mod:`~interbias.utils.csvfile`, :mod:`~interbias.utils.textfile`: strict UTF-8/CSV reading of user
  files; :mod:`~interbias.utils.keyvalue`: the one ``KEY=VALUE`` parser of the command line;
- :mod:`~interbias.utils.paths`: where things live (cache, conditions, corpora) and ``slug``;
- :mod:`~interbias.utils.registry`: one registry per pluggable kind;
- :mod:`~interbias.utils.seeding`: seeds derived from names, file hashes;
- :mod:`~interbias.utils.progress`: progress bars and notices (quiet without a TTY);
- :mod:`~interbias.utils.moved`: module paths that moved in the last round, each import of one
  answered with its new path.
"""
