"""``interbias encoders fetch``: download a label's files from the Hugging Face Hub, pinned and hash-locked.

Each fetchable label names a repository and the files its folder needs (:data:`SOURCES`; an
entry ``"a|b"`` takes the first name the repository holds). A fetch resolves the revision
(``main`` unless given) to a commit with one ``model_info`` call, downloads every file at that
commit with ``huggingface_hub`` (so ``HF_ENDPOINT``, ``HF_TOKEN``, proxies and the hub cache
apply; ``HF_HUB_CACHE`` is read at call time), checks each file's size and hash against the
hub's metadata (the LFS sha256, or the git blob id for small files), and only then moves the
complete folder into place: files are assembled in a hidden ``.<label>.fetch-*`` folder beside
the label's folder, so an interrupted fetch never leaves a folder that loads. The pin goes to
``models.lock`` (:mod:`interbias.encoders.models_lock`).

With a lock entry, ``fetch`` restores the locked commit (re-downloading files that differ) and
refuses another ``--revision``; ``--update`` resolves the revision again and re-pins. Labels
whose weights are not published as hub files (ReDimNet) get the exact commands to run by hand.
Nothing here runs during ``interbias run``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from interbias.encoders import ENCODERS, hf_ssl, sha256_file, spkrec, wespeaker
from interbias.encoders.models_lock import (
    PinEntry,
    PinnedFile,
    entry_for,
    mismatches,
    models_lock_path,
    relative_folder,
    write_entry,
)
from interbias.utils.errors import EncoderError

DEFAULT_ENDPOINT = "https://huggingface.co"
SB_FILES = spkrec.FILES
HF_FILES = hf_ssl.FILES
WESPEAKER_FILES = wespeaker.LAYOUT.files


@dataclass(frozen=True)
class HubSource:
    """A repository and the files to take from it (``"a|b"``: the first present), renamed on disk by ``rename``."""

    repo: str
    files: tuple[str, ...]
    rename: Mapping[str, str] = field(default_factory=dict)
    #: Printed after a fetch: what else the label needs (e.g. an optional package).
    note: str = ""


@dataclass(frozen=True)
class ManualSource:
    """Weights that are not hub files: the exact steps to place them by hand."""

    steps: tuple[str, ...]


TITANET_ONNX = (
    'python -c "from nemo.collections.asr.models import EncDecSpeakerLabelModel as M; '
    "M.restore_from('{folder}/titanet-large.nemo').export('{folder}/model.onnx')\""
)
REDIMNET_EXPORT = (
    "python -c \"import torch; m = torch.hub.load('IDRnD/ReDimNet', 'ReDimNet', model_name='b2', "
    "train_type='ft_lm', dataset='vox2', trust_repo=True).eval(); torch.onnx.export(m, (torch.randn(1, 32000),), "
    "'{folder}/model.onnx', input_names=['wav'], output_names=['emb'], dynamic_axes={{'wav': {{1: 'T'}}}}, "
    'opset_version=17, dynamo=False)"'
)

SOURCES: dict[str, HubSource | ManualSource] = {
    "X-Vector": HubSource("speechbrain/spkrec-xvect-voxceleb", SB_FILES),
    "ECAPA-TDNN": HubSource("speechbrain/spkrec-ecapa-voxceleb", SB_FILES),
    "ECAPA-TDNN-Large": HubSource("Wespeaker/wespeaker-voxceleb-ecapa-tdnn1024", WESPEAKER_FILES),
    "ResNet34": HubSource("Wespeaker/wespeaker-voxceleb-resnet34", WESPEAKER_FILES),
    "RawNet3": HubSource("jungjee/RawNet3", ("model.pt",)),
    "TitaNet": HubSource(
        "nvidia/speakerverification_en_titanet_large",
        ("speakerverification_en_titanet_large.nemo",),
        rename={"speakerverification_en_titanet_large.nemo": "titanet-large.nemo"},
        note="titanet-large.nemo loads with NeMo (pip install nemo_toolkit[asr]); without NeMo, export model.onnx "
        "on a machine that has it: " + TITANET_ONNX,
    ),
    "ReDimNet": ManualSource(
        (
            "ReDimNet's weights are published through torch.hub (GitHub releases of IDRnD/ReDimNet), not as hub "
            "files; on a machine with network access, torch, torchaudio and onnx, run:",
            "mkdir -p {folder} && " + REDIMNET_EXPORT,
        )
    ),
    "WavLM-Base": HubSource("microsoft/wavlm-base", HF_FILES),
    "WavLM-Base+": HubSource("microsoft/wavlm-base-plus", HF_FILES),
    "WavLM-Large": HubSource("microsoft/wavlm-large", HF_FILES),
    "UniSpeech-SAT": HubSource("microsoft/unispeech-sat-base-plus", HF_FILES),
    "HuBERT-Large": HubSource("facebook/hubert-large-ll60k", HF_FILES),
}


class FetchError(EncoderError):
    """A fetch failed (network, server, hash); nothing was placed."""


@dataclass(frozen=True)
class FetchResult:
    label: str
    #: ``fetched``, ``up to date`` or ``by hand``.
    action: str
    entry: PinEntry | None = None
    message: str = ""


def endpoint() -> str:
    """``$HF_ENDPOINT`` (read at call time), else the public hub."""
    return (os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


def hub_timeout() -> float:
    """Seconds to wait for the hub's metadata answers: ``$INTERBIAS_HUB_TIMEOUT``, default 30."""
    return float(os.environ.get("INTERBIAS_HUB_TIMEOUT") or 30)


