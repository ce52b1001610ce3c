"""The toy world: a 2.5-D tabletop rendered twice, with exact flow, depth and camera.

A pinhole camera of focal length ``f`` pixels looks along +Z over a checkerboard ground
plane (height ``h`` below the camera) towards a textured back wall at depth ``z_wall``.
Two or three fronto-parallel billboards (coloured, striped) stand on the ground. Their
image height and size follow from their depth, so depth can be read off one image, as in
real scenes. Each sample is one of two events, 50/50:

* a camera move: the camera translates sideways by ``-t`` (so the scene moves by ``+t``)
  and every frame-0 pixel at depth ``Z`` moves by ``u = f t / Z`` pixels;
* an object move: the camera stays (``t = 0``) and one object slides sideways by ``d``
  pixels; flow is ``d`` on that object and 0 elsewhere.

Frames are rendered with 2 x 2 supersampling and a z-buffer. Shapes: ``rgb`` is
``(B, 3, H, H)`` in [0, 1]; per-pixel ``flow`` and ``depth`` are ``(B, H, H)``.
"""

from __future__ import annotations

import math

import torch

from .geometry import flow_from_depth

# Colours far from the ground's creams and browns and from the wall's grey-blue.
OBJECT_COLOURS = torch.tensor(
    [
        [0.90, 0.15, 0.15],
        [0.15, 0.70, 0.20],
        [0.20, 0.30, 0.95],
        [0.95, 0.85, 0.10],
        [0.85, 0.20, 0.85],
        [0.10, 0.85, 0.85],
    ]
)
# Camera translations are bin centres of the camera quantizer (see tokens.py):
# 0.3 to 0.6 world units either way, so every camera token is exact.
CAMERA_STEPS = (0.3, 0.4, 0.5, 0.6)
OBJECT_STEPS = (3.0, 4.0, 5.0, 6.0)  # object moves, pixels, either way


def scene_constants(H: int) -> dict:
    """The camera of an ``H x H`` frame: focal length, principal point, and the
    nominal horizon row, camera height above the ground and wall depth (each scene
    varies the last three by up to 25%, 30% and 25% times ``layout_jitter``)."""
    if not isinstance(H, int) or H < 8:
        raise ValueError(f"H must be an int >= 8, got {H!r}")
    return dict(f=float(H), cx=H / 2, y_h=0.32 * H, h=1.0, z_wall=8.0)


def _draw(
    B: int,
    n_obj: int,
    H: int,
    g: torch.Generator,
    checker: float,
    p_object: float,
    jitter: float,
    steps: tuple,
) -> dict:
    """Random scene parameters for ``B`` scenes."""
    c = scene_constants(H)
    u = lambda *s: torch.rand(*s, generator=g)
    sym = lambda: 2 * u(B) - 1
    y_h = c["y_h"] * (1 + 0.25 * jitter * sym())
    h = c["h"] * (1 + 0.3 * jitter * sym())
    z_wall = c["z_wall"] * (1 + 0.25 * jitter * sym())
    z = 2.0 + 4.0 * u(B, n_obj)  # object depths
    x_px = H * (0.2 + 0.6 * u(B, n_obj))  # image column of each centre
    X = (x_px - c["cx"]) * z / c["f"]
    width = 0.5 + 0.5 * u(B, n_obj)
    height = 0.5 + 0.4 * u(B, n_obj)
    colour = torch.stack([torch.randperm(6, generator=g)[:n_obj] for _ in range(B)])
    stripes = 0.15 + 0.15 * u(B, n_obj)  # stripe period on the object, world units
    is_obj = u(B) < p_object
    sign = torch.where(u(B) < 0.5, -1.0, 1.0)
    t = sign * torch.tensor(CAMERA_STEPS)[torch.randint(4, (B,), generator=g)]
    d = torch.tensor(steps)[torch.randint(len(steps), (B,), generator=g)]
    # the moved object is the nearest one; it moves towards the image centre side
    mover = z.argmin(1)
    xm = x_px.gather(1, mover[:, None])[:, 0]
    d = torch.where(xm > c["cx"], -d, d)
    ground = torch.stack(
        [0.75 + 0.15 * u(B), 0.65 + 0.15 * u(B), 0.45 + 0.1 * u(B)], 1
    )  # light squares; dark squares are 0.45 of it
    wall = torch.stack([0.45 + 0.1 * u(B), 0.5 + 0.1 * u(B), 0.65 + 0.1 * u(B)], 1)
    return dict(
        z=z,
        X=X,
        width=width,
        height=height,
        colour=OBJECT_COLOURS[colour],
        stripes=stripes,
        kind=is_obj.long(),
        t=torch.where(is_obj, 0.0, t),
        d=torch.where(is_obj, d, 0.0),
        mover=mover,
        ground=ground,
        wall=wall,
        checker=torch.full((B,), checker),
        wall_period=1.0 + 1.0 * u(B),
        y_h=y_h,
        h=h,
        z_wall=z_wall,
    )


