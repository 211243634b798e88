"""The ``onnxruntime`` inference runtime: an encoder's network exported to ONNX in process from
the loaded checkpoint, then run by onnxruntime on CPU.

Only the network moves: feature extraction, VAD, windowing and normalisation stay the
encoder's own Python code. The graph is exported once per checkpoint and versions with
``torch.onnx.export`` (TorchScript exporter, fixed opset, dynamic length axis) and cached as
``<cache>/onnx/<label>-<key>.onnx``; the key hashes the label, backend code version, checkpoint
sha256, config, and the exporter, opset and onnxruntime versions, so a new torch or onnxruntime
exports afresh. A cached graph that onnxruntime cannot load is exported again.

Sessions are deterministic: CPU provider only, sequential execution, one fixed graph
optimisation level, ``use_deterministic_compute``; the same input gives the same bytes on
every call and every rerun. The runtime and its versions enter the encoder fingerprint (cache
keys, run ids) and the encoder's provenance in ``run.json``.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import io
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from interbias.utils.errors import EncoderError
from interbias.utils.seeding import canonical_json

if TYPE_CHECKING:
    from interbias.encoders import Encoder

#: Bump when the export recipe (wrapping, names, axes) changes: re-exports every cached graph.
RECIPE = 1
OPSET = 17
#: onnxruntime's graph optimisation level, by its GraphOptimizationLevel name.
OPTIMIZATION = "ORT_ENABLE_ALL"


@dataclass(frozen=True)
class OnnxSpec:
    """What exporting an encoder's network needs.

    ``example`` is traced once; ``dynamic`` names each input's variable axes. ``min_length``
    guards branches the trace froze: the network's eager code takes another path for inputs
    shorter than that along ``length_axis`` of the first input, so those raise rather than
    run a graph that does not match eager."""

    module: torch.nn.Module = field(repr=False)
    example: tuple[torch.Tensor, ...] = field(repr=False)
    inputs: tuple[str, ...]
    output: str
    dynamic: Mapping[str, Mapping[int, str]]
    length_axis: int = 1
    min_length: int = 1
    #: Names the module exported when it is not the encoder's own network but a restatement
    #: of it for onnxruntime (e.g. ``campplus.graph.GRAPH``); enters the cache key and provenance.
    restatement: str = "none"


def versions() -> dict[str, Any]:
    """The exporter and runtime versions a graph and its embeddings depend on."""
    import onnxruntime

    try:
        onnx_version = importlib.metadata.version("onnx")
    except importlib.metadata.PackageNotFoundError:
        onnx_version = "absent"
    return {
        "exporter": f"torch.onnx.export {torch.__version__} (torchscript)",
        "recipe": RECIPE,
        "opset": OPSET,
        "onnx": onnx_version,
        "onnxruntime": onnxruntime.__version__,
        "optimization": OPTIMIZATION,
    }


def graph_key(encoder: Encoder, spec: OnnxSpec) -> str:
    """16 hex of sha256 over what the exported graph depends on."""
    payload = {
        "restatement": spec.restatement,
        "label": encoder.card.label,
        "backend": encoder.card.backend,
        "code": encoder.code_version,
        "checkpoint": encoder.checkpoint_sha256,
        "config": encoder.config,
        **versions(),
    }
    return hashlib.sha256(canonical_json(payload).encode()).hexdigest()[:16]


def export(spec: OnnxSpec) -> bytes:
    """The ONNX bytes of ``spec.module`` traced on ``spec.example``."""
    buf = io.BytesIO()
    with warnings.catch_warnings():  # the legacy exporter's deprecation and tracer notices
        warnings.simplefilter("ignore")
        torch.onnx.export(
            spec.module,
            spec.example,
            buf,
            dynamo=False,
            input_names=list(spec.inputs),
            output_names=[spec.output],
            dynamic_axes={k: dict(v) for k, v in spec.dynamic.items()},
            opset_version=OPSET,
            do_constant_folding=True,
        )
    return buf.getvalue()


def session(graph: bytes, threads: int) -> Any:
    """A deterministic CPU session of ``graph`` with ``threads`` intra-op threads."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, OPTIMIZATION)
    options.use_deterministic_compute = True
    options.log_severity_level = 3
    return ort.InferenceSession(graph, sess_options=options, providers=["CPUExecutionProvider"])


class OrtNet:
    """Called like the torch module it replaces: CPU tensors in, a CPU tensor out."""

    def __init__(self, label: str, sess: Any, spec: OnnxSpec) -> None:
        self.label = label
        self.session = sess
        self.inputs = spec.inputs
        self.output = spec.output
        self.length_axis = spec.length_axis
        self.min_length = spec.min_length

    def __call__(self, *xs: torch.Tensor) -> torch.Tensor:
        n = xs[0].shape[self.length_axis]
        if n < self.min_length:
            raise EncoderError(
                f"{self.label}: input of length {n} along axis {self.length_axis} is shorter than the exported "
                f"graph handles ({self.min_length}); use runtime eager for such short inputs"
            )
        feed = {name: np.ascontiguousarray(x.detach().cpu().numpy()) for name, x in zip(self.inputs, xs, strict=True)}
        return torch.from_numpy(self.session.run([self.output], feed)[0])


def load_graph(encoder: Encoder, spec: OnnxSpec, folder: Path, threads: int) -> tuple[Any, bytes, Path]:
    """The cached graph's session (exporting it when absent or unloadable), its bytes and path."""
    from interbias.utils.atomic import write_bytes
    from interbias.utils.paths import slug

    path = folder / f"{slug(encoder.card.label)}-{graph_key(encoder, spec)}.onnx"
    if path.is_file():
        graph = path.read_bytes()
        try:
            return session(graph, threads), graph, path
        except Exception:  # a damaged cache entry: exported again below
            pass
    try:
        graph = export(spec)
    except Exception as exc:
        raise EncoderError(f"{encoder.label}: ONNX export failed ({type(exc).__name__}: {exc})") from exc
    folder.mkdir(parents=True, exist_ok=True)
    write_bytes(path, graph)
    return session(graph, threads), graph, path


def use_onnxruntime(encoder: Encoder, threads: int, folder: Path | None = None) -> None:
    """Switch ``encoder`` to onnxruntime: export (or reuse) its graph and replace its network."""
    from interbias.utils.paths import cache_dir

    if encoder.device != "cpu":
        raise EncoderError(f"{encoder.label}: runtime onnxruntime runs on CPU only (device {encoder.device})")
    spec = encoder.onnx_spec()
    if spec is None:
        raise EncoderError(f"{encoder.label}: runtime onnxruntime is not offered (runtimes: eager)")
    sess, graph, path = load_graph(encoder, spec, folder or cache_dir() / "onnx", threads)
    encoder.net = OrtNet(encoder.label, sess, spec)
    encoder.runtime = "onnxruntime"
    encoder.runtime_config = {**versions(), "restatement": spec.restatement}
    encoder.runtime_graph = {"path": str(path), "sha256": hashlib.sha256(graph).hexdigest()}
