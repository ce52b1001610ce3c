"""iclr26: the library behind *ICLR 2026 in Code*.

The core (this package's top level) is small: device choice, seeding, scale presets,
progress bars, the plot style and claim checks. Each chapter's method lives in its own
module, e.g. ``iclr26.deep_mf``; import it by name.
"""

from .claims import Claim, ClaimLog
from .core import (
    PALETTE,
    ExerciseVerdict,
    get_device,
    grade_exercise,
    progress,
    scale_preset,
    seed_everything,
    seeded,
    use_book_style,
)

__all__ = [
    "Claim",
    "ClaimLog",
    "ExerciseVerdict",
    "PALETTE",
    "get_device",
    "grade_exercise",
    "progress",
    "scale_preset",
    "seed_everything",
    "seeded",
    "use_book_style",
]
__version__ = "0.1.0"
