"""Majority vote over real processes with ``torch.distributed``.

:func:`.vote.mv_step` simulates M workers in one process. Here each worker is a process
(a GPU on a multi-GPU node): it computes its own block gradient, packs the signs one bit
per coordinate (:func:`.vote.pack_signs`), and an ``all_gather`` hands every worker
everyone's bits; each then takes the same majority, which is what a parameter server
would send back. The message is the same one the simulation counts, so the two runs
agree bit for bit (:func:`train_mv_simulated` against :func:`train_mv_rank`, tested with
2-4 processes).

Two ways to run it:

* on one machine, from Python:
  ``run_distributed(train_mv_rank, world_size=4, args=(...))`` starts the processes
  (``torch.multiprocessing``, spawn), joins them with a time limit and returns each
  rank's result; the backend is gloo on CPU;
* on a multi-GPU node: ``torchrun --nproc_per_node=4 -m iclr26.absignsgd.distributed``
  (nccl when CUDA is there, one GPU per process; see :func:`main`).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from datetime import timedelta
from typing import Callable, Sequence

import torch
import torch.distributed as dist
from torch import nn

from ..harness import batch_indices, mlp
from ..validate import as_int
from .measure import linear_blocks
from .optim import ABSignSGD
from .schedules import DepthBiasedSchedule
from .vote import (
    average_step,
    majority_vote,
    mv_step,
    pack_signs,
    unpack_signs,
    worker_block_gradients,
)


def dist_mv_step(
    opt: ABSignSGD,
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    loss_fn: Callable = nn.functional.cross_entropy,
    group=None,
) -> dict:
    """One majority-vote step of ABSignSGD, this process being one worker.

    x: (B, ...) and y: (B,), this worker's own minibatch. Every process of ``group``
    must call it at the same step with its own batch. One ``all_gather`` of uint8 per
    step carries the packed signs of the whole active block. Returns ``sign_bytes``,
    what this worker sent.
    """
    if not isinstance(opt, ABSignSGD):
        raise TypeError(f"opt must be an ABSignSGD, got {type(opt).__name__}")
    if not dist.is_initialized():
        raise RuntimeError(
            "torch.distributed is not initialised: call "
            "dist.init_process_group first (or use run_distributed)"
        )
    world = dist.get_world_size(group)
    params = opt.param_groups[opt.active_block]["params"]
    # (1, *shape)
    grads = worker_block_gradients(model, params, x[None], y[None], loss_fn)
    with torch.no_grad():
        packed = [pack_signs(g[0]) for g in grads]  # one bit per coordinate
        msg = torch.cat(packed)  # the whole block, once
        inbox = [torch.empty_like(msg) for _ in range(world)]
        dist.all_gather(inbox, msg, group=group)
        inbox = torch.stack(inbox)  # (M, bytes)
        start = 0
        for p, pk in zip(params, packed):
            signs = unpack_signs(inbox[:, start : start + pk.numel()], p.numel())
            p.grad = majority_vote(signs.reshape(world, *p.shape).to(p.dtype))
            start += pk.numel()
    opt.step()
    return {"sign_bytes": msg.numel()}


def dist_average_step(
    opt: ABSignSGD,
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    loss_fn: Callable = nn.functional.cross_entropy,
    group=None,
) -> dict:
    """The fair baseline over processes: ``all_reduce`` the fp32 block gradient, divide
    by M, and take ABSignSGD's sign step on the average. Returns ``fp32_bytes`` sent."""
    if not isinstance(opt, ABSignSGD):
        raise TypeError(f"opt must be an ABSignSGD, got {type(opt).__name__}")
    if not dist.is_initialized():
        raise RuntimeError("torch.distributed is not initialised")
    world = dist.get_world_size(group)
    params = opt.param_groups[opt.active_block]["params"]
    grads = worker_block_gradients(model, params, x[None], y[None], loss_fn)
    with torch.no_grad():
        flat = torch.cat([g[0].reshape(-1) for g in grads]).float()
        dist.all_reduce(flat, op=dist.ReduceOp.SUM, group=group)
        start = 0
        for p in params:
            p.grad = (
                (flat[start : start + p.numel()] / world).reshape(p.shape).to(p.dtype)
            )
            start += p.numel()
    opt.step()
    return {"fp32_bytes": 4 * flat.numel()}


# ----------------------------------------------------------- one training run, two ways


def worker_batches(
    n: int, batch: int, steps: int, n_workers: int, seed: int
) -> torch.Tensor:
    """Minibatch indices of every worker: (steps, n_workers, batch), worker w drawing
    its epochs from its own generator (seed + 7919 w), so worker w sees the same batches
    in the simulation and as process w."""
    return torch.stack(
        [
            batch_indices(
                n, batch, steps, torch.Generator().manual_seed(seed + 7919 * w)
            )
            for w in range(n_workers)
        ],
        1,
    )


