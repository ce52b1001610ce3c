"""Review fixes in iclr26.dial: input validation, the in-place-safe checker,
recon removal."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from iclr26 import dial as D


def _setup():
    g = torch.Generator().manual_seed(0)
    sae = D.TopKSAE(4, 16, 2, generator=g)
    e = torch.nn.functional.normalize(torch.randn(30, 4, generator=g), dim=1)
    T = torch.randn(2, 4, generator=g)
    return sae, e, T


def test_checker_rejects_in_place_answer_that_ignores_lam():
    def inplace_ignores_lam(e, Q, lam):
        e -= (e @ Q) @ Q.T
        return e

    v = D.check_project_out(inplace_ignores_lam)
    assert v.status == "wrong" and "in place" in v

    def ignores_lam(e, Q, lam):
        return e - (e @ Q) @ Q.T

    v = D.check_project_out(ignores_lam)
    assert v.status == "wrong" and "lam" in v
    good = D.check_project_out(lambda e, Q, lam: e - lam * (e @ Q) @ Q.T)
    assert good.status == "correct"


def test_dial_plus_basis_rejects_k_above_flipping_latents_and_m():
    sae, e, T = _setup()
    n_flip = int((D.flip_frequencies(sae, e, T) > 0).sum())
    with pytest.raises(ValueError, match="flip"):
        D.dial_plus_basis(sae, e, T, n_flip + 1)
    with pytest.raises(ValueError, match="width m"):
        D.dial_plus_basis(sae, e, T, 100)


def test_d_mismatch_and_bad_indices_raise_value_error():
    sae, e, T = _setup()
    with pytest.raises(ValueError, match="SAE's d"):
        D.flip_frequencies(sae, torch.randn(30, 5), T)
    with pytest.raises(ValueError, match="SAE's d"):
        D.zero_neurons(sae, torch.randn(30, 5), torch.tensor([0]))
    with pytest.raises(ValueError, match=r"\[0, 16\)"):
        D.zero_neurons(sae, e, torch.tensor([99]))
    with pytest.raises(TypeError, match="integer"):
        D.zero_neurons(sae, e, torch.tensor([0.5]))
    pos = torch.zeros(30, dtype=torch.bool)
    pos[:10] = True
    with pytest.raises(ValueError, match="pos must be"):
        D.attribution_scores(sae, e, pos[:20], T[0])
    with pytest.raises(ValueError, match="e_attr"):
        D.attribution_scores(sae, e, pos, torch.randn(5))
    with pytest.raises(TypeError, match="bool"):
        D.attribution_scores(sae, e, pos.long(), T[0])


def test_apply_to_spurious_basis_captions_in_distribution_checks():
    sae, e, T = _setup()
    with pytest.raises(TypeError, match="bool"):
        D.apply_to(e, torch.ones(30), e * 0)
    with pytest.raises(ValueError, match="new"):
        D.apply_to(e, torch.ones(30, dtype=torch.bool), e[:5])
    with pytest.raises(TypeError, match="beta"):
        D.spurious_basis(torch.randn(4, 3), torch.randn(4), beta=float("nan"), pct=0.5)
    a = np.array([0, 1])
    with pytest.raises(ValueError, match="p_attr"):
        D.captions(a, a, np.array([0, 7]), np.random.default_rng(0), p_attr=2.0)
    with pytest.raises(ValueError, match="p_name"):
        D.captions(a, a, np.array([0, 7]), np.random.default_rng(0), p_name=-0.1)
    with pytest.raises(ValueError, match="NaN"):
        D.in_distribution_acc(torch.tensor([float("nan"), 1, 1, 1.0]), 0.95)


def test_remove_from_reconstruction_option():
    sae, e, T = _setup()
    Q = D.orthonormal_basis(sae.W_dec.detach()[:, :2])
    mask = torch.zeros(30, dtype=torch.bool)
    mask[::2] = True
    raw = D.remove(e, mask, Q, 1.0)
    rec = D.remove(e, mask, Q, 1.0, source="recon", sae=sae)
    with torch.no_grad():
        ehat = sae(e)[0]
    assert torch.allclose(rec[mask], D.project_out(ehat, Q, 1.0)[mask], atol=1e-6)
    assert torch.equal(rec[~mask], e[~mask]) and torch.equal(raw[~mask], e[~mask])
    with pytest.raises(ValueError, match="needs the sae"):
        D.remove(e, mask, Q, 1.0, source="recon")
    with pytest.raises(ValueError, match="source"):
        D.remove(e, mask, Q, 1.0, source="hat")
