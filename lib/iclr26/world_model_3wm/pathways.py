"""Tasks as inference pathways through one trained model, and their baselines.

* novel-view synthesis ``Psi(RGB0, F) -> RGB1`` (or from the camera alone, or the chain
  ``Psi(RGB0, cam) -> F -> RGB1``);
* depth ``Psi(RGB0, cam) -> F``, then ``Z = f |t| / |u|`` (and the "through RGB" route:
  ``Psi(RGB0, cam) -> RGB1``, then classical flow between the frames);
* object manipulation ``Psi(RGB0, sparse F) -> RGB1``: flow on the object's patches,
  zero flow on a share of the background, the rest left out.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import torch

from ..core import seeded
from .geometry import (
    block_matching_flow,
    depth_from_flow,
    patch_mean,
)
from .model import PointerContentGPT, train_steps
from .tokens import (
    Bins,
    CameraQuantizer,
    FlowQuantizer,
    Layout,
    PatchQuantizer,
    tokenize,
    value_features,
)
from .world import make_tabletop_batch, scene_constants


@dataclass
class WorldModel:
    """A trained model with its tokenizers: everything a pathway needs."""

    model: PointerContentGPT
    pq: PatchQuantizer
    fq: Bins
    cq: Bins
    layout: Layout
    H: int
    losses: list

    @property
    def P(self) -> int:
        return self.pq.P

    @property
    def f(self) -> float:
        return scene_constants(self.H)["f"]

    def tokens(self, batch: dict) -> torch.Tensor:
        """(B, n_nodes) values of a batch."""
        return tokenize(batch, self.pq, self.fq, self.cq, self.layout)

    def _run(self, batch: dict, given: list, query: torch.Tensor, values=None):
        v = self.tokens(batch) if values is None else values
        B = v.shape[0]
        cond = torch.zeros(B, self.layout.n_nodes, dtype=torch.bool)
        for g in given:
            if isinstance(g, torch.Tensor) and g.dtype == torch.bool:
                cond |= g
            else:
                cond[:, g] = True
        dev = next(self.model.parameters()).device
        out = self.model.generate(v.to(dev), cond.to(dev), query.to(dev))
        return out.cpu()

    def decode_rgb1(self, values: torch.Tensor) -> torch.Tensor:
        return self.pq.decode(values[:, self.layout.rgb1()], self.H)

    def decode_flow(self, values: torch.Tensor) -> torch.Tensor:
        """(B, N) per-patch flow in pixels."""
        return self.fq.decode(values[:, self.layout.flow()] - self.layout.K)


def fit_world_model(
    train_batch: dict,
    n_codes: int = 256,
    P: int = 4,
    d: int = 96,
    L: int = 3,
    steps: int = 800,
    batch: int = 32,
    lr: float = 2e-3,
    seed: int = 0,
    order: str = "random",
    features: bool = True,
    device: torch.device | str = "cpu",
    callback=None,
    flow_bins: int = 33,
    flow_lim: float = 8.0,
) -> WorldModel:
    """Fit the patch quantizer on both frames of ``train_batch``, tokenize, and train
    the pointer-content GPT in random (or raster) orders. Flow tokens are
    ``flow_bins`` bins over ``[-flow_lim, flow_lim]`` px: camera flows grow with the
    frame size (``f = H``), so a larger frame needs a larger ``flow_lim``."""
    wm, steps_left = world_model_steps(
        train_batch, n_codes, P, d, L, steps, batch, lr, seed, order, features,
        device, flow_bins, flow_lim,
    )  # fmt: skip
    for step, _ in enumerate(steps_left):
        if callback is not None:
            callback(step)
    return wm


def world_model_steps(
    train_batch: dict,
    n_codes: int = 256,
    P: int = 4,
    d: int = 96,
    L: int = 3,
    steps: int = 800,
    batch: int = 32,
    lr: float = 2e-3,
    seed: int = 0,
    order: str = "random",
    features: bool = True,
    device: torch.device | str = "cpu",
    flow_bins: int = 33,
    flow_lim: float = 8.0,
) -> tuple[WorldModel, Iterator[float]]:
    """:func:`fit_world_model` in steps: the world model with its quantizer fitted and
    its GPT initialised (from ``seed`` alone), and an iterator whose every ``next()``
    takes one training step and yields its loss (also appended to ``wm.losses``);
    the model is put in eval mode after the last step. A notebook can so spread a
    long training over several cells."""
    H = train_batch["rgb0"].shape[-1]
    pq = PatchQuantizer(n_codes, P, seed).fit(
        torch.cat([train_batch["rgb0"], train_batch["rgb1"]])
    )
    fq, cq = FlowQuantizer(flow_bins, flow_lim), CameraQuantizer()
    layout = Layout((H // P) ** 2, n_codes, fq.n, cq.n)
    tokens = tokenize(train_batch, pq, fq, cq, layout)
    feats = value_features(pq, fq, cq) if features else None
    with seeded(seed):  # the initial weights, from the seed alone
        model = PointerContentGPT(layout, d, L, value_features=feats).to(device)
    wm = WorldModel(model, pq, fq, cq, layout, H, [])
    losses = train_steps(model, tokens, steps, batch, lr, seed, order)

    def run() -> Iterator[float]:
        for loss in losses:
            wm.losses.append(loss)
            yield loss
        model.eval()

    return wm, run()


def pathway_nvs(wm: WorldModel, batch: dict, via: str = "flow") -> torch.Tensor:
    """Generate RGB1 (B, 3, H, H) from RGB0 and: ``"flow"`` the true flow tokens;
    ``"cam"`` the camera token alone; ``"chain"`` the camera, through generated flow
    first; ``"flow_other"`` another scene's flow (the batch rolled by one)."""
    lay = wm.layout
    if via == "flow":
        out = wm._run(batch, [lay.rgb0(), lay.flow()], lay.rgb1())
    elif via == "cam":
        out = wm._run(batch, [lay.rgb0(), lay.cam()], lay.rgb1())
    elif via == "chain":
        mid = wm._run(batch, [lay.rgb0(), lay.cam()], lay.flow())
        out = wm._run(batch, [lay.rgb0(), lay.cam(), lay.flow()], lay.rgb1(), mid)
    elif via == "flow_other":
        v = wm.tokens(batch)
        v[:, lay.flow()] = v[:, lay.flow()].roll(1, 0)
        out = wm._run(batch, [lay.rgb0(), lay.flow()], lay.rgb1(), v)
    else:
        raise ValueError(f"via must be flow, cam, chain or flow_other, got {via!r}")
    return wm.decode_rgb1(out)


