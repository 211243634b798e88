"""TitaNet from a NeMo ``.nemo`` archive, only when NeMo is installed (an optional extra).

``EncDecSpeakerLabelModel.restore_from(path, map_location=device)``; the embedding is the
second output of ``forward(input_signal, input_signal_length)`` (NeMo's own preprocessor runs
inside). NeMo unpacks and loads the archive itself, so ``weights_only`` is NeMo's choice here;
the archive's sha256 is recorded. Not exercised by the test suite (NeMo is not installed in
the reference environment); the ONNX layout of TitaNet is.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from interbias.encoders import Encoder, EncoderCard, Layout, Located, combined_sha256, freeze, optional_import


class NemoSpeakerEncoder(Encoder):
    def __init__(self, card: EncoderCard, model: Any, **kw: Any) -> None:
        super().__init__(card, **kw)
        self.model = model

    @torch.inference_mode()
    def _embed_one(self, wave: np.ndarray) -> np.ndarray:
        x = torch.from_numpy(wave).unsqueeze(0).to(self.device)
        n = torch.tensor([wave.size], device=self.device)
        _, emb = self.model.forward(input_signal=x, input_signal_length=n)
        return emb.reshape(-1).float().cpu().numpy()


def load_nemo(card: EncoderCard, located: Located, files: dict[str, str], *, device: str = "cpu") -> NemoSpeakerEncoder:
    folder = located.folder
    models = optional_import("nemo.collections.asr.models", card.label, "nemo_toolkit[asr]")
    path = folder / located.files[0]
    try:
        model = models.EncDecSpeakerLabelModel.restore_from(str(path), map_location=torch.device(device))
    except Exception as exc:
        first = (str(exc).strip().splitlines() or [""])[0]
        raise card.error(folder, f"NeMo could not restore {path.name} ({type(exc).__name__}: {first})") from exc
    target = str(getattr(model.cfg, "target", "") or type(model).__name__)
    want = card.expect.get("nemo_encoder")
    encoder_target = str(model.cfg.encoder.get("_target_", "")) if "encoder" in model.cfg else ""
    if want and want not in encoder_target:
        raise card.error(folder, f"{path.name} has encoder {encoder_target or '?'}; {card.label} expects {want}")
    model = freeze(model, device)
    return NemoSpeakerEncoder(
        card,
        model,
        source=str(path),
        checkpoint_sha256=combined_sha256(files),
        files=files,
        device=device,
        config={"restore": "EncDecSpeakerLabelModel.restore_from", "target": target},
    )


LAYOUT = Layout("nemo", ("titanet-large.nemo",), load_nemo, requires="nemo", requires_hint="nemo_toolkit (NeMo)")