def fetch_command(label: str) -> str:
    """The command a user runs for ``label`` (README "fetch" column)."""
    return f"interbias encoders fetch {label}" if isinstance(SOURCES.get(label), HubSource) else "by hand"


def manual_steps(label: str) -> list[str]:
    source = SOURCES[label]
    folder = ENCODERS.get(label).folder()
    return [s.format(folder=folder) for s in source.steps] if isinstance(source, ManualSource) else []


def _reason(exc: BaseException, timeout: float) -> str:
    """One line for a failed hub call: HTTP status and the server's first line, or the timeout."""
    name = type(exc).__name__
    if "Timeout" in name or isinstance(exc, TimeoutError):
        return f"no answer within {timeout:g} s ({name}; set INTERBIAS_HUB_TIMEOUT to wait longer)"
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    first = next((ln.strip() for ln in str(exc).splitlines() if ln.strip()), "")
    return f"HTTP {status}: {first}" if status else f"{name}: {first}" if first else name


def git_blob_sha1(path: Path) -> str:
    """The git object id of a file (``sha1("blob <size>\\0" + bytes)``), as the hub lists small files."""
    h = hashlib.sha1(f"blob {path.stat().st_size}\0".encode())
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@dataclass(frozen=True)
class Planned:
    """One file to fetch: its name in the repository and on disk, and what the hub says it is."""

    remote: str
    local: str
    size: int | None
    sha256: str | None
    blob_id: str | None


def hub_module(label: str) -> Any:
    """``huggingface_hub``, or one error saying it is missing."""
    try:
        import huggingface_hub
    except ImportError as exc:
        raise FetchError(f"{label}: fetching needs huggingface_hub (pip install -r requirements/base.txt)") from exc
    return huggingface_hub


