"""Active learning of decision trees (chapter 04): exact tree classes, the disagreement
coefficient, CAL, and an agnostic learner with multiplicative error bounds.

* :mod:`.core` -- pools, the enumerated tree class, rho and theta, CAL, passive
  labelling, the exercise checker.
* :mod:`.factored` -- rho of depth-<=2 trees without listing them (for pools whose every
  coordinate is distinct), and the non-grid pools used as controls.
* :mod:`.agnostic` -- noisy labels: a disagreement-based learner with relative-deviation
  (multiplicative) or additive confidence bounds, and random-query ERM.
"""

from .agnostic import *  # noqa: F403
from .agnostic import __all__ as _agnostic_all
from .core import *  # noqa: F403
from .core import __all__ as _core_all
from .factored import *  # noqa: F403
from .factored import __all__ as _factored_all

__all__ = [*_core_all, *_factored_all, *_agnostic_all]