def _check_run(sizes, x, y, steps, batch, n_workers):
    if not isinstance(x, torch.Tensor) or x.ndim != 2 or y.shape != (x.shape[0],):
        raise ValueError(
            f"x must be (n, d) and y (n,); got {tuple(getattr(x, 'shape', ()))}, "
            f"{tuple(getattr(y, 'shape', ()))}"
        )
    if x.shape[1] != sizes[0]:
        raise ValueError(f"x has {x.shape[1]} features but sizes[0] = {sizes[0]}")
    for name, v in (("steps", steps), ("batch", batch), ("n_workers", n_workers)):
        as_int(v, name, lo=1)


def train_mv_simulated(
    sizes: Sequence[int],
    x: torch.Tensor,
    y: torch.Tensor,
    n_workers: int,
    steps: int,
    batch: int,
    lr: float,
    c: float = 10.0,
    seed: int = 0,
    average: bool = False,
) -> dict:
    """ABSignSGD with M = n_workers simulated workers in this process
    (:func:`.vote.mv_step`, or :func:`.vote.average_step` with ``average=True``).
    Returns ``params`` (the final parameters, detached) and ``bytes`` (what one worker
    uploaded over the run)."""
    _check_run(sizes, x, y, steps, batch, n_workers)
    model = mlp(list(sizes), seed=seed).to(x.device)
    opt = ABSignSGD(
        linear_blocks(model), lr=lr, schedule=DepthBiasedSchedule(len(sizes) - 1, c)
    )
    idx = worker_batches(len(y), batch, steps, n_workers, seed)
    step, key = (average_step, "fp32_bytes") if average else (mv_step, "sign_bytes")
    sent = 0
    for k in range(steps):
        sent += step(opt, model, x[idx[k]], y[idx[k]])[key]
    model.requires_grad_(True)
    return {
        "params": [p.detach().clone() for p in model.parameters()],
        "bytes": sent // n_workers,
    }


def train_mv_rank(
    rank: int,
    world_size: int,
    sizes: Sequence[int],
    x: torch.Tensor,
    y: torch.Tensor,
    steps: int,
    batch: int,
    lr: float,
    c: float = 10.0,
    seed: int = 0,
    average: bool = False,
    group=None,
) -> dict:
    """The same run as :func:`train_mv_simulated`, this process being worker ``rank`` of
    the ``world_size`` processes of ``group`` (default: the whole, initialised, process
    group). Every worker ends with the same parameters. Returns ``params`` and ``bytes``
    (what this worker uploaded)."""
    _check_run(sizes, x, y, steps, batch, world_size)
    if dist.get_rank(group) != rank or dist.get_world_size(group) != world_size:
        raise ValueError(
            f"rank {rank} of {world_size} does not match the process group "
            f"({dist.get_rank(group)} of {dist.get_world_size(group)})"
        )
    model = mlp(list(sizes), seed=seed).to(x.device)
    opt = ABSignSGD(
        linear_blocks(model), lr=lr, schedule=DepthBiasedSchedule(len(sizes) - 1, c)
    )
    # my batches only
    idx = worker_batches(len(y), batch, steps, world_size, seed)[:, rank]
    step, key = (
        (dist_average_step, "fp32_bytes") if average else (dist_mv_step, "sign_bytes")
    )
    sent = 0
    for k in range(steps):
        sent += step(opt, model, x[idx[k]], y[idx[k]], group=group)[key]
    model.requires_grad_(True)
    return {
        "params": [p.detach().cpu().clone() for p in model.parameters()],
        "bytes": sent,
    }


def train_mv_subgroups(
    rank: int, world_size: int, group_sizes: Sequence[int], *run_args, **run_kwargs
) -> dict:
    """Run :func:`train_mv_rank` once per size m in ``group_sizes``, on the sub-group of
    ranks 0..m-1 (one launch of ``world_size`` processes tests several worker counts).
    Returns {m: this rank's result} for the groups this rank belongs to."""
    out = {}
    for m in group_sizes:
        if not 1 <= m <= world_size:
            raise ValueError(f"group size {m} must lie in [1, {world_size}]")
        group = dist.new_group(list(range(m)))  # every rank must take part in new_group
        if rank < m:
            out[m] = train_mv_rank(rank, m, *run_args, group=group, **run_kwargs)
        dist.barrier()
    return out


