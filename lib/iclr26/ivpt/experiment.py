"""The chapter's experiment: the data (:func:`make_data`), then one call
(:func:`run`) that pretrains the backbone, tunes every model and measures its
interpretability, returning what the notebook shows (:class:`Experiment`).

The preset lives in the notebook only; a run at another setting changes the
notebook's ``OVERRIDES`` (``python3 tasks.py sweep 14 --set key=value``)."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from types import SimpleNamespace

import numpy as np
import torch
from torch import nn

from ..core import seeded
from .data import class_table, make_part_birds, patch_parts
from .method import IVPT, LinearProbe, VPTDeep, concept_maps, evaluate
from .metrics import (
    fixed_windows,
    kmeans,
    largest_share,
    part_consistency,
    position_only,
)
from .training import LOSS_WEIGHTS, train
from .vit import TinyViT, pretrain

FOREGROUND = slice(1, 5)  # part channels head, body, wing, tail (0 is background)


def make_data(cfg, seed: int, device) -> SimpleNamespace:
    """Pretraining pairs (unlabelled, every colour tuple), tuning train/test splits."""
    rng = np.random.default_rng(seed)
    all_tuples = class_table(cfg.n_colours**3, cfg.n_colours, rng)
    # unlabelled pairs: the same (random) colours rendered twice, in two poses and
    # backgrounds; the pretraining sees no class table, no label and no part mask
    who = rng.integers(0, len(all_tuples), cfg.n_pre)
    pre, _, _ = make_part_birds(
        cfg.n_pre,
        all_tuples,
        rng,
        cfg.size,
        cfg.jitter,
        labels=who,
        n_colours=cfg.n_colours,
    )
    pre2, _, _ = make_part_birds(
        cfg.n_pre,
        all_tuples,
        rng,
        cfg.size,
        cfg.jitter,
        labels=who,
        n_colours=cfg.n_colours,
    )
    classes = class_table(cfg.n_classes, cfg.n_colours, rng)
    # the training images: the first n_train tune the models, the last n_val are the
    # validation split on which learning rates are chosen (never the test split)
    xtr, ytr, _ = make_part_birds(
        cfg.n_train + cfg.n_val,
        classes,
        rng,
        cfg.size,
        cfg.jitter,
        n_colours=cfg.n_colours,
    )
    xte, yte, mte = make_part_birds(
        cfg.n_test, classes, rng, cfg.size, cfg.jitter, n_colours=cfg.n_colours
    )
    t = lambda a: torch.from_numpy(a).to(device)
    parts = patch_parts(mte, cfg.patch)  # [n, 5, g, g]
    return SimpleNamespace(
        pre=t(pre),
        pre2=t(pre2),
        xtr=t(xtr[: cfg.n_train]),
        ytr=t(ytr[: cfg.n_train]),
        xval=t(xtr[cfg.n_train :]),
        yval=t(ytr[cfg.n_train :]),
        xte=t(xte),
        yte=t(yte),
        mask_te=mte,
        parts=t(parts.reshape(len(mte), 5, -1))[:, FOREGROUND],
        classes=classes,
    )


def unit_scores(name: str, outs: list[dict]) -> torch.Tensor:
    """Region scores [B, U, N] of a model's units over ``outs`` (any split).

    IVPT: every foreground prototype of every layer (its log concept map).
    VPT-Deep: every prompt of the blocks whose prompts reach the CLS token through
    patches (the attention the patches pay it times how much each patch then reaches
    the CLS, attention rollout; the model computes it as ``"regions"``).
    """
    if name == "vpt":
        return torch.cat([o["regions"] for o in outs], 0)
    per_layer = [
        torch.cat([o["logmaps"][j][:, :-1] for o in outs], 0)
        for j in range(len(outs[0]["maps"]))
    ]
    return torch.cat(per_layer, 1)


def readout(scores: torch.Tensor, parts: torch.Tensor, cfg, prefix: str = "") -> dict:
    """Consistency and purity at the chapter's region size ``cfg.m`` and at the sizes
    in ``cfg.m_list`` (keys ``consistency_m2``, ...)."""
    out = {}
    for m in sorted({cfg.m, *cfg.m_list}):
        pc = part_consistency(scores, parts, m, cfg.mu)
        tag = "" if m == cfg.m else f"_m{m}"
        out[f"{prefix}consistency{tag}"] = pc["consistency"]
        out[f"{prefix}purity{tag}"] = pc["purity"]
    return out


def place_alone(train_scores: torch.Tensor, parts: torch.Tensor, cfg) -> dict:
    """``readout`` of the units' modal regions (:func:`position_only`, from their
    scores on the training images), keys ``pos_consistency``, ``pos_purity``, ..."""
    out = {}
    for m in sorted({cfg.m, *cfg.m_list}):
        pc = part_consistency(
            position_only(train_scores, len(parts), m), parts, m, cfg.mu
        )
        tag = "" if m == cfg.m else f"_m{m}"
        out[f"pos_consistency{tag}"] = pc["consistency"]
        out[f"pos_purity{tag}"] = pc["purity"]
    return out


MODELS = ("vpt", "ivpt", "ivpt_last", "ivpt_ce", "kmeans")
"""The models the chapter runs: VPT-Deep, IVPT (every prototype layer), IVPT with
the last layer's prototypes only, IVPT trained on cross-entropy alone, k-means on the
frozen features (no training); ``"probe"`` (a linear head on the CLS token) is also
available."""
MODEL_NAMES = ("probe", *MODELS)


@dataclass
class Experiment:
    """What one run of the experiment gives the notebook, each thing once.

    metrics: per model (``"vpt"``, ``"ivpt"``, ...; and ``"windows"``, the fixed
        windows) its numbers: ``acc`` and ``val_acc`` (test and validation accuracy),
        ``consistency``, ``purity`` and their ``_m1``, ... variants (:func:`readout`),
        ``pos_purity``, ... (each unit by its modal region, :func:`place_alone`), for
        IVPT models ``final_purity``, ... (the final layer alone), ``max_share`` and
        ``bg_share``.
    units: per model its unit scores on the test split, [n_test, U, N] (what the
        metric reads: IVPT's foreground prototypes of every layer, VPT-Deep's prompts
        of the blocks that reach the CLS through patches, k-means' centres).
    maps: per IVPT model, its log concept maps on the test split, one [n_test, K + 1,
        N] per prototype layer (the last slot is the background).
    preds: per trained model, its predicted classes on the test split [n_test].
    models: the trained models; vit: the frozen backbone; pre_losses: pretraining's
        losses; cpu_s: CPU seconds per stage.
    """

    metrics: dict[str, dict[str, float]]
    units: dict[str, torch.Tensor]
    maps: dict[str, list[torch.Tensor]]
    preds: dict[str, torch.Tensor]
    models: dict[str, nn.Module]
    vit: TinyViT
    pre_losses: list[float]
    cpu_s: dict[str, float] = field(default_factory=dict)


def run(
    cfg,
    data: SimpleNamespace,
    seed: int,
    device="cpu",
    models: tuple[str, ...] = MODELS,
) -> Experiment:
    """Pretrain the backbone on ``data`` (:func:`make_data` at the same ``cfg``), tune
    each model of ``models`` (see :data:`MODELS`), and measure accuracy and part
    consistency; returns an :class:`Experiment`.

    Learning rates: ``cfg.lr_vpt`` for the probe and VPT-Deep, ``cfg.lr_ivpt`` for the
    IVPT models (each chosen on the validation split). Every model starts from the same
    draw (``seed + 1``) and trains on the same stream of mini-batches (its own
    generator, seeded alike), so no model's result depends on which models ran before
    it; the backbone's draws come from ``seed``, k-means' from ``seed + 2``. No global
    random state is read or changed. ``cfg.equivariance`` and ``cfg.standardise``
    (default true) switch IVPT's equivariance loss and its feature standardisation
    off, as ablations.

    Position controls: ``metrics["windows"]``, every fixed window of about ``cfg.m``
    patches (the 25 2 x 2 windows at ``ci``), which ignore the image; and for VPT-Deep
    and IVPT the keys ``pos_purity``, ``pos_consistency``, ... -- the same units, each
    with its modal region over the *training* images in every test image
    (:func:`position_only`), what their usual place alone explains.
    """
    unknown = sorted(set(models) - set(MODEL_NAMES))
    if unknown:
        raise ValueError(f"unknown models {unknown}; known: {list(MODEL_NAMES)}")
    t0 = time.process_time()
    with seeded(seed):  # the backbone's initial weights and its pretraining heads
        vit = TinyViT(cfg.size, cfg.patch, cfg.d, cfg.depth, cfg.heads).to(device)
        pre_losses = pretrain(
            vit,
            data.pre,
            data.pre2,
            cfg.pre_steps,
            cfg.pre_batch,
            generator=torch.Generator().manual_seed(seed),
        )
    cpu = {"pretrain": time.process_time() - t0}
    makers = dict(
        probe=lambda: LinearProbe(vit, cfg.n_classes),
        vpt=lambda: VPTDeep(vit, cfg.n_classes, cfg.n_prompts),
        ivpt=lambda: IVPT(vit, cfg.n_classes, cfg.n_pro),
        ivpt_last=lambda: IVPT(vit, cfg.n_classes, cfg.n_pro[-2:]),
        ivpt_ce=lambda: IVPT(vit, cfg.n_classes, cfg.n_pro),
    )
    metrics, units, maps, preds, built = {}, {}, {}, {}, {}
    for name in models:
        if name == "kmeans":
            continue
        w = {k: 0.0 for k in LOSS_WEIGHTS} if name == "ivpt_ce" else None
        if w is None and not getattr(cfg, "equivariance", True):  # an ablation
            w = {**LOSS_WEIGHTS, "equivariance": 0.0}
        lr = cfg.lr_vpt if name in ("probe", "vpt") else cfg.lr_ivpt
        with seeded(seed + 1):  # every model starts from the same draw
            model = makers[name]().to(device)
            train(
                model,
                data.xtr,
                data.ytr,
                cfg.steps,
                cfg.batch,
                lr,
                w,
                generator=torch.Generator().manual_seed(seed + 1),
                standardise=getattr(cfg, "standardise", True),
            )
        acc, outs = evaluate(model, data.xte, data.yte)
        r = dict(acc=acc, val_acc=evaluate(model, data.xval, data.yval)[0])
        preds[name] = torch.cat([o["logits"].argmax(-1) for o in outs]).cpu()
        if name != "probe":
            key = "vpt" if name == "vpt" else "ivpt"
            units[name] = unit_scores(key, outs).cpu()
            r.update(readout(units[name], data.parts.cpu(), cfg))
            if name in ("vpt", "ivpt"):  # the same units, their place alone
                _, outs_tr = evaluate(model, data.xtr, data.ytr)
                train_units = unit_scores(key, outs_tr).cpu()
                r.update(place_alone(train_units, data.parts.cpu(), cfg))
                del outs_tr, train_units
            if key == "ivpt":
                maps[name] = [
                    torch.cat([o["logmaps"][j] for o in outs], 0).cpu()
                    for j in range(len(outs[0]["logmaps"]))
                ]
                fin = maps[name][-1]  # the final layer's prototypes alone
                r.update(readout(fin[:, :-1], data.parts.cpu(), cfg, prefix="final_"))
                # collapse: one slot (the background, or one prototype) owns the
                # bird's patches in some layer; the background slot's share of every
                # patch is reported beside it
                r["max_share"] = largest_share(maps[name], data.parts.cpu().any(1))
                r["bg_share"] = (
                    (fin.argmax(1) == fin.shape[1] - 1).float().mean().item()
                )
        del outs
        metrics[name], built[name] = r, model
        cpu[name] = time.process_time() - t0 - sum(cpu.values())
    if "kmeans" in models:  # k-means on the frozen final features, no training
        with torch.no_grad():
            feats = torch.cat(
                [
                    vit(data.xtr[s : s + 256])[0][:, 1:]
                    for s in range(0, len(data.xtr), 256)
                ],
                0,
            )
            c = kmeans(
                feats.reshape(-1, cfg.d)[:20000],
                cfg.n_pro[-1],
                generator=torch.Generator().manual_seed(seed + 2),
            )
            te = torch.cat(
                [
                    vit(data.xte[s : s + 256])[0][:, 1:]
                    for s in range(0, len(data.xte), 256)
                ],
                0,
            )
            # the k-means "background" is not known: every cluster is scored
            units["kmeans"] = concept_maps(te, c).log().cpu()
        metrics["kmeans"] = readout(units["kmeans"], data.parts.cpu(), cfg)
    # units that ignore the image: every window of about m patches (2 x 2 for m = 4),
    # the same in every image
    side = math.ceil(math.sqrt(cfg.m))
    win = fixed_windows(cfg.size // cfg.patch, side)
    units["windows"] = win[None].expand(len(data.xte), -1, -1)
    metrics["windows"] = readout(units["windows"], data.parts.cpu(), cfg)
    return Experiment(
        metrics=metrics,
        units=units,
        maps=maps,
        preds=preds,
        models=built,
        vit=vit,
        pre_losses=pre_losses,
        cpu_s=cpu,
    )
