"""The analogue's task (visual arithmetic on sklearn digits), the tiny two-modality
policy, its training stages and the chapter's pipeline of arms."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from ..core import seeded
from ..grpo import grpo_advantages, grpo_loss
from ..validate import as_int, check_positive
from .grpo import (
    TauSchedule,
    pad_select,
    zero_advantage_fraction,
    zero_advantage_theory,
)


# ---------------------------------------------------------------------- task, policy
class VisualArithmetic:
    """Questions "a + b = ?" with a, b in 0..n_digits-1, as text tokens or as two 8x8
    digit images (sklearn's ``load_digits``, pixels / 16, plus Gaussian noise of std
    ``noise``).

    The images are split once (by image, stratified by nothing) into train / val / test
    pools of 60 / 20 / 20 %, so test questions use images no stage ever trained on. The
    split depends on ``seed`` only: keep it fixed (the chapter uses 0) and vary the
    policy's seed in :func:`run_pipeline`, so that tuning on ``val`` never sees a test
    image.
    """

    def __init__(self, n_digits: int = 10, noise: float = 0.0, seed: int = 0):
        from sklearn.datasets import load_digits

        if (
            isinstance(n_digits, bool)
            or not isinstance(n_digits, int)
            or not 2 <= n_digits <= 10
        ):
            raise ValueError(f"n_digits must be an int in 2..10, got {n_digits!r}")
        if not (isinstance(noise, (int, float)) and noise >= 0):
            raise ValueError(f"noise must be a float >= 0, got {noise!r}")
        self.n_digits, self.noise = n_digits, float(noise)
        self.n_answers = 2 * n_digits - 1
        x, y = load_digits(return_X_y=True)
        keep = y < n_digits
        x = torch.tensor(x[keep] / 16.0, dtype=torch.float32)
        y = torch.tensor(y[keep], dtype=torch.long)
        order = torch.randperm(len(y), generator=torch.Generator().manual_seed(seed))
        cut = [int(0.6 * len(y)), int(0.8 * len(y))]
        parts = dict(
            train=order[: cut[0]], val=order[cut[0] : cut[1]], test=order[cut[1] :]
        )
        # per split, a (K, max count) table of image indices per digit, and the counts,
        # so drawing images for a batch is one vectorised gather
        self.pools, self.counts = {}, {}
        for s, idx in parts.items():
            per = [idx[y[idx] == d] for d in range(n_digits)]
            table = torch.zeros(n_digits, max(len(p) for p in per), dtype=torch.long)
            for d, p in enumerate(per):
                table[d, : len(p)] = p
            self.pools[s] = table
            self.counts[s] = torch.tensor([len(p) for p in per])
        self.images, self.labels = x, y

    def digit_images(
        self, digits: torch.Tensor, split: str, generator: torch.Generator
    ) -> torch.Tensor:
        """(n, 64) images of the given digits from ``split``'s pool, noise added."""
        if split not in self.pools:
            raise ValueError(f"split must be one of {list(self.pools)}, got {split!r}")
        u = torch.rand(len(digits), generator=generator)
        pick = (u * self.counts[split][digits]).long()
        out = self.images[self.pools[split][digits, pick]]
        if self.noise:
            out = out + self.noise * torch.randn(out.shape, generator=generator)
        return out

    def sample(self, n: int, split: str, generator: torch.Generator) -> dict:
        """n random questions: dict(a, b, y=a+b, img_a, img_b)."""
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"n must be a positive int, got {n!r}")
        a = torch.randint(self.n_digits, (n,), generator=generator)
        b = torch.randint(self.n_digits, (n,), generator=generator)
        return dict(
            a=a,
            b=b,
            y=a + b,
            img_a=self.digit_images(a, split, generator),
            img_b=self.digit_images(b, split, generator),
        )