def pathway_depth(wm: WorldModel, batch: dict, image: str = "own") -> torch.Tensor:
    """Per-patch depth (B, N) from RGB0 and the camera: generate the flow tokens,
    then ``Z = f |t| / |u|`` (``|u|`` clamped at half a flow bin).

    ``image`` says which RGB0 the model is given: ``"own"`` the scene's (the claim);
    ``"none"`` no RGB0 at all, the camera only (the control that removes the image);
    ``"other"`` another scene's RGB0 (the batch rolled by one) with this camera."""
    lay = wm.layout
    if image == "own":
        out = wm._run(batch, [lay.rgb0(), lay.cam()], lay.flow())
    elif image == "none":
        out = wm._run(batch, [lay.cam()], lay.flow())
    elif image == "other":
        v = wm.tokens(batch)
        v[:, lay.rgb0()] = v[:, lay.rgb0()].roll(1, 0)
        out = wm._run(batch, [lay.rgb0(), lay.cam()], lay.flow(), v)
    else:
        raise ValueError(f"image must be own, none or other, got {image!r}")
    u = wm.decode_flow(out)
    return depth_from_flow(u, batch["cam"][:, None], wm.f, wm.fq.step / 2)


def depth_from_prior_flow(
    wm: WorldModel, batch: dict, prior: torch.Tensor
) -> torch.Tensor:
    """The no-model rule: the layout prior's depth ``prior`` (N,) turned into the
    camera's flow ``u = f t / Z``, put through the model's flow bins, and back to
    depth. It sees the camera and the training set's layout, never the image. (B, N)."""
    u = wm.f * batch["cam"][:, None] / prior[None]
    u = wm.fq.decode(wm.fq.encode(u))
    return depth_from_flow(u, batch["cam"][:, None], wm.f, wm.fq.step / 2)


