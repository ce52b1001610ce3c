"""Data for the PaAno chapter: seeded synthetic series with nine anomaly kinds, TSB-AD
CSV files, and a period estimate for the VUS window."""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

ANOMALY_KINDS = (
    "spike",
    "context",
    "frequency",
    "flat",
    "noise",
    "shape",
    "amplitude",
    "level",
    "trend",
)
# Where each kind sits in the usual taxonomy of time-series anomalies: a point anomaly
# is one or a few steps (global: outside the normal range; contextual: inside it, wrong
# for its phase); a collective one is a stretch whose pattern (shape, frequency, level,
# trend) is off.
KIND_CLASS = {
    "spike": "point, global",
    "context": "point, contextual",
    "frequency": "collective, frequency",
    "flat": "collective, shape",
    "noise": "collective, shape",
    "shape": "collective, shape",
    "amplitude": "collective, scale",
    "level": "collective, level",
    "trend": "collective, trend",
}

# --------------------------------------------------------------------------------- data


@dataclass
class Series:
    """One anomaly-detection task.

    x_train: (n_train, C) float32, anomaly-free (the "normal" training part).
    x_test: (n_test, C) float32, the series to score.
    y_test: (n_test,) int64 in {0, 1}, 1 = anomalous time step.
    segments: (start, end, kind) of each injected anomaly, ``end`` exclusive, indices
        into x_test.
    name: a label for tables.
    """

    x_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    segments: list = field(default_factory=list)
    name: str = ""


def _inject(
    seg: np.ndarray,
    kind: str,
    t: np.ndarray,
    period: float,
    noise: float,
    scale: float,
    rng: np.random.Generator,
) -> np.ndarray:
    """Return the anomalous version of ``seg`` (L,) whose time stamps are ``t`` (L,)."""
    L = len(seg)
    if kind == "spike":  # a point anomaly: a few steps far off the normal range
        out = seg.copy()
        out[: min(L, 3)] += rng.choice([-1, 1]) * rng.uniform(3.0, 4.0) * scale
        return out
    if kind == "context":  # a point anomaly inside the normal range: 3 steps moved by 1
        # towards the mean (0) and past it, so the values stay in the normal
        out = seg.copy()
        head = out[: min(L, 3)]  # range (|x| <= 1.4) but are wrong for the phase
        out[: min(L, 3)] = head - np.where(head >= 0, 1.0, -1.0) * scale
        return out
    if kind == "frequency":  # the oscillation speeds up
        return scale * np.sin(
            2 * np.pi * t * rng.uniform(2.0, 3.0) / period
        ) + noise * rng.standard_normal(L)
    if kind == "flat":  # a stuck sensor
        return np.full(L, seg[0])
    if kind == "noise":  # a burst of noise
        return seg + rng.uniform(0.4, 0.6) * scale * rng.standard_normal(L)
    if kind == "shape":  # same period, square instead of smooth
        return scale * np.sign(
            np.sin(2 * np.pi * t / period)
        ) + noise * rng.standard_normal(L)
    if kind == "amplitude":  # same shape, amplitude halved
        return 0.45 * seg
    if kind == "level":  # the whole stretch shifted by a constant
        return seg + rng.choice([-1, 1]) * rng.uniform(0.8, 1.2) * scale
    if kind == "trend":  # a drift that ramps up over the stretch
        return seg + rng.choice([-1, 1]) * rng.uniform(1.0, 1.5) * scale * np.linspace(
            0, 1, L
        )
    raise ValueError(f"unknown anomaly kind {kind!r}; valid kinds are {ANOMALY_KINDS}")


