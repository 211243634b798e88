"""Self-supervised encoders (WavLM, HuBERT, UniSpeech-SAT) from a local Hugging Face folder.

Family ``ssl``: no speaker head. The embedding is the temporal mean of one hidden layer —
the final one by default (``last_hidden_state``), or ``hidden_states[layer]`` with the
``layer`` option (0 = the projected CNN features, ``num_hidden_layers`` = the final layer).
The folder is a hub snapshot: ``config.json``, ``preprocessor_config.json`` and
``model.safetensors`` or ``pytorch_model.bin``, loaded with
``AutoModel.from_pretrained(folder, local_files_only=True)`` in float32. A weight the model
needs but the file lacks (transformers would initialise it at random) is an error.
The input is standardised per utterance (mean 0, variance 1, ε = 1e-7) when the
preprocessor config says ``do_normalize``, as its feature extractor does. Masked batches
(CUDA by default; ``batch="always"`` on CPU) only for models whose feature extractor takes
attention masks (layer-norm CNNs): zero-padded waveforms with the attention mask, the mean over
each row's own frames. The group-norm Base models normalise each CNN channel over all samples,
padding included, so they are embedded one at a time everywhere.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import torch

from interbias.encoders import Encoder, EncoderCard, Layout, Located, combined_sha256, freeze, optional_import
from interbias.encoders.masking import length_mask, padded_waves

FILES = ("config.json", "preprocessor_config.json", "model.safetensors|pytorch_model.bin")


def conv_output_frames(n_samples: int, kernels: list[int], strides: list[int]) -> int:
    """Frames out of the CNN feature encoder: L ← ⌊(L − k) / s⌋ + 1 per layer."""
    n = n_samples
    for k, s in zip(kernels, strides, strict=True):
        n = (n - k) // s + 1
    return n


class SSLEncoder(Encoder):
    supports_masks = True

    def __init__(
        self,
        card: EncoderCard,
        model: Any,
        *,
        layer: int,
        normalize: bool,
        attention_mask: bool,
        **kw: Any,
    ) -> None:
        super().__init__(card, **kw)
        self.model = model
        self.layer = layer
        self.normalize = normalize
        self.attention_mask = attention_mask
        cfg = model.config
        self.kernels, self.strides = list(cfg.conv_kernel), list(cfg.conv_stride)
        self.final = layer == cfg.num_hidden_layers
        self.min_samples = next(n for n in range(1, 100000) if conv_output_frames(n, self.kernels, self.strides) >= 1)

    def batches(self) -> bool:
        return self.batch_wanted() and self.attention_mask

    def frame_count(self, n_samples: int) -> int:
        return max(conv_output_frames(n_samples, self.kernels, self.strides), 0)

    def _prepare(self, wave: np.ndarray) -> np.ndarray:
        if wave.size < self.min_samples:
            raise ValueError(f"{wave.size} samples is shorter than the model's receptive field ({self.min_samples})")
        if self.normalize:
            return (wave - wave.mean()) / np.sqrt(wave.var() + 1e-7)
        return wave

    def _hidden(self, x: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        out = self.model(x, attention_mask=mask, output_hidden_states=not self.final)
        return out.last_hidden_state if self.final else out.hidden_states[self.layer]

    @torch.inference_mode()
    def _embed_one(self, wave: np.ndarray) -> np.ndarray:
        x = torch.from_numpy(self._prepare(wave).astype(np.float32)).unsqueeze(0).to(self.device)
        return self._hidden(x, None)[0].double().mean(dim=0).float().cpu().numpy()

    @torch.inference_mode()
    def _embed_batch(self, waves: list[np.ndarray]) -> list[np.ndarray]:
        x, lengths = padded_waves([self._prepare(w).astype(np.float32, copy=False) for w in waves], self.device)
        samples = torch.tensor(lengths, device=x.device)
        mask = length_mask(samples, x.shape[1]).to(torch.long)
        hidden = self._hidden(x, mask).double()
        out = []
        for i, w in enumerate(waves):
            n = conv_output_frames(w.size, self.kernels, self.strides)
            out.append(hidden[i, :n].mean(dim=0).float().cpu().numpy())
        return out


def load_transformers(
    card: EncoderCard, located: Located, files: dict[str, str], *, device: str = "cpu", layer: int | None = None
) -> SSLEncoder:
    folder = located.folder
    try:
        raw = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        pre = json.loads((folder / "preprocessor_config.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise card.error(folder, f"config.json or preprocessor_config.json is not readable JSON ({exc})") from exc
    want_type = card.expect.get("model_type")
    if want_type and raw.get("model_type") != want_type:
        raise card.error(folder, f"config.json has model_type {raw.get('model_type')!r}; {card.label} is {want_type!r}")
    if card.embedding_dim is not None and raw.get("hidden_size") != card.embedding_dim:
        raise card.error(
            folder, f"config.json has hidden_size {raw.get('hidden_size')}; {card.label} is {card.embedding_dim}"
        )
    want_layers = card.expect.get("layers")
    if want_layers and raw.get("num_hidden_layers") != want_layers:
        raise card.error(
            folder, f"config.json has {raw.get('num_hidden_layers')} hidden layers; {card.label} has {want_layers}"
        )
    if int(pre.get("sampling_rate", 16000)) != card.sample_rate_hz:
        raise card.error(folder, f"preprocessor_config.json: sampling_rate {pre.get('sampling_rate')} is not 16000")
    n_layers = int(raw.get("num_hidden_layers", 0))
    chosen = n_layers if layer is None else int(layer)
    if not 0 <= chosen <= n_layers:
        raise card.error(folder, f"layer {layer} is out of range 0..{n_layers}")
    transformers = optional_import("transformers", card.label, "transformers")
    transformers.utils.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    try:
        model, info = transformers.AutoModel.from_pretrained(
            str(folder), local_files_only=True, dtype=torch.float32, output_loading_info=True
        )
    except Exception as exc:
        first = (str(exc).strip().splitlines() or [""])[0]
        raise card.error(folder, f"transformers could not load the checkpoint ({type(exc).__name__}: {first})") from exc
    missing = sorted(info.get("missing_keys") or [])
    mismatched = sorted(str(m) for m in (info.get("mismatched_keys") or []))
    if missing or mismatched:
        what = ", ".join((missing + mismatched)[:5])
        raise card.error(folder, f"the weights file does not cover the model (missing or mismatched: {what})")
    model = freeze(model, device)
    return SSLEncoder(
        card,
        model,
        layer=chosen,
        normalize=bool(pre.get("do_normalize", False)),
        attention_mask=bool(pre.get("return_attention_mask", False)),
        source=str(folder),
        checkpoint_sha256=combined_sha256(files),
        files=files,
        device=device,
        config={
            "model_type": raw.get("model_type"),
            "layer": chosen,
            "pooling": "mean over frames",
            "do_normalize": bool(pre.get("do_normalize", False)),
        },
    )


LAYOUT = Layout(
    "transformers", FILES, load_transformers, requires="transformers", requires_hint="transformers", options=("layer",)
)
