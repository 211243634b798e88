"""The registered encoder cards: InterBias-SV's twelve encoder labels (spelling kept), plus WeSpeaker ResNet34.

Each card names the public checkpoint to fetch, the files its folder must hold and the
architecture facts checked on load (``expect``), so that a label cannot run another model.
Dimensions are those of the named checkpoints. ``trained_on`` lists corpora for the overlap
warning (VoxCeleb-trained encoders evaluated on VoxCeleb are flagged in results).
"""

from __future__ import annotations

from interbias.encoders import EncoderCard, hf_ssl, nemo_titanet, onnx_generic, rawnet3, register, spkrec, wespeaker

VOX12 = ("VoxCeleb1", "VoxCeleb2")
LIBRI_94K = ("Libri-Light", "GigaSpeech", "VoxPopuli")

CARDS = (
    EncoderCard(
        label="X-Vector",
        family="sv",
        backend="speechbrain",
        embedding_dim=512,
        features="24-bin SpeechBrain Fbank, sentence mean normalisation",
        trained_on=VOX12,
        description="TDNN x-vector (Snyder et al., 2018), SpeechBrain recipe",
        checkpoint="speechbrain/spkrec-xvect-voxceleb",
        layouts=(spkrec.LAYOUT,),
        expect={"class": "Xvector"},
    ),
    EncoderCard(
        label="ECAPA-TDNN",
        family="sv",
        backend="speechbrain",
        embedding_dim=192,
        features="80-bin SpeechBrain Fbank, sentence mean normalisation",
        trained_on=VOX12,
        description="ECAPA-TDNN, C=1024 (Desplanques et al., 2020), SpeechBrain recipe",
        checkpoint="speechbrain/spkrec-ecapa-voxceleb",
        layouts=(spkrec.LAYOUT,),
        expect={"class": "ECAPA_TDNN"},
    ),
    EncoderCard(
        label="ECAPA-TDNN-Large",
        family="sv",
        backend="wespeaker",
        embedding_dim=192,
        features="80-bin Kaldi fbank (Hamming, int16 scale), mean-normalised",
        trained_on=("VoxCeleb2",),
        description="WeSpeaker ECAPA-TDNN with 1024 channels and global-context attentive pooling",
        checkpoint="WeSpeaker model zoo voxceleb_ECAPA1024 (ECAPA_TDNN_GLOB_c1024, VoxCeleb2 dev)",
        layouts=(wespeaker.LAYOUT, onnx_generic.LAYOUT),
        expect={"model": "ECAPA_TDNN_GLOB_c1024", "onnx_input": "wespeaker-fbank", "bins": 80},
    ),
    EncoderCard(
        label="RawNet3",
        family="sv",
        backend="torch|onnx",
        embedding_dim=256,
        features="raw 16 kHz waveform",
        trained_on=("VoxCeleb2",),
        description="RawNet3 (Jung et al., 2022): the published model.pt in interbias's definition, or an ONNX export",
        checkpoint="jungjee/RawNet3 model.pt (VoxCeleb2)",
        layouts=(rawnet3.LAYOUT, onnx_generic.LAYOUT),
        expect={"onnx_input": "waveform"},
    ),
    EncoderCard(
        label="TitaNet",
        family="sv",
        backend="onnx|nemo",
        embedding_dim=192,
        features="80-bin NeMo mel (per-feature normalised) for ONNX; NeMo's own preprocessor for .nemo",
        trained_on=("VoxCeleb1", "VoxCeleb2", "Fisher", "Switchboard", "LibriSpeech", "SRE"),
        description="TitaNet-L (Koluguri et al., 2022)",
        checkpoint="nvidia/speakerverification_en_titanet_large (titanet-large.nemo; or NeMo's ONNX export)",
        layouts=(onnx_generic.LAYOUT, nemo_titanet.LAYOUT),
        expect={"onnx_input": "nemo-mel", "bins": 80, "onnx_output": "embs", "nemo_encoder": "ConvASREncoder"},
    ),
    EncoderCard(
        label="ReDimNet",
        family="sv",
        backend="onnx",
        embedding_dim=192,
        features="raw 16 kHz waveform (the export includes ReDimNet's mel front end)",
        trained_on=("VoxCeleb2",),
        description="ReDimNet (Yakovlev et al., 2024), b2 trained on VoxCeleb2, exported to ONNX",
        checkpoint="IDRnD/ReDimNet b2-vox2 (torch.hub 'IDRnD/ReDimNet', model_name='b2', train_type='ft_lm', dataset='vox2'), exported to model.onnx",
        layouts=(onnx_generic.LAYOUT,),
        expect={"onnx_input": "waveform"},
    ),
    EncoderCard(
        label="WavLM-Base",
        family="ssl",
        backend="transformers",
        embedding_dim=768,
        features="raw waveform; mean of the final hidden layer",
        trained_on=("LibriSpeech",),
        description="WavLM Base (Chen et al., 2022a), no speaker head",
        checkpoint="microsoft/wavlm-base",
        layouts=(hf_ssl.LAYOUT,),
        expect={"model_type": "wavlm", "layers": 12},
    ),
    EncoderCard(
        label="WavLM-Base+",
        family="ssl",
        backend="transformers",
        embedding_dim=768,
        features="raw waveform; mean of the final hidden layer",
        trained_on=LIBRI_94K,
        description="WavLM Base+ (94k h), no speaker head",
        checkpoint="microsoft/wavlm-base-plus",
        layouts=(hf_ssl.LAYOUT,),
        expect={"model_type": "wavlm", "layers": 12},
    ),
    EncoderCard(
        label="WavLM-Large",
        family="ssl",
        backend="transformers",
        embedding_dim=1024,
        features="raw waveform, standardised; mean of the final hidden layer",
        trained_on=LIBRI_94K,
        description="WavLM Large (94k h), no speaker head",
        checkpoint="microsoft/wavlm-large",
        layouts=(hf_ssl.LAYOUT,),
        expect={"model_type": "wavlm", "layers": 24},
    ),
    EncoderCard(
        label="UniSpeech-SAT",
        family="ssl",
        backend="transformers",
        embedding_dim=768,
        features="raw waveform; mean of the final hidden layer",
        trained_on=LIBRI_94K,
        description="UniSpeech-SAT Base+ (Chen et al., 2022b), no speaker head",
        checkpoint="microsoft/unispeech-sat-base-plus",
        layouts=(hf_ssl.LAYOUT,),
        expect={"model_type": "unispeech-sat", "layers": 12},
    ),
    EncoderCard(
        label="HuBERT-Large",
        family="ssl",
        backend="transformers",
        embedding_dim=1024,
        features="raw waveform, standardised; mean of the final hidden layer",
        trained_on=("Libri-Light",),
        description="HuBERT Large (Hsu et al., 2021) pre-trained on Libri-Light 60k h, no speaker head",
        checkpoint="facebook/hubert-large-ll60k",
        layouts=(hf_ssl.LAYOUT,),
        expect={"model_type": "hubert", "layers": 24},
    ),
    EncoderCard(
        label="ResNet34",
        family="sv",
        backend="wespeaker",
        embedding_dim=256,
        features="80-bin Kaldi fbank (Hamming, int16 scale), mean-normalised",
        trained_on=("VoxCeleb2",),
        description="WeSpeaker ResNet34 (not one of the paper's labels)",
        checkpoint="WeSpeaker model zoo voxceleb_resnet34 (VoxCeleb2 dev)",
        layouts=(wespeaker.LAYOUT, onnx_generic.LAYOUT),
        expect={"model": "ResNet34", "onnx_input": "wespeaker-fbank", "bins": 80},
    ),
)

#: InterBias-SV's labels, in its order (CAM++ is registered by :mod:`interbias.encoders.campplus`).
PAPER_LABELS = (
    "X-Vector",
    "ECAPA-TDNN",
    "ECAPA-TDNN-Large",
    "RawNet3",
    "CAM++",
    "TitaNet",
    "ReDimNet",
    "WavLM-Base",
    "WavLM-Base+",
    "WavLM-Large",
    "UniSpeech-SAT",
    "HuBERT-Large",
)

for _card in CARDS:
    register(_card)