def depth_from_true_flow_tokens(wm: WorldModel, batch: dict) -> torch.Tensor:
    """The flow bins' floor: the *true* per-patch flow, quantized to the model's flow
    tokens and back, then ``Z = f |t| / |u|`` (an oracle, for scale only). (B, N)."""
    u = wm.fq.decode(wm.fq.encode(patch_mean(batch["flow"], wm.P)))
    return depth_from_flow(u, batch["cam"][:, None], wm.f, wm.fq.step / 2)


def pathway_depth_via_rgb(wm: WorldModel, batch: dict, rgb1=None) -> torch.Tensor:
    """Depth through generated RGB: ``Psi(RGB0, cam) -> RGB1``, then classical block
    matching flow from RGB0 to it, then ``Z = f |t| / |u|``. Pass ``rgb1`` to use given
    frames instead (e.g. the true ones, to test the estimator). (B, N)."""
    if rgb1 is None:
        rgb1 = pathway_nvs(wm, batch, "cam")
    u = block_matching_flow(batch["rgb0"], rgb1, wm.P, lim=wm.fq.lim)
    return depth_from_flow(u, batch["cam"][:, None], wm.f, wm.fq.step / 2)


def manipulation_condition(
    wm: WorldModel, batch: dict, frac_bg: float = 0.25, seed: int = 0
) -> torch.Tensor:
    """(B, n_nodes) bool: RGB0, the camera (held still), the flow of every patch the
    object touches, and zero flow on ``frac_bg`` of the other patches (at random)."""
    lay = wm.layout
    B = batch["rgb0"].shape[0]
    g = torch.Generator().manual_seed(seed)
    obj = patch_mean(batch["obj_mask0"], wm.P) > 0
    bg = (~obj) & (torch.rand(obj.shape, generator=g) < frac_bg)
    cond = torch.zeros(B, lay.n_nodes, dtype=torch.bool)
    cond[:, lay.rgb0()] = True
    cond[:, lay.cam()] = True
    cond[:, lay.flow()] = obj | bg
    return cond


def pathway_manipulate(
    wm: WorldModel, batch: dict, frac_bg: float = 0.25, seed: int = 0, flow: bool = True
) -> torch.Tensor:
    """Move the object by the batch's flow, given only sparsely (see
    :func:`manipulation_condition`); ``flow=False`` drops every flow token (the
    control). Background patches given zero flow get the zero-flow token. Returns RGB1
    (B, 3, H, H)."""
    lay = wm.layout
    cond = manipulation_condition(wm, batch, frac_bg, seed)
    v = wm.tokens(batch)
    if not flow:
        cond[:, lay.flow()] = False
    out = wm._run(batch, [cond], lay.rgb1(), v)
    return wm.decode_rgb1(out)


def colour_centroid(rgb: torch.Tensor, colour: torch.Tensor, tol: float = 0.25):
    """Centroid (B, 2) as (row, column) in pixels of the pixels of ``rgb`` (B, 3, H, W)
    within ``tol`` (Euclidean, RGB) of ``colour`` (B, 3); NaN where none is."""
    near = (rgb - colour[:, :, None, None]).norm(dim=1) < tol
    H, W = near.shape[1:]
    ys, xs = torch.meshgrid(
        torch.arange(H, dtype=torch.float32) + 0.5,
        torch.arange(W, dtype=torch.float32) + 0.5,
        indexing="ij",
    )
    w = near.float()
    n = w.sum((1, 2))
    c = torch.stack([(w * ys).sum((1, 2)), (w * xs).sum((1, 2))], 1) / n[:, None]
    return torch.where(n[:, None] > 0, c, torch.full_like(c, float("nan")))


