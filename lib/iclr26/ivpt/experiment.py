"""The chapter's experiment in one function, so the notebook and the calibration grid
run the same code: data, pretraining, tuning, and every model's interpretability."""

from __future__ import annotations

import math
import time
from types import SimpleNamespace

import numpy as np
import torch

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


def run(
    cfg,
    seed: int,
    device="cpu",
    models=("probe", "vpt", "ivpt", "ivpt_last", "ivpt_ce", "kmeans"),
    cache: dict | None = None,
) -> dict:
    """Pretrain, tune each model, measure accuracy and part consistency. Returns a dict
    name -> dict(acc, val_acc, consistency, purity, ...), plus the trained models under
    ``"_models"`` and the data under ``"_data"``.

    Learning rates: ``cfg.lr_vpt`` for the probe and VPT-Deep, ``cfg.lr_ivpt`` for the
    IVPT models (each chosen on the validation split, see ``calibration``). Every
    model starts from the same draw and trains on the same stream of mini-batches
    (its own generator, seeded alike), so no model's result depends on which models
    ran before it.

    Position controls: ``"windows"``, every fixed window of about ``cfg.m`` patches
    (the 25 2 x 2 windows at ``ci``), which ignore the image; and for VPT-Deep and
    IVPT the keys ``pos_purity``, ``pos_consistency``, ... -- the same units, each
    with its modal region over the *training* images in every test image
    (:func:`position_only`), what their usual place alone explains.
    ``cache``: a dict that keeps pretrained backbones across calls (keyed by the
    seed and the settings pretraining depends on), so calibration rows that change
    only the tuning stage share one backbone; the notebook passes none.
    """
    torch.manual_seed(seed)
    g = torch.Generator().manual_seed(seed)  # pretraining's batches and masks
    t0 = time.process_time()
    data = make_data(cfg, seed, device)
    vit = TinyViT(cfg.size, cfg.patch, cfg.d, cfg.depth, cfg.heads).to(device)
    key = (seed, cfg.size, cfg.jitter, cfg.n_pre, cfg.pre_steps, cfg.pre_batch)
    if cache is not None and key in cache:
        vit.load_state_dict(cache[key][0])
        vit.requires_grad_(False)
        pre_losses = cache[key][1]
    else:
        pre_losses = pretrain(
            vit, data.pre, data.pre2, cfg.pre_steps, cfg.pre_batch, generator=g
        )
        if cache is not None:
            cache[key] = (
                {k: v.clone() for k, v in vit.state_dict().items()},
                pre_losses,
            )
    res, built = {"_pre_losses": pre_losses}, {}
    cpu = {"pretrain": time.process_time() - t0}
    makers = dict(
        probe=lambda: LinearProbe(vit, cfg.n_classes),
        vpt=lambda: VPTDeep(vit, cfg.n_classes, cfg.n_prompts),
        ivpt=lambda: IVPT(vit, cfg.n_classes, cfg.n_pro),
        ivpt_last=lambda: IVPT(vit, cfg.n_classes, cfg.n_pro[-2:]),
        ivpt_ce=lambda: IVPT(vit, cfg.n_classes, cfg.n_pro),
    )
    for name in models:
        if name == "kmeans":
            continue
        torch.manual_seed(seed + 1)  # every model starts from the same draw
        model = makers[name]().to(device)
        w = {k: 0.0 for k in LOSS_WEIGHTS} if name == "ivpt_ce" else None
        if w is None and not getattr(cfg, "equivariance", True):  # an ablation
            w = {**LOSS_WEIGHTS, "equivariance": 0.0}
        lr = cfg.lr_vpt if name in ("probe", "vpt") else cfg.lr_ivpt
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
        if name != "probe":
            key = "vpt" if name == "vpt" else "ivpt"
            r.update(readout(unit_scores(key, outs), data.parts, cfg))
            if name in ("vpt", "ivpt"):  # the same units, their place alone
                _, outs_tr = evaluate(model, data.xtr, data.ytr)
                r.update(place_alone(unit_scores(key, outs_tr), data.parts, cfg))
                del outs_tr
            if key == "ivpt":  # the final layer's prototypes alone
                fin = torch.cat([o["logmaps"][-1] for o in outs], 0)
                r.update(readout(fin[:, :-1], data.parts, cfg, prefix="final_"))
                # collapse: one slot (the background, or one prototype) owns the
                # bird's patches in some layer; the background slot's share of every
                # patch is reported beside it
                layers = [
                    torch.cat([o["logmaps"][j] for o in outs], 0)
                    for j in range(len(outs[0]["logmaps"]))
                ]
                r["max_share"] = largest_share(layers, data.parts.any(1))
                r["bg_share"] = (
                    (fin.argmax(1) == fin.shape[1] - 1).float().mean().item()
                )
        res[name], built[name] = r, model
        cpu[name] = time.process_time() - t0 - sum(cpu.values())
        res["_outs_" + name] = outs
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
            A = concept_maps(te, c)
        # the k-means "background" is not known: every cluster is scored
        res["kmeans"] = readout(A.log(), data.parts, cfg)
    # units that ignore the image: every window of about m patches (2 x 2 for m = 4),
    # the same in every image
    side = math.ceil(math.sqrt(cfg.m))
    win = fixed_windows(cfg.size // cfg.patch, side).to(data.parts.device)
    res["windows"] = readout(win[None].expand(len(data.xte), -1, -1), data.parts, cfg)
    res["_models"], res["_data"], res["_vit"], res["_cpu"] = built, data, vit, cpu
    return res


CI = dict(
    size=24,
    patch=4,
    d=64,
    depth=4,
    heads=4,
    n_colours=4,
    n_classes=16,
    jitter=1.0,
    n_pre=3000,
    pre_steps=300,
    n_train=1600,
    n_val=400,
    n_test=500,
    batch=64,
    pre_batch=128,
    steps=200,
    lr_vpt=3e-2,
    lr_ivpt=1e-2,
    n_prompts=4,
    n_pro=(9, 7, 5),
    m=4,
    m_list=(1, 2),
    mu=0.8,
)