def resolve(label: str, source: HubSource, revision: str) -> tuple[str, list[Planned]]:
    """The commit ``revision`` names and the files to take at it (one ``model_info`` call)."""
    HfApi = hub_module(label).HfApi

    timeout = hub_timeout()
    try:
        info = HfApi(endpoint=endpoint()).model_info(
            source.repo, revision=revision, files_metadata=True, timeout=timeout
        )
    except Exception as exc:
        raise FetchError(
            f"{label}: cannot resolve {source.repo}@{revision} on {endpoint()} ({_reason(exc, timeout)})"
        ) from exc
    siblings = {s.rfilename: s for s in (info.siblings or [])}
    if not info.sha:
        raise FetchError(f"{label}: {endpoint()} gave no commit for {source.repo}@{revision}")
    planned = []
    for entry in source.files:
        names = entry.split("|")
        hit = next((n for n in names if n in siblings), None)
        if hit is None:
            raise FetchError(
                f"{label}: {source.repo}@{info.sha} has no {' or '.join(names)} (files: {', '.join(sorted(siblings))})"
            )
        s = siblings[hit]
        lfs = getattr(s, "lfs", None)
        planned.append(
            Planned(
                hit, source.rename.get(hit, hit), s.size, lfs.sha256 if lfs else None, s.blob_id if not lfs else None
            )
        )
    return str(info.sha), planned


def _check(label: str, wanted: Planned, path: Path, sha: str, locked: PinEntry | None) -> None:
    """Size and hash of a downloaded file against the hub's metadata and, when restoring, the lock."""
    size = path.stat().st_size
    if wanted.size is not None and size != wanted.size:
        raise FetchError(f"{label}: {wanted.remote} is {size} bytes; the hub lists {wanted.size}")
    if wanted.sha256 and sha != wanted.sha256:
        raise FetchError(f"{label}: {wanted.remote} has sha256 {sha}; the hub lists {wanted.sha256}")
    if wanted.blob_id and git_blob_sha1(path) != wanted.blob_id:
        raise FetchError(
            f"{label}: {wanted.remote} has git blob id {git_blob_sha1(path)}; the hub lists {wanted.blob_id}"
        )
    want = {f.name: f.sha256 for f in locked.files}.get(wanted.local) if locked else None
    if locked and want != sha:
        raise FetchError(f"{label}: {wanted.local} at {locked.commit} has sha256 {sha}; models.lock has {want}")


def download(
    label: str, source: HubSource, commit: str, planned: list[Planned], into: Path, locked: PinEntry | None
) -> tuple[PinnedFile, ...]:
    """Download every planned file at ``commit`` into ``into`` and check it; returns the lock records."""
    hf_hub_download = hub_module(label).hf_hub_download

    timeout = hub_timeout()
    out = []
    for wanted in planned:
        target = into / wanted.local
        for force in (False, True):  # a copy in the hub cache that fails the check is downloaded once more
            try:
                cached = hf_hub_download(
                    source.repo,
                    wanted.remote,
                    revision=commit,
                    cache_dir=os.environ.get("HF_HUB_CACHE") or None,
                    endpoint=endpoint(),
                    etag_timeout=timeout,
                    force_download=force,
                )
            except Exception as exc:
                raise FetchError(
                    f"{label}: downloading {wanted.remote} from {source.repo}@{commit[:12]} on {endpoint()} failed "
                    f"({_reason(exc, timeout)}); nothing was placed"
                ) from exc
            shutil.copyfile(cached, target)
            sha = sha256_file(target)
            try:
                _check(label, wanted, target, sha, locked)
                break
            except FetchError:
                if force:
                    raise
        out.append(PinnedFile(wanted.local, sha, target.stat().st_size))
    return tuple(out)


def place(staging: Path, folder: Path) -> None:
    """Swap the complete ``staging`` folder in for ``folder``, keeping files it does not replace."""
    old = None
    if folder.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{folder.name}.old-", dir=folder.parent))
        os.replace(folder, old / "x")
        for p in (old / "x").iterdir():
            if not (staging / p.name).exists():
                os.replace(p, staging / p.name)
    os.replace(staging, folder)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def remove_partials(folder: Path) -> None:
    """Staging and swap folders a killed fetch left beside ``folder`` (hidden; they never load)."""
    for pattern in (f".{folder.name}.fetch-*", f".{folder.name}.old-*"):
        for p in folder.parent.glob(pattern):
            shutil.rmtree(p, ignore_errors=True)