def _render(s: dict, H: int, t: torch.Tensor, dX: torch.Tensor, ss: int = 2):
    """Render scenes ``s`` with the scene shifted by ``t`` (B,) and each object by
    ``dX`` (B, n_obj) world units. Returns colour (B, 3, H*ss, H*ss), depth and the
    object id (-1 for background) of every sample, at ``ss x ss`` samples per pixel."""
    c = scene_constants(H)
    B = t.shape[0]
    n = H * ss
    coord = (torch.arange(n, dtype=torch.float32) + 0.5) / ss
    y, x = coord[:, None].expand(n, n), coord[None, :].expand(n, n)
    y_h, h = s["y_h"][:, None, None], s["h"][:, None, None]
    z_wall = s["z_wall"][:, None, None]
    # background: ground below the horizon up to the wall, wall elsewhere
    dy = (y[None] - y_h).clamp_min(1e-6)
    z_g = c["f"] * h / dy  # a ground point at height h below the camera: Z = f h / dy
    on_ground = (y[None] > y_h) & (z_g < z_wall)
    Z = torch.where(on_ground, z_g, z_wall.expand_as(z_g))
    Xw = (x - c["cx"])[None] * Z / c["f"] - t[:, None, None]  # X = (x - cx) Z / f
    k = s["checker"][:, None, None]
    cell = (torch.floor(Xw / k) + torch.floor(Z / k)).remainder(2)
    g_col = s["ground"][:, :, None, None] * (1 - 0.55 * cell[:, None])
    wave = 0.12 * torch.sin(2 * math.pi * Xw / s["wall_period"][:, None, None])
    w_col = (s["wall"][:, :, None, None] + wave[:, None]).clamp(0, 1)
    col = torch.where(on_ground[:, None], g_col, w_col)
    oid = torch.full((B, n, n), -1, dtype=torch.long)
    for j in range(s["z"].shape[1]):  # a handful of objects: z-buffer them in turn
        zj = s["z"][:, j, None, None]
        Xc = s["X"][:, j, None, None] + t[:, None, None] + dX[:, j, None, None]
        Xp = (x - c["cx"])[None] * zj / c["f"]
        Yp = (y[None] - y_h) * zj / c["f"]  # Y points down; ground at Y = h
        half = s["width"][:, j, None, None] / 2
        top = h - s["height"][:, j, None, None]
        hit = ((Xp - Xc).abs() <= half) & (Yp >= top) & (Yp <= h) & (zj < Z)
        stripe = torch.cos(2 * math.pi * (Xp - Xc) / s["stripes"][:, j, None, None])
        o_col = s["colour"][:, j, :, None, None] * (0.85 + 0.15 * stripe[:, None])
        col = torch.where(hit[:, None], o_col, col)
        Z = torch.where(hit, zj.expand_as(Z), Z)
        oid = torch.where(hit, torch.full_like(oid, j), oid)
    return col, Z, oid


