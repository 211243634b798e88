"""Whether a rendered synthetic corpus is the reference one: its manifest sha256 against the one
the pinned environment renders for the same spec (:data:`REFERENCE`).

The embedded corpus is rendered by espeak-ng, numpy and scipy; other library versions (another
machine's numpy or scipy, another Python) render other audio, so the manifest sha256 differs and
results on the two corpora are not comparable. ``corpus build synthetic`` and ``run`` say which
it is, ``run.json`` records the verdict (``corpus.fingerprint``) and ``compare`` warns when two
runs' corpora differ.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path

from interbias.corpora.manifest import Manifest
from interbias.utils.errors import InterbiasError
from interbias.utils.paths import RUN_JSON
from interbias.utils.seeding import sha256_file

#: The environment the references were rendered in (requirements/ pins).
PINNED = "Python 3.11, numpy 2.4.6, scipy 1.17.1, espeakng-loader 0.2.4 (the requirements/ pins)"
#: Built corpus folder name (``synthetic-v<VERSION>-<spec key>``) -> manifest sha256 rendered
#: in :data:`PINNED`: the default spec (48 voices, ``make demo``) and the tests' tiny spec.
REFERENCE: dict[str, str] = {
    # SyntheticSpec() (48 voices, 6,720 utterances): the demo's E16 --corpus synthetic
    "synthetic-v3-a11552c2e2": "f2cdcecbf251440d586339b39f9a2d0fdd1cb8ede076b99b861e1a3cbd53542c",
    # tests/conftest.py TINY (2 accents x 2 genders x 3 voices, neutral, 5 sentences)
    "synthetic-v3-3dc282796a": "285bb40979679c44a4dd98954477fcde39fc0a4d331a5fa7140849560e3dd1dd",
}
_FOLDER = re.compile(r"^synthetic-v\d+-[0-9a-f]{10}$")


@dataclass(frozen=True)
class CorpusVerdict:
    """``status``: ``equal`` (the reference), ``differs`` (another rendering, or files changed
    since it was built) or ``no reference`` (a spec without a recorded reference)."""

    status: str
    spec: str
    manifest_sha256: str
    reference: str | None
    changed_files: int = 0

    @property
    def line(self) -> str:
        """One line for the user."""
        if self.status == "no reference":
            return (
                f"corpus fingerprint: no reference recorded for {self.spec} (only the default and test specs have one)"
            )
        if self.status == "equal":
            return f"corpus fingerprint: equals the reference of {self.spec} ({PINNED})"
        why = (
            f"{self.changed_files} file(s) differ from what the manifest records"
            if self.changed_files
            else f"manifest sha256 {self.manifest_sha256[:12]}…, the reference {str(self.reference)[:12]}…"
        )
        return (
            f"corpus fingerprint: DIFFERS from the reference of {self.spec} ({why}): another rendering "
            f"than the reference environment's ({PINNED}); results are not comparable with runs on the reference corpus"
        )

    def record(self) -> dict[str, object]:
        return asdict(self)


def corpus_verdict(
    manifest: Manifest, *, check_files: bool = False, changed_files: int | None = None
) -> CorpusVerdict | None:
    """The verdict for a built synthetic corpus (``None`` for any other manifest). With
    ``check_files`` every file is hashed and compared with the sha256 the manifest records;
    ``changed_files``: that count already made by the caller (a run: the files it read)."""
    spec = manifest.root.name
    if manifest.name != "synthetic" or not _FOLDER.match(spec):
        return None
    sha = manifest.sha256()
    changed = _changed_files(manifest) if check_files else int(changed_files or 0)
    reference = REFERENCE.get(spec)
    if reference is None:
        return CorpusVerdict("no reference", spec, sha, None, changed)
    status = "equal" if sha == reference and not changed else "differs"
    return CorpusVerdict(status, spec, sha, reference, changed)


def _changed_files(manifest: Manifest) -> int:
    """Files whose bytes are not those the manifest records (or that cannot be read)."""
    changed = 0
    for u in manifest.utterances:
        try:
            changed += bool(u.sha256) and sha256_file(manifest.resolve(u)) != u.sha256
        except (OSError, InterbiasError):
            changed += 1
    return changed


def corpora_differ(base: Path, new: Path) -> str | None:
    """A warning when two runs (folders or their results.csv) record different corpora
    (manifest sha256 in ``run.json``); ``None`` when they match or either record is absent."""
    records = [_corpus_record(Path(p)) for p in (base, new)]
    if any(r is None for r in records):
        return None
    a, b = records
    assert a is not None and b is not None
    if a.get("manifest_sha256") == b.get("manifest_sha256"):
        return content_differs(a, b)
    status = [str((r.get("fingerprint") or {}).get("status", "no fingerprint")) for r in (a, b)]
    return (
        f"warning: the two runs' corpora differ (manifest sha256 {str(a.get('manifest_sha256'))[:12]}… vs "
        f"{str(b.get('manifest_sha256'))[:12]}…; fingerprint {status[0]} vs {status[1]}): the audio is not the "
        "same, so differences include the corpus, not only the change under test"
    )


def content_differs(a: dict, b: dict) -> str | None:
    """Two runs' corpora with the same records (manifest sha256): a warning when the audio they
    read differs in content (``audio_sha256``: the files' bytes, over the same trial list) or a
    run read files that differ from what the manifest records (``fingerprint.changed_files``)."""
    changed = [int((r.get("fingerprint") or {}).get("changed_files") or 0) for r in (a, b)]
    same_trials = a.get("trials_sha256") is not None and a.get("trials_sha256") == b.get("trials_sha256")
    content = same_trials and a.get("audio_sha256") and b.get("audio_sha256") and a["audio_sha256"] != b["audio_sha256"]
    if not content and not any(changed):
        return None
    return (
        f"warning: the two runs' corpora have the same manifest but not the same audio (files that differ from what "
        f"the manifest records: {changed[0]} vs {changed[1]}"
        + ("; the audio of the same trials differs in content" if content else "")
        + "): differences include the corpus, not only the change under test"
    )


def _corpus_record(path: Path) -> dict | None:
    folder = path if path.is_dir() else path.parent
    try:
        record = json.loads((folder / RUN_JSON).read_text(encoding="utf-8"))
        corpus = record.get("corpus")
    except (OSError, ValueError, AttributeError):
        return None
    if not isinstance(corpus, dict):
        return None
    return {**corpus, "trials_sha256": (record.get("trials") or {}).get("sha256")}