class TinyMLLMPolicy(nn.Module):
    """A two-modality policy over the 2K-1 possible sums.

    text: a shared token embedding (K, d); vision: an MLP encoder 64 -> hidden -> d (the
    "vision tower"); both feed one reasoning trunk MLP on the concatenated pair (2d).
    """

    def __init__(self, n_digits: int = 10, d: int = 16, hidden: int = 128):
        super().__init__()
        self.n_digits = n_digits
        self.embed = nn.Embedding(n_digits, d)
        self.vision = nn.Sequential(
            nn.Linear(64, hidden), nn.ReLU(), nn.Linear(hidden, d)
        )
        self.trunk = nn.Sequential(
            nn.Linear(2 * d, hidden),
            nn.ReLU(),
            nn.Linear(hidden, hidden),
            nn.ReLU(),
            nn.Linear(hidden, 2 * n_digits - 1),
        )

    def forward(self, batch: dict, mode: str) -> torch.Tensor:
        """Logits (n, 2K-1) for a batch from :meth:`VisualArithmetic.sample`."""
        if mode == "text":
            ea, eb = self.embed(batch["a"]), self.embed(batch["b"])
        elif mode == "image":
            ea, eb = self.vision(batch["img_a"]), self.vision(batch["img_b"])
        else:
            raise ValueError(f"mode must be 'text' or 'image', got {mode!r}")
        return self.trunk(torch.cat([ea, eb], dim=1))


def _to(batch: dict, device) -> dict:
    return {k: v.to(device) for k, v in batch.items()}


def _check_pair(policy, task) -> None:
    if not isinstance(policy, TinyMLLMPolicy):
        raise TypeError(f"policy must be a TinyMLLMPolicy, got {type(policy).__name__}")
    if not isinstance(task, VisualArithmetic):
        raise TypeError(f"task must be a VisualArithmetic, got {type(task).__name__}")
    if policy.n_digits != task.n_digits:
        raise ValueError(
            f"the policy answers sums of {policy.n_digits} digits but the "
            f"task has n_digits={task.n_digits}: build "
            f"TinyMLLMPolicy({task.n_digits}, ...)"
        )


def _check_steps(steps, name="steps") -> None:
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
        raise ValueError(f"{name} must be an int >= 0, got {steps!r}")


PAD_KEYS = ("t_low", "t_high", "tau", "rho", "mode", "alpha")


