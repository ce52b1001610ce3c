"""CompMarkGS: compression-tolerant watermarking of anchor-based 3D Gaussian
splatting (ICLR 2026), at small size, on the book's splatting core.

* ``model``: :class:`ScaffoldScene` (anchors with features decoded by MLPs),
  :func:`quantize_uniform`, :class:`QuantDistortionLayer` (none / fixed / learned).
* ``watermark``: :func:`haar_ll`, :class:`KeyedDecoder` (frozen, keyed, whitened),
  :func:`bit_accuracy`, :func:`bit_pvalue`, :func:`detect`.
* ``losses``: the HSV colour loss and frequency-aware growing (FAG).
* ``train``: the two stages, :func:`compress`, :func:`evaluate`.
* ``exercise``: :func:`check_detection_threshold`, the coding exercise.
"""

from .exercise import check_detection_threshold, detection_threshold
from .losses import (
    frequency_aware_grow,
    highpass,
    highpass_ssim_error,
    hsv_masked_loss,
    hsv_masks,
    rgb_to_hsv,
)
from .model import (
    MODES,
    QuantDistortionLayer,
    ScaffoldScene,
    quantize_uniform,
    voxel_anchors,
)
from .train import (
    Views,
    compress,
    embed,
    evaluate,
    fit_scene,
    init_scene,
    make_views,
    quantize_offsets,
    render_image,
)
from .watermark import (
    KeyedDecoder,
    bit_accuracy,
    bit_pvalue,
    correct_bits,
    detect,
    haar_ll,
    image_to_ll,
    message_bits,
)

__all__ = [
    "MODES",
    "KeyedDecoder",
    "QuantDistortionLayer",
    "ScaffoldScene",
    "Views",
    "bit_accuracy",
    "bit_pvalue",
    "check_detection_threshold",
    "detection_threshold",
    "compress",
    "correct_bits",
    "detect",
    "embed",
    "evaluate",
    "fit_scene",
    "frequency_aware_grow",
    "haar_ll",
    "highpass",
    "highpass_ssim_error",
    "hsv_masked_loss",
    "hsv_masks",
    "image_to_ll",
    "init_scene",
    "make_views",
    "message_bits",
    "quantize_offsets",
    "quantize_uniform",
    "render_image",
    "rgb_to_hsv",
    "voxel_anchors",
]