def vote_and_average_runs(rank: int, world_size: int, *run_args) -> dict:
    """What the tests launch, in one start of ``world_size`` processes: the vote on
    sub-groups of 2..world_size workers, and fp32 averaging on 2. Returns
    {"vote": {m: result}, "average": {2: result}} for this rank."""
    sizes = tuple(range(2, world_size + 1))
    return {
        "vote": train_mv_subgroups(rank, world_size, sizes, *run_args),
        "average": train_mv_subgroups(rank, world_size, (2,), *run_args, average=True),
    }


# ---------------------------------------------------------------- launching processes


def _entry(rank, fn, world_size, store_path, backend, timeout_s, args, out_dir):
    torch.set_num_threads(1)  # W processes on a small machine: one thread each
    store = dist.FileStore(store_path, world_size)
    dist.init_process_group(
        backend,
        store=store,
        rank=rank,
        world_size=world_size,
        timeout=timedelta(seconds=timeout_s),
    )
    try:
        out = fn(rank, world_size, *args)
        torch.save(out, os.path.join(out_dir, f"rank{rank}.pt"))
    finally:
        dist.destroy_process_group()


def run_distributed(
    fn: Callable,
    world_size: int,
    args: tuple = (),
    backend: str = "gloo",
    timeout_s: float = 120.0,
) -> list:
    """Run ``fn(rank, world_size, *args)`` in ``world_size`` fresh processes joined in
    one ``torch.distributed`` group, and return the ``world_size`` results
    in rank order.

    The processes meet through a file store in a fresh temporary folder (no port to
    pick, nothing left behind). ``fn`` must be importable (a module-level function) and
    its result picklable by ``torch.save``. A process that fails raises here with its
    traceback; a run past ``timeout_s`` seconds is killed and raises ``TimeoutError``.
    """
    import torch.multiprocessing as mp

    if (
        isinstance(world_size, bool)
        or not isinstance(world_size, int)
        or world_size < 1
    ):
        raise ValueError(f"world_size must be an int >= 1, got {world_size!r}")
    if backend not in ("gloo", "nccl"):
        raise ValueError(
            f"backend must be 'gloo' (CPU) or 'nccl' (GPU), got {backend!r}"
        )
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    with tempfile.TemporaryDirectory(prefix="absignsgd-dist-") as folder:
        ctx = mp.start_processes(
            _entry,
            nprocs=world_size,
            join=False,
            start_method="spawn",
            args=(
                fn,
                world_size,
                os.path.join(folder, "store"),
                backend,
                timeout_s,
                tuple(args),
                folder,
            ),
        )
        deadline = time.monotonic() + timeout_s
        while not ctx.join(timeout=1.0):
            if time.monotonic() > deadline:
                for p in ctx.processes:
                    if p.is_alive():
                        p.terminate()
                raise TimeoutError(
                    f"{world_size} processes did not finish within {timeout_s:g} s"
                )
        return [
            torch.load(os.path.join(folder, f"rank{r}.pt"), weights_only=False)
            for r in range(world_size)
        ]


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point for ``torchrun --nproc_per_node=M -m iclr26.absignsgd.distributed``.

    Trains the digits MLP with an M-worker majority vote (nccl and one GPU per process
    where CUDA is available, else gloo on CPU) and has rank 0 print the final training
    loss and the bytes each worker sent.
    """
    from ..harness import digits_data, evaluate

    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--width", type=int, default=64)
    ap.add_argument("--hidden-layers", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--average", action="store_true", help="fp32 averaging, not the vote"
    )
    a = ap.parse_args(argv)
    cuda = torch.cuda.is_available()
    dist.init_process_group("nccl" if cuda else "gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device(
        f"cuda:{int(os.environ.get('LOCAL_RANK', 0))}" if cuda else "cpu"
    )
    if cuda:
        torch.cuda.set_device(device)
    train, _ = digits_data(seed=a.seed, device=device)
    sizes = [64] + [a.width] * a.hidden_layers + [10]
    out = train_mv_rank(
        rank,
        world,
        sizes,
        train.x,
        train.y,
        a.steps,
        a.batch,
        a.lr,
        seed=a.seed,
        average=a.average,
    )
    if rank == 0:
        model = mlp(sizes, seed=a.seed).to(device)
        with torch.no_grad():
            for p, q in zip(model.parameters(), out["params"]):
                p.copy_(q)
        loss, acc = evaluate(model, train)
        print(
            f"{world} workers, {'fp32 average' if a.average else 'majority vote'}: "
            f"final train loss {loss:.4f}, accuracy {acc:.3f}; "
            f"{out['bytes']} bytes sent per worker"
        )
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
