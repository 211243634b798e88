"""Any single-file ONNX speaker-embedding export (RawNet3, ReDimNet, TitaNet, WeSpeaker models).

The card declares the input in ``expect["onnx_input"]``:

- ``waveform``: (1, T) float32 16 kHz samples in [−1, 1] (RawNet3, ReDimNet exported with
  its own mel front end);
- ``wespeaker-fbank``: (1, frames, bins) WeSpeaker features (Kaldi fbank, Hamming window,
  int16 scale, mean-normalised; :func:`interbias.encoders.wespeaker.wespeaker_fbank`);
- ``nemo-mel``: (1, bins, frames) NeMo mel features (:func:`interbias.encoders.features.nemo_mel`),
  as NeMo's own export of a speaker model takes them.

A second graph input, when present, receives the length (samples or frames) as a (1,)
integer tensor. The embedding is ``expect["onnx_output"]`` when named, else the only output.
The session is built from the file's bytes, so external-data files (which would not be
hashed) cannot be pulled in. On CUDA the CUDA execution provider must be present; there is
no CPU fallback.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from interbias.encoders import Encoder, EncoderCard, Layout, Located, combined_sha256, optional_import
from interbias.encoders.features import nemo_mel
from interbias.utils.errors import EncoderError

INPUTS = {"waveform": 2, "wespeaker-fbank": 3, "nemo-mel": 3}
#: The axis of the feature bins in a feature input's shape: (batch, frames, bins) for WeSpeaker's
#: fbank, (batch, bins, frames) for NeMo's mel.
FEATURE_AXIS = {"wespeaker-fbank": 2, "nemo-mel": 1}


def _dims(shape: list[Any]) -> list[int | None]:
    return [d if isinstance(d, int) else None for d in shape]


class OnnxEncoder(Encoder):
    #: 2: Kaldi fbank's power spectrum computed as re² + im² (was |z|²; float32 features can differ in the last bit).
    code_version = 2

    def __init__(
        self,
        card: EncoderCard,
        session: Any,
        *,
        input_kind: str,
        bins: int | None,
        output: str,
        length_input: tuple[str, str] | None,
        **kw: Any,
    ) -> None:
        super().__init__(card, **kw)
        self.session = session
        self.input_kind = input_kind
        self.bins = bins
        self.output = output
        self.input_name = session.get_inputs()[0].name
        self.length_input = length_input

    def features(self, wave: np.ndarray) -> tuple[np.ndarray, int]:
        """The model input for one waveform (batch axis included) and its length."""
        match self.input_kind:
            case "waveform":
                return wave[None, :], wave.size
            case "wespeaker-fbank":
                from interbias.encoders.wespeaker import wespeaker_fbank

                feats = wespeaker_fbank(torch.from_numpy(wave), self.bins or 80).numpy()
                return feats[None], feats.shape[0]
            case _:
                feats = nemo_mel(torch.from_numpy(wave), num_mel_bins=self.bins or 80).numpy()
                return feats[None], feats.shape[1]

    def _embed_one(self, wave: np.ndarray) -> np.ndarray:
        feats, n = self.features(wave)
        feed = {self.input_name: np.ascontiguousarray(feats, dtype=np.float32)}
        if self.length_input:
            name, kind = self.length_input
            feed[name] = np.array([n], dtype=np.int32 if "int32" in kind else np.int64)
        return np.asarray(self.session.run([self.output], feed)[0], dtype=np.float32).reshape(-1)


def _providers(card: EncoderCard, ort: Any, device: str) -> list[Any]:
    if device == "cpu":
        return ["CPUExecutionProvider"]
    available = ort.get_available_providers()
    if "CUDAExecutionProvider" not in available:
        raise EncoderError(
            f"{card.label}: --device {device} needs onnxruntime's CUDAExecutionProvider; this onnxruntime has "
            f"{', '.join(available)} (install onnxruntime-gpu, or run with --device cpu)"
        )
    index = int(device.split(":", 1)[1]) if ":" in device else 0
    return [("CUDAExecutionProvider", {"device_id": index})]


def load_onnx(card: EncoderCard, located: Located, files: dict[str, str], *, device: str = "cpu") -> OnnxEncoder:
    folder = located.folder
    kind = str(card.expect.get("onnx_input", "waveform"))
    if kind not in INPUTS:  # pragma: no cover - a card definition error
        raise card.error(folder, f"unknown onnx_input {kind!r}")
    ort = optional_import("onnxruntime", card.label, "onnxruntime")
    name = located.files[0]
    providers = _providers(card, ort, device)
    options = ort.SessionOptions()
    options.intra_op_num_threads = torch.get_num_threads()
    options.log_severity_level = 3
    try:
        session = ort.InferenceSession((folder / name).read_bytes(), sess_options=options, providers=providers)
    except Exception as exc:
        first = (str(exc).strip().splitlines() or [""])[0]
        raise card.error(folder, f"onnxruntime cannot load {name} ({type(exc).__name__}: {first})") from exc
    inputs, outputs = session.get_inputs(), session.get_outputs()
    shape = _dims(inputs[0].shape)
    if len(shape) != INPUTS[kind] or "float" not in inputs[0].type:
        raise card.error(
            folder, f"{name}: input {inputs[0].name} is {inputs[0].type} {inputs[0].shape}; {card.label} feeds {kind}"
        )
    bins = None
    if kind != "waveform":
        bins = shape[FEATURE_AXIS.get(kind, 1)]
        want_bins = card.expect.get("bins")
        if want_bins and bins not in (None, want_bins):
            raise card.error(folder, f"{name}: input takes {bins} feature bins; {card.label} uses {want_bins}")
        bins = bins or want_bins
    length_input = None
    if len(inputs) == 2:
        if "int" not in inputs[1].type:
            raise card.error(folder, f"{name}: second input {inputs[1].name} is {inputs[1].type}, not a length")
        length_input = (inputs[1].name, inputs[1].type)
    elif len(inputs) > 2:
        raise card.error(folder, f"{name}: {len(inputs)} inputs; expected features and at most a length")
    names = [o.name for o in outputs]
    wanted = card.expect.get("onnx_output")
    if wanted:
        if wanted not in names:
            raise card.error(folder, f"{name}: no output {wanted!r} (outputs: {', '.join(names)})")
        output = str(wanted)
    elif len(names) == 1:
        output = names[0]
    else:
        raise card.error(folder, f"{name}: several outputs ({', '.join(names)}) and the card names none")
    return OnnxEncoder(
        card,
        session,
        input_kind=kind,
        bins=bins,
        output=output,
        length_input=length_input,
        source=str(folder / name),
        checkpoint_sha256=combined_sha256(files),
        files=files,
        device=device,
        config={"input": kind, "bins": bins, "output": output},
    )


LAYOUT = Layout("onnx", ("model.onnx",), load_onnx, requires="onnxruntime", requires_hint="onnxruntime")