def manipulation_hits(
    gen: torch.Tensor, batch: dict, tol_colour: float = 0.25
) -> torch.Tensor:
    """(B,) bool: the object's colour centroid in ``gen`` lands within
    ``min(4, |d| / 2)`` px of where the object truly is in frame 1 (so staying put
    never counts as a hit)."""
    target = colour_centroid(batch["rgb1"], batch["obj_colour"], tol_colour)
    got = colour_centroid(gen, batch["obj_colour"], tol_colour)
    dist = (got - target).norm(dim=1)
    tol = (batch["shift"].abs() / 2).clamp(max=4.0)
    return torch.nan_to_num(dist, nan=float("inf")) <= tol


def layout_prior(train_batch: dict, P: int) -> torch.Tensor:
    """The ground-plane (layout) prior: each patch's median training depth, (N,)."""
    cam = train_batch["kind"] == 0
    return patch_depth(train_batch["depth"][cam], P).median(0).values


def patch_depth(depth: torch.Tensor, P: int) -> torch.Tensor:
    """Per-patch depth ``1 / mean(1 / Z)`` (the depth of the patch's mean flow)."""
    return 1.0 / patch_mean(1.0 / depth, P)


__all__ = [
    "WorldModel",
    "colour_centroid",
    "depth_from_prior_flow",
    "depth_from_true_flow_tokens",
    "fit_world_model",
    "world_model_steps",
    "layout_prior",
    "load_stereo_motorcycle",
    "make_tabletop_batch",
    "manipulation_condition",
    "manipulation_hits",
    "patch_depth",
    "pathway_depth",
    "pathway_depth_via_rgb",
    "pathway_manipulate",
    "pathway_nvs",
]


def load_stereo_motorcycle(downscale: int = 2) -> dict:
    """scikit-image's bundled Middlebury 2014 "motorcycle" pair
    (``skimage.data.stereo_motorcycle``: the files ship in its wheel, no download), as
    tensors, block-averaged by ``downscale``: ``left``, ``right`` (3, H, W) in [0, 1],
    ``disp`` (H, W) left-view disparity in pixels (NaN unknown; a block with any
    unknown pixel is unknown), and the calibration ``f``, ``baseline`` (mm),
    ``doffs`` from scikit-image's docstring, scaled to the downscaled images."""
    from skimage.data import stereo_motorcycle  # the chapter's only use of it

    if not isinstance(downscale, int) or downscale < 1:
        raise ValueError(f"downscale must be an int >= 1, got {downscale!r}")
    left, right, disp = stereo_motorcycle()
    s = downscale
    H, W = (left.shape[0] // s) * s, (left.shape[1] // s) * s

    def pool(a: torch.Tensor) -> torch.Tensor:
        a = a[..., :H, :W]
        return a.reshape(*a.shape[:-2], H // s, s, W // s, s).mean((-3, -1))

    lt = torch.tensor(left, dtype=torch.float32).permute(2, 0, 1) / 255
    rt = torch.tensor(right, dtype=torch.float32).permute(2, 0, 1) / 255
    dt = torch.tensor(disp, dtype=torch.float32)
    dt = torch.where(torch.isfinite(dt), dt, torch.full_like(dt, float("nan")))
    return dict(
        left=pool(lt),
        right=pool(rt),
        disp=pool(dt) / s,  # a NaN anywhere in a block makes the block NaN
        f=994.978 / s,
        baseline=193.001,
        doffs=31.086 / s,
    )
