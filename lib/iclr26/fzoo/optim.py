"""FZOO and MeZO as torch.optim optimisers, perturbations regenerated from seeds,
and the batched
(vmap) FZOO step. See the package docstring for the update rules."""

from __future__ import annotations

import math
from typing import Callable, Iterable

import torch
from torch import nn

STD_MODES = ("population", "sample")
DISTS = ("rademacher", "gaussian")


# --------------------------------------------------------------------------------------
# Perturbations regenerated from seeds
# --------------------------------------------------------------------------------------


def need_generator(generator, what: str = "this draw") -> torch.Generator:
    """``generator`` itself, or a ``TypeError``: the package never draws from torch's
    global generator, so that a result depends on its seed alone."""
    if not isinstance(generator, torch.Generator):
        raise TypeError(
            f"{what} needs a torch.Generator (the library draws nothing from torch's "
            f"global generator), got {type(generator).__name__}"
        )
    return generator


def rademacher(
    shape: tuple[int, ...] | torch.Size,
    generator: torch.Generator,
    device: torch.device | str | None = None,
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """A tensor of ``shape`` with independent entries ±1, each with probability 1/2,
    drawn from ``generator`` (required)."""
    need_generator(generator, "rademacher")
    u = torch.randint(
        0, 2, tuple(shape), generator=generator, device=device, dtype=dtype
    )
    return u.mul_(2).sub_(1)  # {0,1} → {−1,+1}


def _draw(shape, generator, device, dtype, dist: str) -> torch.Tensor:
    if dist == "rademacher":
        return rademacher(shape, generator, device, dtype)
    return torch.randn(tuple(shape), generator=generator, device=device, dtype=dtype)


def perturbations(
    params: list[torch.Tensor], seed: int, dist: str = "rademacher"
) -> Iterable[torch.Tensor]:
    """The perturbation ``z`` belonging to ``seed``, one tensor per parameter,
    regenerated on demand.

    The same ``seed`` always gives the same tensors (on the parameters' devices), so an
    optimiser needs to remember only the integer, not the ``d`` numbers.
    """
    if dist not in DISTS:
        raise ValueError(f"dist must be one of {DISTS}, got {dist!r}")
    generators: dict[torch.device, torch.Generator] = {}
    for p in params:
        if p.device not in generators:
            generators[p.device] = torch.Generator(device=p.device).manual_seed(
                int(seed)
            )
        yield _draw(p.shape, generators[p.device], p.device, p.dtype, dist)


@torch.no_grad()
def perturb_(
    params: list[torch.Tensor],
    seed: int,
    scale: float | list[float],
    dist: str = "rademacher",
) -> None:
    """In place: ``θ ← θ + scale · z(seed)`` for every parameter (``scale`` may be one
    per parameter)."""
    params = list(params)
    scales = scale if isinstance(scale, (list, tuple)) else [scale] * len(params)
    if len(scales) != len(params):
        raise ValueError(f"got {len(scales)} scales for {len(params)} parameters")
    for p, z, s in zip(params, perturbations(params, seed, dist), scales):
        p.add_(z, alpha=float(s))


def draw_seeds(generator: torch.Generator, n: int) -> list[int]:
    """``n`` integer seeds for perturbations, drawn from ``generator`` (what FZOO does
    each step)."""
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive int, got {n!r}")
    return torch.randint(0, 2**62, (n,), generator=generator).tolist()


def _loss_value(loss) -> float:
    if torch.is_tensor(loss):
        if loss.numel() != 1:
            raise ValueError(
                f"the closure must return a scalar loss, got shape {tuple(loss.shape)}"
            )
        return float(loss.item())
    if isinstance(loss, (int, float)) and not isinstance(loss, bool):
        return float(loss)
    raise TypeError(
        f"the closure must return a scalar tensor or a float, got {type(loss).__name__}"
    )


def _check_params(params: list[torch.Tensor], name: str) -> None:
    """Zeroth-order optimisers move parameters by ±ε: they must be floating point."""
    bad = [tuple(p.shape) for p in params if not p.is_floating_point()]
    if bad:
        raise TypeError(
            f"{name} perturbs its parameters by ±eps, so they must be floating-point "
            f"tensors; got integer or bool parameters of shapes {bad}"
        )


def _finite_loss(value: float, what: str) -> float:
    if not math.isfinite(value):
        raise ValueError(
            f"the closure returned a non-finite loss ({value}) at {what}; the "
            "parameters were restored and no step was taken (lower lr or eps?)"
        )
    return value


def _check_hparams(lr: float, eps: float) -> None:
    if not (isinstance(lr, (int, float)) and lr >= 0 and math.isfinite(lr)):
        raise ValueError(f"lr must be a finite number >= 0, got {lr!r}")
    if not (isinstance(eps, (int, float)) and eps > 0 and math.isfinite(eps)):
        raise ValueError(f"eps must be a finite number > 0, got {eps!r}")


# --------------------------------------------------------------------------------------
# The optimisers
# --------------------------------------------------------------------------------------


class FZOO(torch.optim.Optimizer):
    """FZOO: ``N`` Rademacher one-sided differences, step normalised by the losses' std.

    Each :meth:`step` calls ``closure`` exactly ``n_perturb + 1`` times (the forward
    passes) and applies ``θ ← θ − η Σ_i (l_i − l_0)/(N σ) · u_i`` with ``σ`` the std of
    ``l_1..l_N`` (``std_mode="population"`` as in the official code, or ``"sample"``,
    the paper's N − 1). Perturbations are regenerated from seeds; the parameters are
    restored by subtracting the same ``εu_i`` (exact up to one rounding per entry, as in
    MeZO). When ``σ = 0`` (all perturbed losses equal) the update is skipped instead of
    dividing by zero. A closure that raises leaves the parameters where they were; a
    non-finite loss is a ``ValueError`` (parameters restored, no step taken), and so is
    a parameter that is not floating point (a ``TypeError``, at construction).

    After a step, ``self.last`` holds ``l0`` (float), ``losses`` (N,), ``sigma`` and
    ``coeffs`` (N,).
    """

    def __init__(
        self,
        params,
        lr: float = 1e-3,
        eps: float = 1e-3,
        n_perturb: int = 8,
        std_mode: str = "population",
        seed: int = 0,
    ):
        _check_hparams(lr, eps)
        if (
            not isinstance(n_perturb, int)
            or isinstance(n_perturb, bool)
            or n_perturb < 2
        ):
            raise ValueError(
                "n_perturb must be an int >= 2 (a std needs two losses), got "
                f"{n_perturb!r}"
            )
        if std_mode not in STD_MODES:
            raise ValueError(f"std_mode must be one of {STD_MODES}, got {std_mode!r}")
        super().__init__(params, dict(lr=lr, eps=eps))
        _check_params(self._params_and("lr", 1.0)[0], "FZOO")
        self.n_perturb, self.std_mode = n_perturb, std_mode
        self.seed_generator = torch.Generator().manual_seed(int(seed))
        self.forward_passes = 0
        self.last: dict = {}

    def add_param_group(self, param_group: dict) -> None:
        """``torch.optim.Optimizer.add_param_group``, refusing parameters that are not
        floating point (a ``TypeError``; the group is not added)."""
        torch.optim.Optimizer.add_param_group(self, param_group)
        try:
            _check_params(self.param_groups[-1]["params"], type(self).__name__)
        except TypeError:
            self.param_groups.pop()
            raise

    def _params_and(
        self, key: str, sign: float
    ) -> tuple[list[torch.Tensor], list[float]]:
        params, scales = [], []
        for group in self.param_groups:
            for p in group["params"]:
                params.append(p)
                scales.append(sign * group[key])
        return params, scales

    @torch.no_grad()
    def step(self, closure: Callable[[], torch.Tensor | float]) -> torch.Tensor:  # type: ignore[override]
        """One FZOO step; ``closure()`` returns the minibatch loss (no
        backward needed)."""
        if closure is None or not callable(closure):
            raise TypeError(
                "FZOO.step needs a closure that returns the loss (it evaluates it N + "
                "1 times)"
            )
        seeds = draw_seeds(self.seed_generator, self.n_perturb)
        params, plus = self._params_and("eps", +1.0)
        _, minus = self._params_and("eps", -1.0)
        losses = []
        for i, s in enumerate(seeds):
            perturb_(params, s, plus)  # θ + ε u_i
            try:
                loss = _loss_value(closure())  # l_i = L(θ + ε u_i)
            finally:  # back to θ, even if the closure raised
                perturb_(params, s, minus)
            losses.append(_finite_loss(loss, f"perturbation {i}"))
        l0 = _finite_loss(_loss_value(closure()), "the unperturbed point")  # l_0 = L(θ)
        self.forward_passes += self.n_perturb + 1
        losses_t = torch.tensor(losses, dtype=torch.float64)
        sigma = float(
            losses_t.std(correction=0 if self.std_mode == "population" else 1)
        )
        coeffs = (
            (losses_t - l0) / (self.n_perturb * sigma)
            if sigma > 0
            else torch.zeros_like(losses_t)
        )
        self.last = dict(
            l0=l0, losses=losses_t, sigma=sigma, coeffs=coeffs, seeds=seeds
        )
        if sigma > 0:
            for s, c in zip(seeds, coeffs.tolist()):
                _, lrs = self._params_and("lr", -c)
                perturb_(params, s, lrs)  # θ ← θ − η (l_i − l_0)/(Nσ) u_i
        return torch.tensor(l0)


class MeZO(torch.optim.Optimizer):
    """MeZO: two-sided SPSA along one Gaussian direction, two forward passes per step.

    ``g = (L(θ + εz) − L(θ − εz)) / (2ε)`` and ``θ ← θ − η g z``, with ``z`` regenerated
    from a seed (perturb ``+ε``, ``−2ε``, ``+ε`` as in the MeZO paper's algorithm).
    ``dist="rademacher"`` is offered for ablations. After a step, ``self.last`` holds
    ``projected_grad``.
    """

    def __init__(
        self,
        params,
        lr: float = 1e-3,
        eps: float = 1e-3,
        dist: str = "gaussian",
        seed: int = 0,
    ):
        _check_hparams(lr, eps)
        if dist not in DISTS:
            raise ValueError(f"dist must be one of {DISTS}, got {dist!r}")
        super().__init__(params, dict(lr=lr, eps=eps))
        _check_params(self._params_and("lr", 1.0)[0], "MeZO")
        self.dist = dist
        self.seed_generator = torch.Generator().manual_seed(int(seed))
        self.forward_passes = 0
        self.last: dict = {}

    _params_and = FZOO._params_and
    add_param_group = FZOO.add_param_group

    @torch.no_grad()
    def step(self, closure: Callable[[], torch.Tensor | float]) -> torch.Tensor:  # type: ignore[override]
        """One MeZO step; ``closure()`` returns the minibatch loss (no
        backward needed)."""
        if closure is None or not callable(closure):
            raise TypeError(
                "MeZO.step needs a closure that returns the loss (it evaluates it "
                "twice)"
            )
        (s,) = draw_seeds(self.seed_generator, 1)
        params, eps = self._params_and("eps", 1.0)
        perturb_(params, s, eps, self.dist)  # θ + εz
        try:
            loss_plus = _loss_value(closure())
        except BaseException:  # the closure raised: back to θ, then re-raise
            perturb_(params, s, [-e for e in eps], self.dist)
            raise
        perturb_(params, s, [-2 * e for e in eps], self.dist)  # θ − εz
        try:
            loss_minus = _loss_value(closure())
        finally:  # back to θ, even if the closure raised
            perturb_(params, s, eps, self.dist)
        _finite_loss(loss_plus, "θ + εz")
        _finite_loss(loss_minus, "θ − εz")
        self.forward_passes += 2
        g = (loss_plus - loss_minus) / (2 * eps[0]) if len(set(eps)) == 1 else None
        if g is None:
            raise ValueError("MeZO uses one eps for all parameter groups")
        self.last = dict(loss_plus=loss_plus, loss_minus=loss_minus, projected_grad=g)
        _, lrs = self._params_and("lr", -g)
        perturb_(params, s, lrs, self.dist)  # θ ← θ − η g z
        return torch.tensor(loss_plus)


# --------------------------------------------------------------------------------------
# Batched (vmap) FZOO step, for a GPU
# --------------------------------------------------------------------------------------


@torch.no_grad()
def batched_fzoo_step(
    model: nn.Module,
    loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    inputs: torch.Tensor,
    targets: torch.Tensor,
    seeds: list[int],
    lr: float,
    eps: float,
    std_mode: str = "population",
) -> dict:
    """One FZOO step with all ``N = len(seeds)`` perturbed losses from one
    ``torch.func.vmap`` call.

    Same update as :class:`FZOO` with the same seeds (``draw_seeds``), but the ``N``
    perturbed copies of every parameter exist at once (``N × d`` extra memory) so the
    forward passes run as one batch. ``loss_fn(model(inputs), targets)`` must return a
    scalar. Updates ``model`` in place and returns
    ``{"l0": float, "losses": (N,), "sigma": float}``.
    """
    from torch.func import functional_call, vmap

    _check_hparams(lr, eps)
    if std_mode not in STD_MODES:
        raise ValueError(f"std_mode must be one of {STD_MODES}, got {std_mode!r}")
    if len(seeds) < 2:
        raise ValueError(f"need at least two seeds, got {len(seeds)}")
    names = [n for n, p in model.named_parameters() if p.requires_grad]
    params = [p for _, p in model.named_parameters() if p.requires_grad]
    draws = [list(perturbations(params, s)) for s in seeds]
    # per param: (N, *shape)
    stacked = [torch.stack([d[k] for d in draws]) for k in range(len(params))]

    def loss_at(*ps: torch.Tensor) -> torch.Tensor:
        return loss_fn(functional_call(model, dict(zip(names, ps)), (inputs,)), targets)

    # (N,)  l_i = L(θ + ε u_i)
    losses = vmap(loss_at)(*[p + eps * u for p, u in zip(params, stacked)])
    l0 = loss_at(*params)  # l_0 = L(θ)
    losses64, l064 = losses.double(), l0.double()
    sigma = losses64.std(correction=0 if std_mode == "population" else 1)
    if sigma > 0:
        coeffs = ((losses64 - l064) / (len(seeds) * sigma)).to(params[0].dtype)  # (N,)
        for p, u in zip(params, stacked):
            p.sub_(lr * torch.tensordot(coeffs, u, dims=1))  # θ ← θ − η Σ_i c_i u_i
    return dict(l0=float(l0), losses=losses.detach(), sigma=float(sigma))