def _target_revision(label: str, locked: PinEntry | None, revision: str | None, update: bool) -> str:
    if locked is None or update:
        return revision or "main"
    if revision and revision not in (locked.revision, locked.commit):
        raise FetchError(
            f"{label}: models.lock pins {locked.repo}@{locked.commit} ({locked.revision}); "
            f"pass --update to re-pin to {revision}"
        )
    return locked.commit


def fetch(
    label: str, *, revision: str | None = None, update: bool = False, log: Callable[[str], Any] = lambda _m: None
) -> FetchResult:
    """Fetch ``label`` into its folder (the one ``interbias encoders list`` reports) and pin it in models.lock."""
    card = ENCODERS.get(label)
    source = SOURCES.get(label)
    if source is None:
        what = "packaged with interbias" if not card.layouts else "not fetchable"
        return FetchResult(label, "nothing to fetch", message=f"{label}: {what}; nothing to fetch")
    if isinstance(source, ManualSource):
        return FetchResult(label, "by hand", message="\n".join(manual_steps(label)))
    folder, lock_file = card.folder(), models_lock_path()
    locked = entry_for(label, folder, lock_file)
    target = _target_revision(label, locked, revision, update)
    intact = locked is not None and folder.is_dir() and not mismatches(locked, folder)
    if intact and not update:  # the pinned files are all there: no need to ask the hub
        return FetchResult(label, "up to date", locked, f"{label}: up to date ({source.repo}@{locked.commit[:12]})")
    commit, planned = resolve(label, source, target)
    if intact and locked.commit == commit:
        return FetchResult(label, "up to date", locked, f"{label}: up to date ({source.repo}@{commit[:12]})")
    restore = locked if locked is not None and not update else None
    folder.parent.mkdir(parents=True, exist_ok=True)
    remove_partials(folder)
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}.fetch-", dir=folder.parent))
    try:
        log(f"{label}: {source.repo}@{commit[:12]} -> {folder}")
        files = download(label, source, commit, planned, staging, restore)
        place(staging, folder)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    asked = restore.revision if restore else target
    entry = PinEntry(label, source.repo, asked, commit, relative_folder(folder, lock_file), files)
    write_entry(entry, lock_file)
    note = f"; {source.note}" if source.note else ""
    return FetchResult(label, "fetched", entry, f"{label}: fetched {source.repo}@{commit[:12]} into {folder}{note}")


@dataclass(frozen=True)
class LabelState:
    """Where a label stands: ``fetched``, ``placed by hand``, ``missing``, ``lock mismatch`` or ``packaged``."""

    label: str
    state: str
    detail: str
    folder: str
    fetch: str

    def as_dict(self) -> dict[str, str]:
        return {
            "label": self.label,
            "state": self.state,
            "detail": self.detail,
            "folder": self.folder,
            "fetch": self.fetch,
        }


def label_state(label: str, *, hashes: bool = False) -> LabelState:
    """A label's state against models.lock; ``hashes`` hashes every locked file (else sizes only)."""
    card = ENCODERS.get(label)
    if not card.layouts:
        return LabelState(label, "packaged", "installed with interbias", "", "")
    folder = card.folder()
    fetch = fetch_command(label)
    entry = entry_for(label, folder)
    if entry is not None:
        pin = f"{entry.repo}@{entry.commit[:12]} ({entry.revision})"
        if not folder.is_dir():
            return LabelState(label, "missing", f"locked at {pin}; {fetch} restores it", str(folder), fetch)
        problems = mismatches(entry, folder, sizes_only=not hashes)
        if problems:
            return LabelState(label, "lock mismatch", problems[0], str(folder), fetch)
        ok, why, _ = card.status()  # fetched, but perhaps not loadable here (TitaNet's .nemo without NeMo)
        return LabelState(label, "fetched", pin if ok else f"{pin}; {why}", str(folder), fetch)
    ok, why, _ = card.status()
    return LabelState(label, "placed by hand" if ok else "missing", "" if ok else why, str(folder), fetch)