def _pool(a: torch.Tensor, ss: int) -> torch.Tensor:
    """Average ``ss x ss`` blocks of the last two dimensions."""
    *lead, n, _ = a.shape
    return a.reshape(*lead, n // ss, ss, n // ss, ss).mean((-3, -1))


def make_tabletop_batch(
    n: int,
    H: int = 16,
    seed: int = 0,
    n_obj: int = 3,
    checker: float = 0.5,
    p_object: float = 0.5,
    layout_jitter: float = 0.0,
    object_steps: tuple = OBJECT_STEPS,
) -> dict:
    """``n`` two-frame tabletop samples at ``H x H`` pixels.

    Returns a dict of tensors (``B = n``): ``rgb0``, ``rgb1`` (B, 3, H, H) in [0, 1];
    ``flow`` (B, H, H), the horizontal flow of each frame-0 pixel in pixels;
    ``depth`` (B, H, H), frame-0 depth as ``1 / mean(1 / Z)`` over the pixel's samples
    (the depth whose pinhole flow is the pixel's mean flow); ``cam`` (B,), the scene's
    shift ``t`` (0 for object moves); ``obj_mask0``, ``obj_mask1`` (B, H, H), the
    fraction of each pixel covered by the moved object in frames 0 and 1 (0 for
    camera moves); ``kind`` (B,), 0 camera move, 1 object move; ``obj_colour`` (B, 3),
    the moved object's base colour; ``shift`` (B,), the object's move in pixels.
    ``checker`` is the ground's square size (world units), ``n_obj`` the number of
    objects, ``p_object`` the share of object moves, ``layout_jitter`` how much the
    horizon, camera height and wall depth vary between scenes (0: one fixed layout),
    ``object_steps`` the object moves' sizes in pixels: the generator's settings.
    """
    for name, v, lo in (("n", n, 1), ("n_obj", n_obj, 1)):
        if not isinstance(v, int) or isinstance(v, bool) or v < lo:
            raise ValueError(f"{name} must be an int >= {lo}, got {v!r}")
    if not n_obj <= 6:
        raise ValueError(f"n_obj must be <= 6 (six object colours), got {n_obj}")
    if not (isinstance(checker, (int, float)) and checker > 0):
        raise ValueError(f"checker must be a positive number, got {checker!r}")
    if not 0.0 <= p_object <= 1.0:
        raise ValueError(f"p_object must be in [0, 1], got {p_object!r}")
    if not 0.0 <= layout_jitter <= 1.0:
        raise ValueError(f"layout_jitter must be in [0, 1], got {layout_jitter!r}")
    if not object_steps or any(not 0 < abs(d) <= 8 for d in object_steps):
        raise ValueError(f"object_steps must be moves in (0, 8] px, got {object_steps}")
    c = scene_constants(H)
    g = torch.Generator().manual_seed(int(seed))
    s = _draw(
        n,
        n_obj,
        H,
        g,
        float(checker),
        float(p_object),
        float(layout_jitter),
        tuple(float(d) for d in object_steps),
    )
    zero = torch.zeros(n)
    none = torch.zeros(n, n_obj)
    mover = torch.nn.functional.one_hot(s["mover"], n_obj).float()
    dX = (
        mover * (s["d"] * s["z"].gather(1, s["mover"][:, None])[:, 0] / c["f"])[:, None]
    )
    col0, Z0, oid0 = _render(s, H, zero, none)
    col1, _, oid1 = _render(s, H, s["t"], dX)
    on0 = (oid0 == s["mover"][:, None, None]) & (s["kind"][:, None, None] == 1)
    on1 = (oid1 == s["mover"][:, None, None]) & (s["kind"][:, None, None] == 1)
    # camera move: u = f t / Z everywhere; object move: u = d on the object only
    u = flow_from_depth(Z0, s["t"][:, None, None], c["f"])
    u = torch.where(on0, s["d"][:, None, None], u)
    return dict(
        rgb0=_pool(col0, 2),
        rgb1=_pool(col1, 2),
        flow=_pool(u, 2),
        depth=1.0 / _pool(1.0 / Z0, 2),
        cam=s["t"],
        obj_mask0=_pool(on0.float(), 2),
        obj_mask1=_pool(on1.float(), 2),
        kind=s["kind"],
        obj_colour=s["colour"][torch.arange(n), s["mover"]],
        shift=s["d"],
    )