def make_synthetic_series(
    seed: int,
    n_train: int = 3000,
    n_test: int = 4000,
    period: float = 50.0,
    noise: float = 0.1,
    n_channels: int = 1,
    kinds: Sequence[str] = ANOMALY_KINDS,
    length: tuple[int, int] = (30, 90),
) -> Series:
    """A seeded periodic series (a fundamental plus a 3.7x harmonic plus noise, per
    channel) whose test part carries one injected anomaly of each kind in ``kinds``.

    Each channel gets its own phase and a period from ``period * [1, 1.3, 0.8, ...]``;
    in a multivariate series each anomaly hits a random, non-empty subset of channels.
    Anomalies last ``length`` steps (a spike or a context point is labelled over its 3
    steps), are placed at random, do not overlap, and keep at least ``2 * period``
    normal steps between them.

    Returns a :class:`Series` with x_train (n_train, C), x_test (n_test, C),
    y_test (n_test,).
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    for name, v in (
        ("n_channels", n_channels),
        ("n_train", n_train),
        ("n_test", n_test),
    ):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"{name} must be an int, got {type(v).__name__} {v!r}")
    if not (np.isfinite(period) and period > 0 and np.isfinite(noise) and noise >= 0):
        raise ValueError(
            f"need a finite period > 0 and a finite noise >= 0, got {period}, {noise}"
        )
    if len(kinds) == 0:
        raise ValueError(
            "kinds is empty: a test part needs at least one anomaly to score"
        )
    if n_channels < 1 or n_train < 4 * period or n_test < 4 * period:
        raise ValueError(
            "need n_channels >= 1 and n_train, n_test >= 4*period; "
            f"got {n_channels}, {n_train}, {n_test}"
        )
    kinds = list(kinds)
    for k in kinds:
        if k not in ANOMALY_KINDS:
            raise ValueError(
                f"unknown anomaly kind {k!r}; valid kinds are {ANOMALY_KINDS}"
            )
    lo, hi = length
    if not 1 <= lo <= hi:
        raise ValueError(f"length must be (lo, hi) with 1 <= lo <= hi, got {length}")
    gap = int(2 * period)
    if len(kinds) * (hi + gap) + gap > n_test:
        raise ValueError(
            f"n_test={n_test} is too short for {len(kinds)} anomalies of up to {hi} "
            "steps"
        )
    rng = np.random.default_rng(seed)
    n = n_train + n_test
    t = np.arange(n, dtype=np.float64)
    periods = (
        period
        * np.array([1.0, 1.3, 0.8, 1.6, 0.7, 1.15, 0.9, 1.45])[
            np.arange(n_channels) % 8
        ]
    )
    x = np.empty((n, n_channels))
    for c in range(n_channels):
        phi = rng.uniform(0, 2 * np.pi, size=2)
        x[:, c] = (
            np.sin(
                2 * np.pi * t / periods[c] + phi[0]
            )  # x_t = sin(2πt/P) + 0.4 sin(2π·3.7t/P) + σε
            + 0.4 * np.sin(2 * np.pi * 3.7 * t / periods[c] + phi[1])
            + noise * rng.standard_normal(n)
        )
    x_test = x[n_train:].copy()
    y = np.zeros(n_test, dtype=np.int64)
    # non-overlapping placement: split the free room at random between the gaps
    lengths = [
        3 if k in ("spike", "context") else int(rng.integers(lo, hi + 1)) for k in kinds
    ]
    order = rng.permutation(len(kinds))
    free = n_test - sum(lengths) - gap * (len(kinds) + 1)
    cuts = np.sort(rng.integers(0, free + 1, size=len(kinds)))
    segments, pos, prev_cut = [], gap, 0
    for j, idx in enumerate(order):
        pos += cuts[j] - prev_cut
        prev_cut = cuts[j]
        kind, L = kinds[idx], lengths[idx]
        s, e = int(pos), int(pos + L)
        chans = (
            [0]
            if n_channels == 1
            else rng.choice(
                n_channels, size=int(rng.integers(1, n_channels + 1)), replace=False
            )
        )
        for c in chans:
            x_test[s:e, c] = _inject(
                x_test[s:e, c],
                kind,
                t[n_train + s : n_train + e],
                periods[c],
                noise,
                1.0,
                rng,
            )
        y[s:e] = 1
        segments.append((s, e, kind))
        pos = e + gap
    return Series(
        x[:n_train].astype(np.float32),
        x_test.astype(np.float32),
        y,
        sorted(segments),
        name=f"synthetic-{seed}",
    )


def load_tsb_ad_csv(path: str | Path) -> Series:
    """Read one TSB-AD benchmark file
    (``NNN_Source_id_K_Domain_tr_TRAIN_1st_FIRST.csv``).

    The format: a header row; numeric feature columns; a last column named ``Label``
    with 0/1. The first TRAIN rows (the ``_tr_TRAIN_`` part of the name) form the
    training part; as in TSB-AD, the whole series is scored. Any problem -- no ``Label``
    column, no train length in the name, a non-numeric cell, labels outside {0, 1}, no
    anomaly at all -- is a ``ValueError`` that names the file and the problem.
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path}: no such file")
    m = re.search(r"_tr_(\d+)_", path.name)
    if m is None:
        raise ValueError(
            f"{path.name}: the name carries no training length ('..._tr_<N>_...'), as "
            "TSB-AD files do"
        )
    n_train = int(m.group(1))
    with path.open(newline="") as fh:
        rows = list(csv.reader(fh))
    if len(rows) < 3:
        raise ValueError(
            f"{path.name}: expected a header and at least two rows, got {len(rows)} "
            "lines"
        )
    header = [h.strip() for h in rows[0]]
    if header[-1] != "Label":
        raise ValueError(
            f"{path.name}: missing the anomaly label column: "
            f"the last column must be 'Label', got {header[-1]!r}"
        )
    if len(header) < 2:
        raise ValueError(f"{path.name}: no feature columns besides 'Label'")
    data = np.empty((len(rows) - 1, len(header)))
    for i, row in enumerate(rows[1:], start=2):
        if len(row) != len(header):
            raise ValueError(
                f"{path.name}: line {i} has {len(row)} columns, the header has "
                f"{len(header)}"
            )
        try:
            data[i - 2] = [float(v) for v in row]
        except ValueError:
            bad = next(v for v in row if not _is_float(v))
            raise ValueError(
                f"{path.name}: line {i} has a non-numeric value {bad!r}"
            ) from None
    if not np.isfinite(data).all():
        raise ValueError(f"{path.name}: contains NaN or infinite values")
    labels = data[:, -1]
    if not np.isin(labels, (0, 1)).all():
        raise ValueError(
            f"{path.name}: 'Label' must be 0 or 1, found "
            f"{sorted(set(labels.tolist()) - {0.0, 1.0})[:3]}"
        )
    if labels.sum() == 0:
        raise ValueError(
            f"{path.name}: no anomaly label (every 'Label' is 0), so VUS-PR is "
            "undefined"
        )
    if not 0 < n_train < len(data):
        raise ValueError(
            f"{path.name}: training length {n_train} does not fit a series of "
            f"{len(data)} rows"
        )
    x = data[:, :-1].astype(np.float32)
    return Series(x[:n_train], x, labels.astype(np.int64), [], name=path.stem)


