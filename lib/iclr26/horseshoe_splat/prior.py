"""Priors on per-splat log-scales and their mean-field variational posteriors.

Each splat i has log-scales s_i ∈ R^d (d = 3 axes). The prior is placed on the
departure w_ij = s_ij − m_ij from an anchor m (the initial log-scales, read off the
training views' point cloud), and the variational posterior of the log-scales is
q(s_ij) = N(β_ij, σ_ij²) with σ = softplus(ρ) (reparameterised, trained by gradients).

The horseshoe (Carvalho, Polson and Scott, 2010) is written through the inverse-gamma
augmentation of the half-Cauchy (Makalic and Schmidt, 2016):
λ ~ C⁺(0, A) ⇔ λ² | ν ~ IG(½, 1/ν), ν ~ IG(½, 1/A²). Here

    w_ij | λ_ij, τ_j ~ N(0, λ_ij² τ_j²),   λ_ij ~ C⁺(0, 1) (local),
    τ_j ~ C⁺(0, b) (global, one per axis j),

with q(λ²), q(ν), q(τ²), q(ξ) inverse-gamma. They are conjugate given q(w), so their
mean-field optimum is closed form (:meth:`ScalePosterior.update_auxiliaries`). The
Gaussian and Laplace priors, w ~ N(0, b²) and w ~ Laplace(0, b), are the baselines.

Shapes: n splats, d axes, M Monte Carlo samples. Everything follows ``anchor``'s
device and dtype.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

Tensor = torch.Tensor
SAMPLERS = ("mean-field", "ancestral")
PRIORS = ("horseshoe", "gaussian", "laplace")
LOG_2PI = math.log(2 * math.pi)


def ig_expectations(a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
    """E[1/X] and E[log X] for X ~ IG(a, b) (shape a, scale b; any shape, broadcast).

    1/X ~ Gamma(a, rate b), so E[1/X] = a/b and E[log X] = log b − ψ(a).
    """
    a, b = _check_ig(a, b)
    return a / b, b.log() - torch.digamma(a)  # E[1/X] = a/b; E[log X] = log b − ψ(a)


def ig_entropy(a: Tensor, b: Tensor) -> Tensor:
    """Entropy of IG(a, b): a + log b + log Γ(a) − (1 + a) ψ(a) (broadcast)."""
    a, b = _check_ig(a, b)
    return a + b.log() + torch.lgamma(a) - (1 + a) * torch.digamma(a)


def kl_inverse_gamma(a1: Tensor, b1: Tensor, a2: Tensor, b2: Tensor) -> Tensor:
    """KL(IG(a1, b1) ‖ IG(a2, b2)), elementwise (broadcast).

    X ↦ 1/X maps IG(a, b) to Gamma(a, rate b) and KL is invariant under a bijection:
    KL = (a1 − a2) ψ(a1) − log Γ(a1) + log Γ(a2) + a2 (log b1 − log b2)
         + a1 (b2 − b1) / b1.
    """
    a1, b1 = _check_ig(a1, b1)
    a2, b2 = _check_ig(a2, b2)
    return (
        (a1 - a2) * torch.digamma(a1)
        - torch.lgamma(a1)
        + torch.lgamma(a2)
        + a2 * (b1.log() - b2.log())
        + a1 * (b2 - b1) / b1
    )


def expected_log_ig(
    alpha0: float,
    e_log_scale: Tensor,
    e_scale: Tensor,
    e_log_x: Tensor,
    e_inv_x: Tensor,
) -> Tensor:
    """E_q[log IG(X; α0, β)] when the scale β is itself random (independent of X).

    log IG(x; α0, β) = α0 log β − log Γ(α0) − (α0 + 1) log x − β / x, so the
    expectation needs E[log β], E[β], E[log X] and E[1/X] (all broadcast).
    """
    return (
        alpha0 * e_log_scale
        - math.lgamma(alpha0)
        - (alpha0 + 1) * e_log_x
        - e_scale * e_inv_x
    )


def laplace_expected_abs(mu: Tensor, sigma: Tensor) -> Tensor:
    """E|w| for w ~ N(μ, σ²): σ √(2/π) exp(−μ²/2σ²) + μ (1 − 2 Φ(−μ/σ))."""
    z = mu / sigma
    phi = torch.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)
    return sigma * 2 * phi + mu * torch.erf(z / math.sqrt(2))  # 1 − 2Φ(−z) = erf(z/√2)


class ScalePosterior:
    """q over n×d log-scales with a horseshoe, Gaussian or Laplace prior on s − m.

    Args:
        anchor: (n, d) prior centre m (the initial log-scales); its device and dtype
            are used throughout.
        prior: "horseshoe", "gaussian" or "laplace".
        prior_scale: b: the global half-Cauchy scale (horseshoe), the standard
            deviation (gaussian) or the Laplace scale b.
        rho_init: initial ρ, so σ = softplus(ρ) (the official code's −4 gives 0.018).

    Attributes ``beta`` (n, d) and ``rho`` (n, d) are leaf tensors with gradients;
    the inverse-gamma factors are plain tensors, set by ``update_auxiliaries``:
    q(λ²) = IG(1, b_lam) (n, d), q(ν) = IG(1, b_nu) (n, d),
    q(τ²) = IG((n + 1)/2, b_tau) (d,), q(ξ) = IG(1, b_xi) (d,).
    """

    def __init__(
        self,
        anchor: Tensor,
        prior: str = "horseshoe",
        prior_scale: float = 0.1,
        rho_init: float = -4.0,
    ) -> None:
        if not isinstance(anchor, torch.Tensor) or not anchor.is_floating_point():
            raise TypeError("anchor must be a floating-point torch.Tensor (n, d)")
        if anchor.ndim != 2 or anchor.numel() == 0:
            raise ValueError(
                "anchor must have shape (n, d) with n, d >= 1, got "
                f"{tuple(anchor.shape)}"
            )
        if not torch.isfinite(anchor).all():
            raise ValueError("anchor contains NaN or inf")
        if prior not in PRIORS:
            raise ValueError(f"prior must be one of {PRIORS}, got {prior!r}")
        if not (isinstance(prior_scale, (int, float)) and prior_scale > 0):
            raise ValueError(f"prior_scale must be a number > 0, got {prior_scale!r}")
        if not math.isfinite(rho_init):
            raise ValueError(f"rho_init must be finite, got {rho_init}")
        self.anchor = anchor.detach().clone()
        self.prior = prior
        self.prior_scale = float(prior_scale)
        self.beta = self.anchor.clone().requires_grad_(True)
        self.rho = torch.full_like(self.anchor, float(rho_init)).requires_grad_(True)
        n, d = self.anchor.shape
        one = torch.ones_like(self.anchor)
        self.a_tau = torch.full(
            (d,), (n + 1) / 2, dtype=anchor.dtype, device=anchor.device
        )
        self.b_lam, self.b_nu = one.clone(), one.clone()
        self.b_tau = torch.full_like(self.a_tau, self.prior_scale**2 * (n + 1) / 2)
        self.b_xi = torch.ones_like(self.a_tau) / self.prior_scale**2
        if prior == "horseshoe":
            self.update_auxiliaries()

    @property
    def shape(self) -> tuple[int, int]:
        """(n, d)."""
        return tuple(self.anchor.shape)

    @property
    def sigma(self) -> Tensor:
        """(n, d) posterior standard deviations σ = softplus(ρ)."""
        return F.softplus(self.rho)

    def parameters(self) -> list[Tensor]:
        """The tensors trained by gradients: [beta, rho]."""
        return [self.beta, self.rho]

    def sample(
        self,
        m: int = 1,
        generator: torch.Generator | None = None,
        sampler: str = "mean-field",
    ) -> Tensor:
        """m samples of the log-scales → (m, n, d).

        ``sampler="mean-field"`` (training and this chapter's predictive): the
        reparameterised s = β + σ ε, ε ~ N(0, I), from q(s) alone.
        ``sampler="ancestral"`` (horseshoe only; the paper's test-time sampler as the
        worked plan describes it): λ² ~ q(λ²), τ² ~ q(τ²), then s = β + σ τ λ ε, so
        the horseshoe scales multiply the spread (heavy-tailed).
        """
        if isinstance(m, bool) or not isinstance(m, int) or m < 1:
            raise ValueError(f"m must be a positive int, got {m!r}")
        if sampler not in SAMPLERS:
            raise ValueError(f"sampler must be one of {SAMPLERS}, got {sampler!r}")
        like = dict(dtype=self.anchor.dtype, device=self.anchor.device)
        eps = torch.randn((m, *self.shape), generator=generator, **like)
        if sampler == "mean-field":
            return self.beta + self.sigma * eps  # s = β + σ ε
        if self.prior != "horseshoe":
            raise ValueError("the ancestral sampler needs the horseshoe prior")
        # λ² ~ IG(1, b_λ): b_λ / E with E ~ Exp(1) = −log U
        u = torch.rand((m, *self.shape), generator=generator, **like)
        lam2 = self.b_lam / -torch.log1p(-u)
        # τ² ~ IG(a_τ, b_τ) with 2 a_τ = n + 1 an integer: b_τ / (χ²_{2a_τ} / 2)
        k = round(2 * float(self.a_tau[0]))
        z = torch.randn((m, k, self.shape[1]), generator=generator, **like)
        tau2 = self.b_tau / (0.5 * (z**2).sum(1, keepdim=True))  # (m, 1, d)
        return self.beta + self.sigma * (tau2 * lam2).sqrt() * eps  # s = β + στλε

    def second_moment(self) -> Tensor:
        """(n, d) E_q[w²] = (β − m)² + σ², the only way q(w) enters the horseshoe."""
        return (self.beta - self.anchor) ** 2 + self.sigma**2

    @torch.no_grad()
    def update_auxiliaries(self, sweeps: int = 3) -> None:
        """Closed-form mean-field updates of q(λ²), q(ν), q(τ²), q(ξ) (horseshoe only).

        Each is the coordinate-ascent optimum given the others (collect the terms of
        the log joint in that variable, read off the inverse-gamma kernel):
        q(λ²) = IG(1, E[1/ν] + E[w²] E[1/τ²] / 2),  q(ν) = IG(1, E[1/λ²] + 1),
        q(τ_j²) = IG((n + 1)/2, E[1/ξ_j] + Σ_i E[w_ij²] E[1/λ_ij²] / 2),
        q(ξ_j) = IG(1, E[1/τ_j²] + 1/b²).
        """
        if self.prior != "horseshoe":
            return
        ew2 = self.second_moment()
        for _ in range(sweeps):  # a few sweeps of coordinate ascent
            e_inv_tau = self.a_tau / self.b_tau  # (d,)
            self.b_lam = 1.0 / self.b_nu + 0.5 * ew2 * e_inv_tau  # E[1/ν] = 1/b_ν
            self.b_nu = 1.0 / self.b_lam + 1.0  # E[1/λ²] = 1/b_λ, A = 1
            e_inv_lam = 1.0 / self.b_lam
            self.b_tau = 1.0 / self.b_xi + 0.5 * (ew2 * e_inv_lam).sum(0)
            self.b_xi = self.a_tau / self.b_tau + 1.0 / self.prior_scale**2

    def prior_precision(self) -> Tensor:
        """(n, d) E_q[1/(λ² τ²)]: the precision the horseshoe puts on each w."""
        if self.prior != "horseshoe":
            raise ValueError("prior_precision is defined for the horseshoe only")
        return (1.0 / self.b_lam) * (self.a_tau / self.b_tau)

    def kl(self) -> Tensor:
        """KL(q ‖ p) over all latent variables of the prior, a scalar (the ELBO's
        regulariser). Differentiable in beta and rho.

        horseshoe: E_q[log q − log p] over w, λ², ν, τ², ξ;
        gaussian: Σ log(b/σ) + (σ² + (β − m)²)/(2b²) − ½;
        laplace: Σ −½ log(2πeσ²) + log(2b) + E|w|/b.
        """
        sigma, b = self.sigma, self.prior_scale
        mu = self.beta - self.anchor
        if self.prior == "gaussian":
            return (
                math.log(b) - sigma.log() + (sigma**2 + mu**2) / (2 * b * b) - 0.5
            ).sum()
        h_w = 0.5 * (LOG_2PI + 1) + sigma.log()  # entropy of N(β, σ²)
        if self.prior == "laplace":
            return (-h_w + math.log(2 * b) + laplace_expected_abs(mu, sigma) / b).sum()
        one = torch.ones_like(self.b_lam)
        e_inv_lam, e_log_lam = ig_expectations(one, self.b_lam)
        e_inv_nu, e_log_nu = ig_expectations(one, self.b_nu)
        e_inv_tau, e_log_tau = ig_expectations(self.a_tau, self.b_tau)
        e_inv_xi, e_log_xi = ig_expectations(torch.ones_like(self.b_xi), self.b_xi)
        # E log N(w; 0, λ²τ²) = −½ log 2π − ½ (E log λ² + E log τ²) − ½ E[w²] E[1/λ²τ²]
        e_log_pw = -0.5 * (
            LOG_2PI
            + e_log_lam
            + e_log_tau
            + self.second_moment() * e_inv_lam * e_inv_tau
        )
        # λ² | ν ~ IG(½, 1/ν): the scale 1/ν has E[log] = −E log ν and E[·] = E[1/ν]
        e_log_plam = expected_log_ig(0.5, -e_log_nu, e_inv_nu, e_log_lam, e_inv_lam)
        e_log_pnu = expected_log_ig(0.5, torch.zeros_like(one), one, e_log_nu, e_inv_nu)
        e_log_ptau = expected_log_ig(0.5, -e_log_xi, e_inv_xi, e_log_tau, e_inv_tau)
        s = torch.full_like(self.b_xi, 1.0 / b**2)  # ξ ~ IG(½, 1/b²)
        e_log_pxi = expected_log_ig(0.5, s.log(), s, e_log_xi, e_inv_xi)
        local = -h_w - ig_entropy(one, self.b_lam) - ig_entropy(one, self.b_nu)
        local = local - e_log_pw - e_log_plam - e_log_pnu
        glob = -ig_entropy(self.a_tau, self.b_tau) - ig_entropy(
            torch.ones_like(self.b_xi), self.b_xi
        )
        glob = glob - e_log_ptau - e_log_pxi
        return local.sum() + glob.sum()


def half_cauchy_by_augmentation(
    n: int, scale: float = 1.0, generator: torch.Generator | None = None
) -> Tensor:
    """n draws of λ by the augmentation ν ~ IG(½, 1/A²), λ² | ν ~ IG(½, 1/ν) → (n,).

    An IG(a, b) draw is b / Gamma(a, 1); torch's Gamma sampler takes no generator,
    so Gamma(½, 1) is drawn as χ²₁ / 2 = Z² / 2 from a seeded normal.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive int, got {n!r}")
    if not scale > 0:
        raise ValueError(f"scale must be > 0, got {scale}")
    z = torch.randn(2, n, generator=generator, dtype=torch.float64)
    g = 0.5 * z**2  # Gamma(½, 1)
    nu = (1.0 / scale**2) / g[0]  # ν ~ IG(½, 1/A²)
    lam2 = (1.0 / nu) / g[1]  # λ² | ν ~ IG(½, 1/ν)
    return lam2.sqrt()


def _check_ig(a, b) -> tuple[Tensor, Tensor]:
    a = (
        torch.as_tensor(a, dtype=torch.get_default_dtype())
        if not torch.is_tensor(a)
        else a
    )
    b = torch.as_tensor(b, dtype=a.dtype) if not torch.is_tensor(b) else b
    if not (a.is_floating_point() and b.is_floating_point()):
        raise TypeError("inverse-gamma parameters must be floating point")
    if not (torch.isfinite(a).all() and torch.isfinite(b).all()):
        raise ValueError("inverse-gamma parameters contain NaN or inf")
    if not ((a > 0).all() and (b > 0).all()):
        raise ValueError("inverse-gamma parameters must be > 0 (shape a, scale b)")
    return a, b