def align_vision(
    policy: TinyMLLMPolicy,
    task: VisualArithmetic,
    steps: int,
    lr: float = 3e-3,
    batch: int = 128,
    generator: torch.Generator | None = None,
) -> list[float]:
    """ "Pre-training": fit the vision tower to the (frozen) text embedding
     of each digit
    (an MSE caption loss on train images). Returns the loss per step."""
    _check_pair(policy, task)
    _check_steps(steps)
    lr = check_positive("lr", lr)
    dev = next(policy.parameters()).device
    opt = torch.optim.Adam(policy.vision.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        d = torch.randint(task.n_digits, (batch,), generator=generator)
        x = task.digit_images(d, "train", generator).to(dev)
        loss = (policy.vision(x) - policy.embed(d.to(dev)).detach()).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def cold_start_sft(
    policy: TinyMLLMPolicy,
    task: VisualArithmetic,
    steps: int,
    lr: float = 3e-3,
    batch: int = 128,
    generator: torch.Generator | None = None,
) -> list[float]:
    """Text-only cold start: cross-entropy on text questions, training the trunk only
    (the token embedding and the vision tower stay as pre-trained). Returns the loss per
    step."""
    _check_pair(policy, task)
    _check_steps(steps)
    lr = check_positive("lr", lr)
    dev = next(policy.parameters()).device
    opt = torch.optim.Adam(policy.trunk.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        q = _to(task.sample(batch, "train", generator), dev)
        loss = nn.functional.cross_entropy(policy(q, "text"), q["y"])
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


@torch.no_grad()
def accuracy(
    policy: TinyMLLMPolicy,
    task: VisualArithmetic,
    mode: str,
    split: str,
    n: int,
    generator: torch.Generator,
) -> float:
    """Greedy (argmax) accuracy on n fresh questions from ``split``."""
    _check_pair(policy, task)
    q = _to(task.sample(n, split, generator), next(policy.parameters()).device)
    return (policy(q, mode).argmax(1) == q["y"]).float().mean().item()


@torch.no_grad()
def answer_spread(
    policy: TinyMLLMPolicy,
    task: VisualArithmetic,
    mode: str,
    split: str,
    n: int,
    generator: torch.Generator,
) -> tuple[int, float]:
    """(number of distinct greedy answers, mean entropy in nats) on n fresh questions:
    a collapsed policy gives one answer to every question, with entropy near 0."""
    _check_pair(policy, task)
    q = _to(task.sample(n, split, generator), next(policy.parameters()).device)
    logp = torch.log_softmax(policy(q, mode), 1)
    ent = -(logp.exp() * logp).sum(1).mean().item()
    return int(logp.argmax(1).unique().numel()), ent


@dataclass
class RLHistory:
    """Per-step records of :func:`rl_stage` (lists of floats, one entry per step)."""

    reward: list = field(default_factory=list)
    zero_frac: list = field(default_factory=list)
    zero_theory: list = field(default_factory=list)
    n_update: list = field(default_factory=list)
    informative_frac: list = field(default_factory=list)


def rl_stage(
    policy: TinyMLLMPolicy,
    task: VisualArithmetic,
    mode: str,
    steps: int,
    lr: float = 3e-3,
    prompts: int = 32,
    group: int = 8,
    variant: str = "grpo",
    pad: dict | None = None,
    tau: TauSchedule | None = None,
    kl_coef: float = 0.0,
    generator: torch.Generator | None = None,
) -> RLHistory:
    """One RL stage on ``mode`` ("image": multimodal RL, "text": text RL) questions.

    Each step draws ``prompts`` train questions, samples ``group`` answers each from the
    policy, rewards 1 for the right sum, computes GRPO advantages and takes one Adam
    step on the surrogate over: all samples (``variant="grpo"``), the samples with
    A != 0 (``"filter"``), or PAD's selection (``"pad"``, :func:`pad_select` with
    ``pad`` kwargs and ``tau``'s temperature). All parameters train.
    ``kl_coef`` > 0 adds the k3 KL to a frozen copy of the policy as it is when the
    stage starts (verl's reference policy: the checkpoint the RL run loads).
    """
    if variant not in ("grpo", "filter", "pad"):
        raise ValueError(f"variant must be 'grpo', 'filter' or 'pad', got {variant!r}")
    _check_pair(policy, task)
    _check_steps(steps)
    if isinstance(group, bool) or not isinstance(group, int) or group < 2:
        raise ValueError(f"group must be an int >= 2, got {group!r}")
    lr = check_positive("lr", lr)
    if pad is not None and not isinstance(pad, dict):
        raise TypeError(f"pad must be a dict of pad_select options, got {pad!r}")
    unknown = sorted(set(pad or {}) - set(PAD_KEYS))
    if unknown:
        raise ValueError(f"pad has unknown option(s) {unknown}; known: {PAD_KEYS}")
    dev = next(policy.parameters()).device
    opt = torch.optim.Adam(policy.parameters(), lr=lr)
    ref = copy.deepcopy(policy).requires_grad_(False) if kl_coef else None
    pad = dict(pad or {})
    h = RLHistory()
    for step in range(steps):
        q = _to(task.sample(prompts, "train", generator), dev)
        logits = policy(q, mode)
        probs = torch.softmax(logits.detach(), 1)
        ans = torch.multinomial(
            probs.cpu(), group, replacement=True, generator=generator
        ).to(dev)  # (P, G)
        reward = (ans == q["y"][:, None]).float()
        adv = grpo_advantages(reward)
        p_ok = probs.gather(1, q["y"][:, None]).squeeze(1)
        h.reward.append(reward.mean().item())
        h.zero_frac.append(zero_advantage_fraction(reward))
        h.zero_theory.append(zero_advantage_theory(p_ok, group).mean().item())
        logp = torch.log_softmax(logits, 1).gather(1, ans).flatten()
        a = adv.flatten()
        if variant == "filter":
            idx = torch.nonzero(a != 0).flatten()
        elif variant == "pad":
            if tau is not None:
                pad["tau"] = tau(step)
            idx = pad_select(a, generator=generator, **pad)
        else:
            idx = torch.arange(a.numel(), device=dev)
        h.n_update.append(int(idx.numel()))
        lo = pad.get("t_low", 0.0) if variant == "pad" else 0.0
        h.informative_frac.append(
            float((a[idx].abs() >= max(lo, 1e-12)).float().mean())
            if idx.numel()
            else float("nan")
        )
        if idx.numel() == 0:
            continue  # nothing informative: no step (GRPO's stagnation made explicit)
        ref_logp = None
        if ref is not None:
            with torch.no_grad():
                ref_logp = torch.log_softmax(ref(q, mode), 1).gather(1, ans).flatten()
            ref_logp = ref_logp[idx]
        loss = grpo_loss(logp[idx], a[idx], kl_coef=kl_coef, ref_logp=ref_logp)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return h


# ---------------------------------------------------------------------- the pipeline
# The random streams of one policy seed: every draw of run_pipeline comes from one of
# them, and each (policy seed, stream) pair has its own generator (stream_seed), so two
# policy seeds never share a draw, whatever their difference.
INIT_STREAM, TRAIN_STREAM, EVAL_STREAM, PROBE_STREAM, ARM_STREAM0 = 0, 1, 2, 3, 10


def stream_seed(seed: int, k: int) -> int:
    """The seed of random stream ``k`` of policy seed ``seed``: a 63-bit hash of the
    pair (NumPy's SeedSequence), so that distinct pairs give unrelated generators."""
    seed, k = as_int(seed, "seed", lo=0), as_int(k, "k", lo=0)
    state = np.random.SeedSequence([seed, k]).generate_state(2, np.uint32)
    return int((int(state[0]) << 31) ^ int(state[1]))


def stream(seed: int, k: int) -> torch.Generator:
    """A CPU generator for random stream ``k`` of policy seed ``seed``
    (:func:`stream_seed`)."""
    return torch.Generator().manual_seed(stream_seed(seed, k))


ARMS = ("staged", "mrl_only", "mrl_long", "cs_mrl", "pad", "pad_code")
KL_COEF = 1e-2  # the official repository's examples/config.yaml (paper Table 5: 2e-3)
PAD_PAPER = dict(mode="paper", t_low=0.05, t_high=float("inf"), rho=0.5)
PAD_CODE = dict(mode="code", t_low=0.03, t_high=0.97, rho=1.5, alpha=1.5)


def run_pipeline(
    task: VisualArithmetic,
    seed: int,
    lr: dict,
    *,
    d: int = 16,
    hidden: int = 128,
    align_steps: int = 40,
    cs_steps: int = 300,
    mrl_steps: int = 150,
    trl_steps: int = 50,
    prompts: int = 32,
    group: int = 8,
    n_eval: int = 2000,
    split: str = "test",
    arms=ARMS,
    kl_coef: float = KL_COEF,
    no_align: bool = False,
    device=None,
) -> dict:
    """Every arm of the chapter from one aligned "pre-trained" policy (seed ``seed``).

    staged   : cold start -> MRL (GRPO, mrl_steps) -> TRL (GRPO on text, trl_steps)
    mrl_only : MRL (GRPO) for mrl_steps + trl_steps, no cold start, no TRL
    mrl_long : MRL alone for cs_steps + mrl_steps + trl_steps (the staged pipeline's
               whole update budget after alignment)
    cs_mrl   : cold start -> MRL for mrl_steps + trl_steps (TRL's control: equal steps)
    pad      : as staged, MRL with PAD (paper rule, :data:`PAD_PAPER`, tau 1.0 -> 0.3)
    pad_code : as staged, MRL with the official code's variant (:data:`PAD_CODE`)
    ``lr``: the Adam learning rate of each arm's RL stages (dict arm -> float).
    Every RL stage has the k3 KL (``kl_coef``) to the policy at the stage's start.
    ``no_align``: also report "noalign_base_img" / "noalign_cs_img", the same policy
    seed with the alignment removed (align_steps = 0), before and after the cold start.
    Accuracies are greedy, on the same ``n_eval`` questions of ``split`` for every arm
    ("val" for tuning, "test" else). Every draw comes from one of the policy seed's own
    streams (:func:`stream`): the initial weights, the alignment and cold-start
    questions, the evaluation questions, and one stream per arm's RL stages.
    Returns a dict of accuracies ("<arm>_img", "<arm>_txt", "base_img", "cs_img", ...),
    each arm's "<arm>_distinct" / "<arm>_entropy" (:func:`answer_spread` on image
    questions) and the RL histories under "hist".
    """
    bad = set(arms) - set(ARMS)
    if bad:
        raise ValueError(f"unknown arms {sorted(bad)}; choose from {ARMS}")
    missing = [a for a in arms if a not in lr]
    if missing:
        raise ValueError(f"lr needs a learning rate for arms {missing}")
    for name, v in (
        ("cs_steps", cs_steps),
        ("mrl_steps", mrl_steps),
        ("trl_steps", trl_steps),
        ("align_steps", align_steps),
    ):
        _check_steps(v, name)

    def ev(p, mode):
        return accuracy(p, task, mode, split, n_eval, stream(seed, EVAL_STREAM))

    out, hist = {}, {}
    init = stream_seed(seed, INIT_STREAM)  # the same initial weights for both policies
    if no_align:
        with seeded(init):
            p0 = TinyMLLMPolicy(task.n_digits, d, hidden).to(device or "cpu")
        out["noalign_base_img"] = ev(p0, "image")
        cold_start_sft(p0, task, cs_steps, generator=stream(seed, TRAIN_STREAM))
        out["noalign_cs_img"] = ev(p0, "image")
    with seeded(init):
        pol = TinyMLLMPolicy(task.n_digits, d, hidden).to(device or "cpu")
    g = stream(seed, TRAIN_STREAM)
    align_vision(pol, task, align_steps, generator=g)
    out.update(base_img=ev(pol, "image"), base_txt=ev(pol, "text"))
    base = copy.deepcopy(pol)
    cs_steps_log = cold_start_sft(pol, task, cs_steps, generator=g)
    out.update(
        cs_img=ev(pol, "image"), cs_txt=ev(pol, "text"), cs_loss=cs_steps_log[-1]
    )
    cs = copy.deepcopy(pol)
    total = mrl_steps + trl_steps
    tau = TauSchedule(1.0, 0.3, mrl_steps)
    for arm in arms:
        gen = stream(seed, ARM_STREAM0 + ARMS.index(arm))
        p = copy.deepcopy(base if arm in ("mrl_only", "mrl_long") else cs)
        kw = dict(
            lr=lr[arm], prompts=prompts, group=group, kl_coef=kl_coef, generator=gen
        )
        if arm in ("mrl_only", "cs_mrl", "mrl_long"):
            n = total + cs_steps if arm == "mrl_long" else total
            hist[arm] = rl_stage(p, task, "image", n, **kw)
        else:
            variant = dict(
                staged=("grpo", None),
                pad=("pad", PAD_PAPER),
                pad_code=("pad", PAD_CODE),
            )[arm]
            hist[arm] = rl_stage(
                p,
                task,
                "image",
                mrl_steps,
                variant=variant[0],
                pad=variant[1],
                tau=tau if arm == "pad" else None,
                **kw,
            )
            out[f"{arm}_mrl_img"], out[f"{arm}_mrl_txt"] = ev(p, "image"), ev(p, "text")
            hist[arm + "_trl"] = rl_stage(p, task, "text", trl_steps, **kw)
        out[f"{arm}_img"], out[f"{arm}_txt"] = ev(p, "image"), ev(p, "text")
        out[f"{arm}_distinct"], out[f"{arm}_entropy"] = answer_spread(
            p, task, "image", split, n_eval, stream(seed, EVAL_STREAM)
        )
        if arm == "staged":
            out["final_policy"] = p
    out["base_policy"], out["hist"] = base, hist
    return out


def tune_lr(
    task: VisualArithmetic, seed: int, grid, arms=ARMS, **kwargs
) -> tuple[dict, dict]:
    """Pick each arm's RL learning rate from ``grid`` by its final image accuracy on the
    *validation* split (never the test split). Returns (best lr per arm,
    {lr: validation scores})."""
    scores = {}
    for lr in grid:
        res = run_pipeline(
            task, seed, {a: lr for a in arms}, split="val", arms=arms, **kwargs
        )
        scores[lr] = {a: res[f"{a}_img"] for a in arms}
    best = {a: max(grid, key=lambda lr: scores[lr][a]) for a in arms}
    return best, scores


@torch.no_grad()
def zero_advantage_probe(
    policy: TinyMLLMPolicy,
    task: VisualArithmetic,
    mode: str,
    n: int,
    group: int,
    generator: torch.Generator,
    split: str = "train",
) -> tuple[float, float]:
    """(measured, predicted) share of zero-advantage groups for ``policy`` on n
    questions: measured by sampling ``group`` answers per question, predicted as the
    mean over the questions of p^G + (1-p)^G, p the policy's exact probability of the
    right sum."""
    q = _to(task.sample(n, split, generator), next(policy.parameters()).device)
    probs = torch.softmax(policy(q, mode), 1)
    ans = torch.multinomial(probs.cpu(), group, replacement=True, generator=generator)
    reward = (ans.to(probs.device) == q["y"][:, None]).float()
    p_ok = probs.gather(1, q["y"][:, None]).squeeze(1)
    theory = zero_advantage_theory(p_ok, group).mean().item()
    return zero_advantage_fraction(reward), theory