def _is_float(v: str) -> bool:
    try:
        float(v)
        return True
    except ValueError:
        return False


def load_tsb_ad_folder(folder: str | Path, pattern: str = "*.csv") -> list[Series]:
    """Every TSB-AD CSV file in ``folder`` (sorted by name) as a list of
    :class:`Series`.

    No file is skipped silently: the first bad file raises its ``ValueError``; an empty
    or missing folder is a ``ValueError`` too.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(
            f"{folder}: not a folder; download TSB-AD's CSV files and name their folder"
        )
    files = sorted(folder.glob(pattern))
    if not files:
        raise ValueError(f"{folder}: no files match {pattern!r}")
    return [load_tsb_ad_csv(f) for f in files]


def acf_period(x, min_lag: int = 3, max_lag: int = 1000, default: int = 100) -> int:
    """The dominant period of a series: the lag of the first local maximum of its
    autocorrelation in [min_lag, max_lag] that reaches 90 % of the highest one (first
    channel if x is (n, C)); ``default`` when there is none.

    A numpy stand-in for TSB-AD's ``find_length_rank`` (which needs statsmodels), used
    to pick the VUS window and a patch length for real TSB-AD files.
    """
    x = np.asarray(x, dtype=np.float64)
    x = x[:, 0] if x.ndim == 2 else x
    if x.ndim != 1 or len(x) < 2 * min_lag + 2:
        raise ValueError(
            f"x must be (n,) or (n, C) with n >= {2 * min_lag + 2}, got shape "
            f"{np.shape(x)}"
        )
    x = x - x.mean()
    f = np.fft.rfft(x, 2 * len(x))
    # r(τ) = mean_t x_t x_{t+τ}
    acf = np.fft.irfft(f * np.conj(f))[: len(x)] / (len(x) - np.arange(len(x)))
    acf = acf / (acf[0] + 1e-12)
    hi = min(max_lag, len(x) // 2)
    lags = np.arange(min_lag, hi)
    peaks = lags[
        (acf[lags] > acf[lags - 1]) & (acf[lags] >= acf[lags + 1]) & (acf[lags] > 0)
    ]
    if not len(peaks):
        return int(default)
    # the first peak nearly as high as the best
    return int(peaks[acf[peaks] >= 0.9 * acf[peaks].max()][0])


# -------------------------------------------- real series shipped inside the aeon wheel


def aeon_data_dir() -> Path:
    """The folder of data files inside the installed ``aeon`` package, found without
    importing aeon (importing it needs numba). ``pip install --no-deps aeon==1.6.0``
    provides it."""
    import importlib.util

    spec = importlib.util.find_spec("aeon")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(
            "the real series come from aeon's wheel: pip install --no-deps aeon==1.6.0"
        )
    return Path(list(spec.submodule_search_locations)[0]) / "datasets" / "data"


def _read_timeeval_csv(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """A TimeEval-format CSV (``timestamp, value columns..., is_anomaly``) -> (x
    (n, C), y (n,))."""
    if not path.is_file():
        raise ValueError(f"{path}: no such file (is aeon 1.6.0 installed?)")
    with path.open(newline="") as fh:
        rows = list(csv.reader(fh))
    header = [h.strip() for h in rows[0]]
    if header[0] != "timestamp" or header[-1] != "is_anomaly" or len(header) < 3:
        raise ValueError(
            f"{path.name}: expected 'timestamp, values..., is_anomaly', got {header}"
        )
    # drop the timestamp column
    data = np.array([[float(v) for v in r[1:]] for r in rows[1:]])
    if not np.isfinite(data).all() or not np.isin(data[:, -1], (0, 1)).all():
        raise ValueError(f"{path.name}: values must be finite and is_anomaly 0/1")
    return data[:, :-1].astype(np.float32), data[:, -1].astype(np.int64)


def load_kdd_tsad_135() -> Series:
    """UCR anomaly archive series 135 (InternalBleeding16), as shipped in aeon's wheel
    under ``KDD-TSAD_135``: the TEST file (7,501 steps, one labelled anomaly of 12
    steps) is the whole series and its first 1,200 steps are the TRAIN file (the normal
    training part).

    Returns a :class:`Series` with x_train (1200, 1) and x_test = y_test's series
    (7501, 1), scored whole, as TSB-AD and the official PaAno code score a file.
    """
    folder = aeon_data_dir() / "KDD-TSAD_135"
    x_tr, y_tr = _read_timeeval_csv(
        folder / "135_UCR_Anomaly_InternalBleeding16_TRAIN.csv"
    )
    x, y = _read_timeeval_csv(folder / "135_UCR_Anomaly_InternalBleeding16_TEST.csv")
    if y_tr.any() or not np.array_equal(x[: len(x_tr)], x_tr):
        raise ValueError(
            "KDD-TSAD 135: the TRAIN file should be the anomaly-free prefix of TEST"
        )
    starts = np.flatnonzero(np.diff(np.r_[0, y]) == 1)
    ends = np.flatnonzero(np.diff(np.r_[y, 0]) == -1) + 1
    segs = [(int(a), int(b), "UCR") for a, b in zip(starts, ends)]
    return Series(x_tr, x, y, segs, name="UCR-135 InternalBleeding16")


def load_daphnet_s06r02e0() -> tuple[np.ndarray, np.ndarray]:
    """The Daphnet S06R02E0 excerpt shipped in aeon's wheel: x (7040, 9) accelerometer
    readings and y (7040,) labels. In aeon 1.6.0 every label is 0 (aeon deprecates the
    file for that reason), so it can give a real multivariate background but no
    labelled anomaly."""
    return _read_timeeval_csv(aeon_data_dir() / "Daphnet_S06R02E0" / "S06R02E0.csv")
