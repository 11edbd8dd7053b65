"""A collapse monitor for any training loop, and the history it logs.

:class:`CollapseMonitor` takes plain arrays at every call (``update(step,
embeddings, labels, loss=None)``): the statistics of one anchor sweep
(:func:`~isoapprox.diagnostics.collapse_statistics` with ``quick=True``) and the collapse
signatures at every call, the theory (:func:`~isoapprox.evaluate_theory` on
a seeded subsample) every ``theory_every`` calls and where a collapse
signature starts, the trend signature ``shrinking`` (the diameter fallen by
``shrink_factor`` from its running maximum, the classes not ranked: the
early warning), hysteresis
on every signature (``k_on`` / ``k_off`` consecutive calls), a warning when
a signature starts, and one JSON line per call appended to a log.  A batch it cannot
evaluate is logged and warned about once per kind, never raised unless
``strict``.  :func:`read_history` reads a log back (``isoapprox diagnose
--history LOG`` draws it).  The log format, the definitions and the cost:
docs/monitor.md.
"""

from __future__ import annotations

import codecs
import dataclasses
import datetime as _dt
import logging
import math
import numbers
import os
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ._blas import numba_threads, quiet_threads, single_threaded_blas
from ._typing import ArrayLike
from ._validation import (
    as_labels,
    as_points,
    check_bool,
    check_instance,
    check_int,
    check_margin,
    check_option,
    check_positive,
    require_triplets,
)
from .bracket import Bracket
from .diagnostics import (
    SIGNATURE_NAMES,
    CollapseStatistics,
    Signature,
    SignatureThresholds,
    detect_signatures,
    theory_subsample,
)
from .diagnostics.signatures import COLLAPSE_SIGNATURES, LOSS_KINDS, convention_loss
from .diagnostics.statistics import compute_collapse_statistics
from .exceptions import (
    CollapseWarning,
    ConvergenceWarning,
    InvalidInputError,
    IsoapproxError,
    MonitorWarning,
)
from .geometry import compute_farthest_pair
from .ideal import EFFORTS, IdealResult, embedding_kind, solve_nearest
from .io import open_regular, provenance, to_jsonable
from .kernels.distances import serial_work
from .losses import TRIPLET_REDUCTIONS, compute_worst_slack
from .metrics import compute_isometric_error
from .runs import append_jsonl, read_jsonl, repair_jsonl
from .theory import TheoryOptions, TheoryResult, evaluate_core
from .tolerances import FLOOR_RTOL

__all__ = [
    "BAD_BATCH_REASONS",
    "FORMAT",
    "FORMAT_VERSION",
    "FSYNC_EVERY",
    "K_OFF",
    "K_ON",
    "K_ON_MISMATCH",
    "MONITOR_SIGNATURES",
    "MONITOR_THEORY",
    "SHRINK_FACTOR",
    "SPAN_ULPS",
    "THEORY_EVERY",
    "WARN_SIGNATURES",
    "CollapseMonitor",
    "MonitorHistory",
    "MonitorUpdate",
    "read_history",
]

logger = logging.getLogger(__name__)

#: the ``format`` of a monitor log's header lines
FORMAT = "isoapprox-monitor"
#: version of the log format (docs/monitor.md)
FORMAT_VERSION = 1
#: with ``fsync``, the log is fsynced at least every this many lines (and at every
#: header, onset, end, theory record and bad batch)
FSYNC_EVERY = 50
#: the theory runs at every this many calls by default (0: never)
THEORY_EVERY = 100
#: the theory options of the monitor by default: a 16-point subsample, the scipy
#: search with the ``"quick"`` work budget (4 local starts, 100 iterations each;
#: :func:`isoapprox.ideal.resolve_budget`), no haus solver (its bracket comes from
#: the iso solution), Procrustes up to n = 8, and no clock but the solver's safety
#: net: counts of work, not seconds, decide every number
MONITOR_THEORY = TheoryOptions(solver="scipy", effort="quick", haus_max_points=0,
                               procrustes_max_dim=8, max_points=16)
#: the rounding allowance, in ulps per coordinate, of the pair distances compared
#: across the change of coordinates of :func:`_iso_in_span`: each distance is
#: computed by direct differences within ``n + 4`` ulps of the exact real, so the
#: measured change of the distance table is within ``2 (n + 4)`` ulps of the
#: true one; 4 (n + 4) keeps a factor 2
SPAN_ULPS = 4
#: the monitor's trend signature: the batch diameter at most 1 / SHRINK_FACTOR of its
#: running maximum over the session (the early warning of a collapse: the diameter
#: falls long before the loss settles at the margin)
SHRINK_FACTOR = 5.0
#: the signatures the monitor tracks: the diagnostics' and the trend ``shrinking``
MONITOR_SIGNATURES = SIGNATURE_NAMES + ("shrinking",)
#: hysteresis: a signature starts after K_ON consecutive evaluated updates where it
#: holds and ends after K_OFF consecutive ones where it does not (no flapping)
K_ON = 3
K_OFF = 3
#: ``loss_mismatch`` needs a persistent disagreement: K_ON_MISMATCH consecutive updates
#: (one batch's reported loss may come from another batch or a dropout mask)
K_ON_MISMATCH = 10
#: the signatures whose onset warns by default: class collapse with the classes apart
#: is an ideal (triplet-separated) embedding, so its onset is only logged
WARN_SIGNATURES = ("shrinking", "all_distances_small", "stuck_at_margin", "stuck_at_ln2",
                   "dimensional_collapse")
#: the signatures whose onset calls the theory (``theory_on_onset``)
_TREND_AND_COLLAPSE = frozenset(("shrinking",) + tuple(
    n for n in COLLAPSE_SIGNATURES if n != "class_collapse"))
#: the settings :meth:`CollapseMonitor.config` lists as they are, after the others
_PLAIN_SETTINGS = ("strict", "fsync", "fsync_every", "loss_kind", "loss_reduction", "k_on",
                   "k_off", "k_on_mismatch", "shrink_factor", "theory_on_onset", "threads")
#: why a call was not evaluated (``bad_batch`` records) or part of it was dropped
BAD_BATCH_REASONS = ("type", "shape", "non_finite", "labels", "step", "loss", "theory", "log")


class _BadBatch(Exception):
    """A batch problem: ``reason`` (one of BAD_BATCH_REASONS) and the message."""

    def __init__(self, reason: str, message: str, kind: type[Exception] = InvalidInputError):
        super().__init__(message)
        self.reason = reason
        self.kind = kind


@dataclass(frozen=True)
class MonitorUpdate:
    """What one :meth:`CollapseMonitor.update` call found.

    ``record`` is the line written to the log (a JSON-ready dictionary);
    ``ok`` is False for a batch that could not be evaluated (then
    ``statistics`` is None and ``record["reason"]`` says why).  ``signatures``
    are this call's (the trend ``shrinking`` last; ``record["raw"]`` names
    those that hold); ``holding`` names the signatures whose state is on
    after the hysteresis (``k_on`` / ``k_off``), ``onsets`` / ``ends`` those
    whose state turned on or off at this call; ``theory`` is the evaluation
    on the subsample when it ran.
    """

    step: int | None
    call: int
    ok: bool
    record: dict[str, Any] = field(repr=False)
    statistics: CollapseStatistics | None = field(default=None, repr=False)
    signatures: tuple[Signature, ...] = field(default=(), repr=False)
    holding: tuple[str, ...] = ()
    onsets: tuple[str, ...] = ()
    ends: tuple[str, ...] = ()
    theory: TheoryResult | None = field(default=None, repr=False)


def _check_log(log: Any) -> Path | None:
    if log is None:
        return None
    if not isinstance(log, (str, os.PathLike)):
        raise TypeError(f"`log` must be a path (str or os.PathLike) or None; got "
                        f"{type(log).__name__}")
    path = Path(log)
    if str(log) == "" or path.is_dir():
        raise InvalidInputError(f"`log` must name a file (a JSON-lines log); got {str(log)!r}"
                                + (", a folder" if path.is_dir() else ""))
    return path


class CollapseMonitor:
    """Watch a training run for collapse: statistics, signatures, theory, a JSON-lines log.

    Parameters
    ----------
    margin : float, default 0.0
        The training margin ``alpha >= 0``.
    log : path-like, optional
        JSON-lines log: a header line (configuration, versions, BLAS), then
        one line per call, each appended with one write (and fsynced), so a
        killed run leaves a readable log.  An existing log is continued
        (a torn last line is dropped and a new header starts a segment)
        unless ``overwrite``.
    theory_every : int, default ``THEORY_EVERY`` (100)
        Evaluate the theory at calls ``0, k, 2k, ...`` (0: never), and at
        every call where a collapse signature starts (``theory_on_onset``).
    theory : TheoryOptions, optional
        Options of :func:`isoapprox.evaluate_theory`; ``max_points`` is the
        subsample size and ``seed`` with the step seeds the subsample and the
        solvers.  Default :data:`MONITOR_THEORY`.
    effort : {"quick", "default", "thorough"}, optional
        The work budget of the theory's solves (:func:`isoapprox.nearest_ideal`'s
        ``effort``: counts of local starts, iterations, nodes and linear
        programmes, never seconds), put into ``theory``; its explicit
        ``n_starts``, ``max_iter`` or ``max_subbatches`` still override the
        preset's.  None: ``theory``'s own, ``"quick"`` for :data:`MONITOR_THEORY`
        (4 local starts: the theory runs inside training, and a bracket left
        open says so in the record; ``"default"`` and ``"thorough"`` allow 6
        and 24 times the starts, which may close more brackets; costs in
        docs/monitor.md).
    thresholds : SignatureThresholds, optional
        Thresholds of the signatures (and of the collapsed classes).
    warn : sequence of str, default ``WARN_SIGNATURES``
        Signatures (of :data:`MONITOR_SIGNATURES`) whose first onset raises a
        :class:`~isoapprox.CollapseWarning` naming the step (every onset is
        logged).
    strict : bool, default False
        Raise on a bad batch instead of logging it.
    overwrite : bool, default False
        Start a fresh log, deleting an existing one.
    fsync : bool, default True
        ``os.fsync`` the log (survives a machine crash, not only a killed
        process: every line is written with one ``write`` either way): the
        header, every line with an onset, an end, a theory record or a bad
        batch, and every ``fsync_every``-th line.  False: never.
    fsync_every : int, default ``FSYNC_EVERY`` (50)
        With ``fsync``, also every this many lines (1: every line; a machine
        crash loses at most ``fsync_every - 1`` plain statistics lines, never
        an onset).  An fsync costs about as much as a whole update of a small
        batch.
    loss_kind : {"batch_hard", "all"}, default "batch_hard"
    loss_reduction : {"mean", "sum", "max", "mean_nonzero"}, default "mean"
        How training computes the ``loss`` passed to :meth:`update` (one term
        per anchor or per triplet; ``"mean_nonzero"``: the mean over the
        positive terms, pytorch-metric-learning's default reducer):
        ``loss_mismatch`` compares it with the batch's loss of the same
        convention.
    k_on, k_off : int, default ``K_ON`` (3), ``K_OFF`` (3)
        Hysteresis: a signature starts after ``k_on`` consecutive evaluated
        calls where it holds and ends after ``k_off`` consecutive ones where
        it does not (1 and 1: every change counts).
    k_on_mismatch : int, default ``K_ON_MISMATCH`` (10)
        ``k_on`` of ``loss_mismatch``: a persistent disagreement only.
    shrink_factor : float, default ``SHRINK_FACTOR`` (5)
        ``shrinking`` holds when the batch diameter is at most
        ``1 / shrink_factor`` of its running maximum over the session and
        the batch's classes are not clearly ranked (its structure score
        below ``thresholds.ranked_structure_score``: a compressing batch
        is no collapse).
    theory_on_onset : bool, default True
        Also evaluate the theory at the call where a collapse signature
        (:data:`~isoapprox.diagnostics.COLLAPSE_SIGNATURES` or ``shrinking``)
        starts, unless ``theory_every`` is 0.
    threads : int or None, default 1
        Numba threads of the statistics of a large batch (None: numba's
        default, every core); a small one (below the kernels' ``SERIAL_WORK``)
        always runs on one.  One by default: the monitor shares the machine
        with the training, and threads that wait for each other on a busy
        machine burn CPU time (twice the CPU of one thread at B = 512, n = 128;
        the results do not depend on it).

    Raises
    ------
    InvalidInputError
        If an argument has a bad value, or ``log`` exists and is not a
        monitor log (or is corrupt before its last line).
    TypeError
        If an argument has the wrong kind.

    Examples
    --------
    >>> import numpy as np
    >>> mon = CollapseMonitor(margin=0.2, theory_every=0)
    >>> y = np.repeat(np.arange(4), 4)
    >>> E = np.eye(4)[y] + 0.01 * np.arange(16)[:, None]  # four tight, separated classes
    >>> [mon.update(step, E, y).holding for step in range(3)]  # starts after k_on = 3
    [(), (), ('class_collapse',)]
    >>> u = mon.update(3, E, y)
    >>> u.ok, u.holding, u.record["stats"]["batch_hard_max"]
    (True, ('class_collapse',), 0.0)
    """

    def __init__(
        self,
        *,
        margin: float = 0.0,
        log: str | os.PathLike | None = None,
        theory_every: int = THEORY_EVERY,
        theory: TheoryOptions | None = None,
        effort: str | None = None,
        thresholds: SignatureThresholds | None = None,
        warn: Sequence[str] = WARN_SIGNATURES,
        strict: bool = False,
        overwrite: bool = False,
        fsync: bool = True,
        fsync_every: int = FSYNC_EVERY,
        loss_kind: str = "batch_hard",
        loss_reduction: str = "mean",
        k_on: int = K_ON,
        k_off: int = K_OFF,
        k_on_mismatch: int = K_ON_MISMATCH,
        shrink_factor: float = SHRINK_FACTOR,
        theory_on_onset: bool = True,
        threads: int | None = 1,
    ) -> None:
        self.margin = check_margin(margin)
        self.theory_every = check_int(theory_every, "theory_every", minimum=0)
        theory = MONITOR_THEORY if theory is None else theory
        check_instance(theory, TheoryOptions, "theory")
        if effort is not None:
            theory = dataclasses.replace(theory, effort=check_option(effort, "effort", EFFORTS))
        self.theory = theory
        self.thresholds = check_instance(
            SignatureThresholds() if thresholds is None else thresholds, SignatureThresholds,
            "thresholds")
        if isinstance(warn, str):
            raise TypeError(f"`warn` must be a sequence of signature names; got the string "
                            f"{warn!r} (wrap it in a tuple)")
        self.warn = tuple(check_option(w, "warn", MONITOR_SIGNATURES) for w in warn)
        self.loss_kind = check_option(loss_kind, "loss_kind", LOSS_KINDS)
        self.loss_reduction = check_option(loss_reduction, "loss_reduction", TRIPLET_REDUCTIONS)
        self.k_on = check_int(k_on, "k_on", minimum=1)
        self.k_off = check_int(k_off, "k_off", minimum=1)
        self.k_on_mismatch = check_int(k_on_mismatch, "k_on_mismatch", minimum=1)
        self.shrink_factor = check_positive(shrink_factor, "shrink_factor")
        if not self.shrink_factor > 1.0:
            raise InvalidInputError(f"`shrink_factor` must be > 1; got {self.shrink_factor!r}")
        self.theory_on_onset = check_bool(theory_on_onset, "theory_on_onset")
        self.threads = None if threads is None else check_int(threads, "threads", minimum=1)
        self.strict = check_bool(strict, "strict")
        self.fsync = check_bool(fsync, "fsync")
        self.fsync_every = check_int(fsync_every, "fsync_every", minimum=1)
        self._unsynced = 0
        overwrite = check_bool(overwrite, "overwrite")
        self.log = _check_log(log)
        #: every record of this session (header first), as written to the log
        self.records: list[dict[str, Any]] = []
        self.calls = 0
        self._holding: frozenset[str] = frozenset()
        # hysteresis: per signature, the consecutive calls that disagree with its
        # state and the step of the first of them
        self._run: dict[str, int] = dict.fromkeys(MONITOR_SIGNATURES, 0)
        self._run_start: dict[str, int | None] = dict.fromkeys(MONITOR_SIGNATURES)
        self._diameter_max = 0.0
        self._diameter_max_step: int | None = None
        self._warned: set[str] = set()
        segment = 0
        if self.log is not None:
            if overwrite:
                self.log.unlink(missing_ok=True)
            self.log.parent.mkdir(parents=True, exist_ok=True)
            old = repair_jsonl(self.log)
            if old:
                _check_header(old[0], self.log, "log")
                segment = sum(1 for r in old if r.get("kind") == "header")
        self._emit({
            "kind": "header", "format": FORMAT, "format_version": FORMAT_VERSION,
            "segment": segment, "config": self.config(), "provenance": provenance(),
            "started": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        })

    @property
    def effort(self) -> str:
        """The work budget preset of the theory's solves (``theory.effort``)."""
        return self.theory.effort

    def __repr__(self) -> str:
        log = str(self.log) if self.log is not None else None
        return (f"CollapseMonitor(margin={self.margin!r}, log={log!r}, "
                f"theory_every={self.theory_every}, effort={self.effort!r}, "
                f"calls={self.calls})")

    def config(self) -> dict[str, Any]:
        """The monitor's settings (the ``config`` of the header line)."""
        th = self.theory
        return {
            "margin": self.margin, "theory_every": self.theory_every,
            "effort": th.effort, "theory_budget": th.budget().to_dict(),
            "theory": {**{k: v for k, v in asdict(th).items() if k != "curve"},
                       "curve": th.curve if isinstance(th.curve, str) else "custom"},
            "thresholds": asdict(self.thresholds), "warn": list(self.warn),
            **{k: getattr(self, k) for k in _PLAIN_SETTINGS},
        }

    # -- the log -------------------------------------------------------------------
    def _emit(self, record: dict[str, Any]) -> dict[str, Any]:
        rec = to_jsonable(record)
        self.records.append(rec)
        if self.log is not None:
            # fsync the lines that matter and every fsync_every-th (docs/monitor.md)
            self._unsynced += 1
            sync = self.fsync and (
                self._unsynced >= self.fsync_every or rec["kind"] != "update"
                or bool(rec.get("onsets") or rec.get("ends") or "theory" in rec))
            if sync:
                self._unsynced = 0
            try:
                append_jsonl(self.log, rec, fsync=sync)
            except OSError as exc:
                if self.strict:
                    raise
                self._warn_once("log", f"could not append to the log {str(self.log)!r} ({exc}); "
                                       "training goes on, the records stay in `records`")
        return rec

    def _warn_once(self, reason: str, message: str) -> None:
        if reason in self._warned:
            logger.info("CollapseMonitor: %s", message)
            return
        self._warned.add(reason)
        warnings.warn(f"CollapseMonitor: {message} (warned once; later ones are logged)",
                      MonitorWarning, stacklevel=4)

    # -- one call ------------------------------------------------------------------
    def update(self, step: int, embeddings: ArrayLike, labels: ArrayLike,
               loss: float | None = None) -> MonitorUpdate:
        """Evaluate one batch and log it.

        Parameters
        ----------
        step : int
            The training step (``>= 0``), named in warnings and the log.
        embeddings : array_like of shape (N, n)
            The batch's embeddings (any real dtype; evaluated in float64).
            From PyTorch: ``emb.detach().cpu().numpy()``.
        labels : array_like of shape (N,)
            Their class labels.
        loss : float, optional
            The loss the training reports: checked against the margin and
            ln 2 by the signatures (else the computed losses are used).

        Returns
        -------
        MonitorUpdate

        Raises
        ------
        InvalidInputError, TypeError
            Only with ``strict=True``: a bad batch, step or loss.
        """
        call = self.calls
        self.calls += 1
        problems: list[dict[str, str]] = []
        try:
            step = self._step(step)
        except _BadBatch as bad:
            self._problem(bad, None)
            problems.append({"reason": bad.reason, "message": str(bad)})
            step = None
        try:
            X, codes, dtype = self._batch(embeddings, labels)
        except _BadBatch as bad:
            self._problem(bad, step)
            rec = self._emit({"kind": "bad_batch", "call": call, "step": step,
                              "reason": bad.reason, "message": str(bad),
                              **({"problems": problems} if problems else {})})
            return MonitorUpdate(step, call, False, rec)
        reported = None
        try:
            reported = self._loss(loss)
        except _BadBatch as bad:
            self._problem(bad, step)
            problems.append({"reason": bad.reason, "message": str(bad)})

        # the statistics on `threads` numba threads and one BLAS thread (a small
        # batch always on one): on a busy machine threads spin-wait for each
        # other, 35 ms of CPU per update at B = 80, n = 16 on two against 0.8 ms
        # on one; the kernels' results do not depend on the thread count
        N, n = X.shape
        threads = 1 if serial_work(N, N, n) else self.threads
        with numba_threads(threads), single_threaded_blas():
            st = compute_collapse_statistics(X, codes, np.unique(codes), quick=True,
                                             margin=self.margin)
        sigs = detect_signatures(st, loss=reported, thresholds=self.thresholds,
                                 loss_kind=self.loss_kind, loss_reduction=self.loss_reduction)
        sigs += (self._shrinking(st, step),)
        raw = tuple(s.name for s in sigs if s.holds)
        holding, onsets, ends = self._hysteresis(raw, step)
        for s in sigs:
            if s.name in onsets:
                self._onset(s, step)
        rec: dict[str, Any] = {
            "kind": "update", "call": call, "step": step, "n_points": st.n_points,
            "dim": st.dim, "n_classes": st.n_classes, "dtype": dtype, "loss": reported,
            "stats": self._stats_record(st), "signatures": list(holding),
            "onsets": list(onsets), "ends": list(ends), "raw": list(raw),
        }
        theory = None
        due = self.theory_every and (call % self.theory_every == 0 or (
            self.theory_on_onset and any(n in _TREND_AND_COLLAPSE for n in onsets)))
        if due and step is not None:
            theory, rec["theory"] = self._theory(X, codes, step)
        if problems:
            rec["problems"] = problems
        rec = self._emit(rec)
        return MonitorUpdate(step, call, True, rec, st, sigs, holding, onsets, ends, theory)

    def _problem(self, bad: _BadBatch, step: int | None) -> None:
        if self.strict:
            raise bad.kind(str(bad)) from None
        at = f"step {step}" if step is not None else f"call {self.calls - 1}"
        self._warn_once(bad.reason, f"{at}: bad batch ({bad.reason}): {bad}; logged, not raised")

    @staticmethod
    def _step(step: Any) -> int:
        if isinstance(step, (bool, np.bool_)) or not isinstance(step, numbers.Integral):
            raise _BadBatch("step", f"`step` must be an integer >= 0; got "
                                    f"{type(step).__name__} {step!r}", TypeError)
        if int(step) < 0:
            raise _BadBatch("step", f"`step` must be an integer >= 0; got {int(step)}")
        return int(step)

    @staticmethod
    def _loss(loss: Any) -> float | None:
        if loss is None:
            return None
        try:
            value = float(loss)
        except (TypeError, ValueError):
            raise _BadBatch("loss", f"`loss` must be a real number or None; got "
                                    f"{type(loss).__name__}", TypeError) from None
        if not math.isfinite(value) or value < 0.0:
            raise _BadBatch("loss", f"`loss` must be finite and >= 0 to be checked against the "
                                    f"margin; got {value!r} (statistics kept, loss ignored)")
        return value

    @staticmethod
    def _batch(embeddings: Any, labels: Any) -> tuple[np.ndarray, np.ndarray, str]:
        try:
            E = np.asarray(embeddings)
        except Exception as exc:  # e.g. a CUDA tensor, a ragged list
            raise _BadBatch("type", f"`embeddings` must be an array of real numbers; "
                                    f"{type(embeddings).__name__} could not be converted "
                                    f"({type(exc).__name__}: {exc}); pass "
                                    "emb.detach().cpu().numpy()", TypeError) from None
        if E.dtype.kind not in "iuf":
            raise _BadBatch("type", f"`embeddings` must be an array of real numbers; got "
                                    f"dtype {E.dtype}", TypeError)
        if E.ndim != 2 or E.shape[0] < 2 or E.shape[1] < 1:
            raise _BadBatch("shape", f"`embeddings` must be a 2-D array of shape (N, n) with "
                                     f"N >= 2 and n >= 1; got shape {E.shape}")
        finite = np.isfinite(E)
        if not finite.all():
            rows = int(np.sum(~finite.all(axis=1)))
            raise _BadBatch("non_finite", f"`embeddings` must be finite; got "
                                          f"{int(np.sum(~finite))} NaN or infinite value(s) "
                                          f"in {rows} of {E.shape[0]} rows")
        try:
            y = np.asarray(labels)
        except Exception as exc:
            raise _BadBatch("type", f"`labels` could not be converted to an array "
                                    f"({type(exc).__name__}: {exc})", TypeError) from None
        if y.ndim != 1 or y.shape[0] != E.shape[0]:
            raise _BadBatch("shape", f"`labels` must be a 1-D array of length N = {E.shape[0]} "
                                     f"(one per row of `embeddings`); got shape {y.shape}")
        try:
            codes, _ = as_labels(y, E.shape[0], "labels")
            require_triplets(codes, "labels")
        except (IsoapproxError, TypeError) as exc:
            raise _BadBatch("labels", str(exc)) from None
        return as_points(E, "embeddings", min_points=2), codes, str(E.dtype)

    def _stats_record(self, st: CollapseStatistics) -> dict[str, Any]:
        out = {k: v for k, v in st.scalars().items()
               if k not in ("n_points", "dim", "n_classes", "margin", "atol")}
        # a class has collapsed when it has merged with another class: the
        # single-linkage groups of diagnose's partial_collapse signature
        mg = st.merging
        out["collapsed_classes"] = int(mg.n_merged_classes)
        out["collapsed_share"] = float(mg.n_merged_classes / st.n_classes)
        out["merged_point_share"] = float(mg.merged_share)
        out["merge_height"] = float(mg.height)
        out["diameter_running_max"] = float(self._diameter_max)
        return out

    def _hysteresis(self, raw: tuple[str, ...], step: int | None
                    ) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
        """The signatures' states after this call: (holding, onsets, ends).

        A state flips after ``k_on`` (``k_on_mismatch`` for ``loss_mismatch``)
        consecutive calls where the signature holds, or ``k_off`` where it
        does not; a call that agrees with the state resets the count.
        """
        onsets, ends = [], []
        now = set(raw)
        for name in MONITOR_SIGNATURES:
            on = name in self._holding
            if (name in now) == on:
                self._run[name] = 0
                continue
            if self._run[name] == 0:
                self._run_start[name] = step
            self._run[name] += 1
            need = self.k_off if on else (self.k_on_mismatch if name == "loss_mismatch"
                                          else self.k_on)
            if self._run[name] >= need:
                self._run[name] = 0
                (ends if on else onsets).append(name)
        self._holding = (self._holding - set(ends)) | set(onsets)
        holding = tuple(n for n in MONITOR_SIGNATURES if n in self._holding)
        return holding, tuple(onsets), tuple(ends)

    def _shrinking(self, st: CollapseStatistics, step: int | None) -> Signature:
        """``shrinking``: the diameter at most 1 / shrink_factor of its running maximum."""
        d = st.diameter
        if d > self._diameter_max:
            self._diameter_max, self._diameter_max_step = d, step
        top = self._diameter_max
        ratio = d / top if top > 0.0 else 1.0
        shrunk = bool(ratio <= 1.0 / self.shrink_factor)
        # a batch whose classes stay clearly ranked is compressing, not collapsing
        # (healthy runs with large batches or learning rates shrink early, then spread)
        score = st.retrieval.structure_score()
        ranked = bool(not math.isnan(score)
                      and score >= self.thresholds.ranked_structure_score)
        holds = shrunk and not ranked
        conv = convention_loss(st, self.loss_kind, self.loss_reduction)
        at = (f" (step {self._diameter_max_step})" if self._diameter_max_step is not None
              else "")
        text = f"The batch diameter {d:.3g} is {ratio:.2g} x its running maximum {top:.3g}{at}"
        if holds:
            text += (f", below 1/{self.shrink_factor:g}, and its classes are not ranked "
                     f"(structure score {score:.2f} < {self.thresholds.ranked_structure_score:g})"
                     f": the embedding is shrinking towards a point; the batch-hard loss is "
                     f"{conv:.4g} against the margin {self.margin:g}.")
        elif shrunk:
            text += (f", below 1/{self.shrink_factor:g}, but its classes stay ranked "
                     f"(structure score {score:.2f}): compression, not collapse.")
        else:
            text += "."
        return Signature("shrinking", holds, text, {
            "diameter": d, "running_max": top, "ratio": ratio,
            "threshold": 1.0 / self.shrink_factor, "loss": conv, "structure_score": score})

    def _onset(self, sig: Signature, step: int | None) -> None:
        at = f"step {step}" if step is not None else f"call {self.calls - 1}"
        since = self._run_start.get(sig.name)
        need = self.k_on_mismatch if sig.name == "loss_mismatch" else self.k_on
        held = (f" (held at {need} consecutive updates since step {since})"
                if need > 1 and since is not None else "")
        text = f"{at}: collapse signature '{sig.name}' started{held}. {sig.summary}"
        key = f"onset:{sig.name}"
        if key in self._warned or sig.name not in self.warn:
            logger.info("CollapseMonitor: %s", text)
            return
        self._warned.add(key)
        warnings.warn(f"CollapseMonitor: {text}", CollapseWarning, stacklevel=3)

    def _theory(self, X: np.ndarray, codes: np.ndarray, step: int):
        opts = self.theory
        seq = np.random.SeedSequence([opts.seed, step])
        sub_seed, solver_seed = (int(s) for s in seq.generate_state(2))
        idx = theory_subsample(codes, opts.max_points, rng=sub_seed)
        t0 = time.perf_counter()
        try:
            sub, _ = as_labels(codes[idx], idx.size, "labels")
            require_triplets(sub, "labels")
            Xs = X[idx]
            # a few points: one BLAS and one numba thread (OpenBLAS's threads cost
            # 100 ms of CPU on one 16 x 128 SVD of the thickness on a busy machine)
            with warnings.catch_warnings(), quiet_threads():
                # an open bracket is recorded (certified: false), not warned about
                warnings.simplefilter("ignore", ConvergenceWarning)
                iso, iso_dim = _iso_in_span(Xs, sub, self.margin, opts, solver_seed)
                res = evaluate_core(Xs, sub, self.margin, opts, solver_seed, iso_res=iso)[0]
        except Exception as exc:  # the theory is an extra: it never stops training
            if self.strict:
                raise
            self._warn_once("theory", f"step {step}: the theory could not be evaluated "
                                      f"({type(exc).__name__}: {exc})")
            return None, {"error": f"{type(exc).__name__}: {exc}"}
        row = res.to_row()
        solves = res.solver_results.values()
        row.update(batch_points=int(X.shape[0]), evaluated=int(idx.size),
                   subsampled=bool(idx.size < X.shape[0]), effort=opts.effort,
                   budget=dict(res.solver_results["iso"].budget),
                   reproducible=all(r.reproducible for r in solves), iso_dim=iso_dim,
                   seconds=time.perf_counter() - t0)
        return res, row

    # -- reading back --------------------------------------------------------------
    def history(self) -> MonitorHistory:
        """This session's records as a :class:`MonitorHistory` (no file needed)."""
        return MonitorHistory.from_records(self.records, source="memory")


def _iso_in_span(X: np.ndarray, codes: np.ndarray, margin: float, opts: TheoryOptions,
                 rng: int) -> tuple[IdealResult | None, int]:
    """``d_iso(X, F_TS)`` searched in the span of ``N`` points in ``R^n``, ``n >= N``.

    ``d_iso`` sees only the table of pair distances, and ``N`` points realise
    their table in ``R^(N-1)``, so ``d_iso(X, F_TS(R^n)) = d_iso(Y, F_TS(R^(N-1)))``
    for any ``Y`` with the distance table of ``X``: here ``Y`` holds the
    coordinates of ``X - mean`` in an orthonormal basis ``Q`` of its span
    (a QR factorisation), and the search in ``R^(N-1)`` (the monitor's 16
    points in ``R^128``: 8 times fewer variables, the shipped ``D*`` layouts
    apply) costs a fraction of that in ``R^n``.  Its solution is moved back
    by ``Q`` and re-scored against ``X`` in float64; every proven lower
    bound is lowered by the measured change of the distance table and a
    rounding allowance (:data:`SPAN_ULPS`), so the bracket stays proven for
    ``X``.

    Returns the result for ``X`` (its ``embedding`` in ``R^n``) and the
    dimension searched, or ``(None, n)`` when there is nothing to gain
    (``n < N``, or ``X`` or ``Y`` already triplet-separated) or the moved-back
    solution is not triplet-separated in float64 even after a rounding
    repair; then :func:`isoapprox.evaluate_theory` searches in ``R^n``.
    """
    N, n = X.shape
    m = N - 1
    if n <= m or compute_worst_slack(X, codes, margin) >= 0.0:
        return None, n
    centre = X.mean(axis=0)
    Q, R = np.linalg.qr((X - centre).T)  # X - centre = R^T Q^T; the last row of R ~ 0
    Q, Y = Q[:, :m], np.ascontiguousarray(R.T[:, :m])
    res = solve_nearest(Y, codes, margin, rng, opts.solver_options("iso"))
    if res.value == 0.0:  # separated up to rounding: let the search in R^n say so
        return None, n
    G = centre + res.embedding @ Q.T
    slack = compute_worst_slack(G, codes, margin)
    if slack < 0.0 and margin > 0.0:
        # rounding of the move broke an active triplet: scale about the centroid
        # (the solver's own repair), which changes d_iso by rounding units
        diff = compute_worst_slack(G, codes, 0.0)
        if diff > 0.0:
            g = G.mean(axis=0)
            G = g + (G - g) * (max(margin / diff, 1.0) * (1.0 + 1e-12))
            slack = compute_worst_slack(G, codes, margin)
    if not slack >= 0.0:
        return None, n
    scale = max(compute_farthest_pair(X)[0], margin)
    moved = compute_isometric_error(X, np.pad(Y, ((0, 0), (0, n - m))))
    drop = moved + SPAN_ULPS * (n + 4) * np.finfo(float).eps * scale
    value = compute_isometric_error(X, G)
    bounds = {k: max(v - drop, 0.0) for k, v in res.bounds.items()}
    bracket = Bracket.relative(float(value), float(max(res.lower - drop, 0.0)), tol=res.tol,
                               floor=FLOOR_RTOL * scale, lower_source=res.lower_source,
                               upper_source=res.bracket.upper_source)
    status = "certified" if bracket.certified else (
        "exhausted" if res.status == "certified" else res.status)
    return dataclasses.replace(
        res, embedding=G, bracket=bracket, status=status, slack=float(slack),
        kind=embedding_kind(G, codes, scale), bounds=bounds), m


def _is_text(path: Path, limit: int = 1 << 16) -> bool:
    """Whether the first ``limit`` bytes of ``path`` are UTF-8 (a character cut at
    the limit allowed)."""
    with open_regular(path, "log") as fh:
        head = fh.read(limit)
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
    except UnicodeDecodeError:
        return False
    return True


def _check_header(rec: Any, path: Path, name: str) -> None:
    if not (isinstance(rec, dict) and rec.get("kind") == "header"
            and rec.get("format") == FORMAT):
        found = (f"format {rec.get('format')!r}" if isinstance(rec, dict) and "format" in rec
                 else f"first line {str(rec)[:60]!r}")
        raise InvalidInputError(
            f"`{name}` {str(path)!r} is not a CollapseMonitor log (expected a first line with "
            f"kind 'header' and format {FORMAT!r}; got {found})")
    if rec.get("format_version") != FORMAT_VERSION:
        raise InvalidInputError(
            f"`{name}` {str(path)!r} has format_version {rec.get('format_version')!r}; this "
            f"isoapprox reads {FORMAT_VERSION}")


@dataclass(frozen=True)
class MonitorHistory:
    """A monitor log read back (:func:`read_history`, :meth:`CollapseMonitor.history`).

    ``headers`` are the header lines (one per segment: a continued log has
    several), ``updates`` the evaluated calls and ``bad_batches`` the others,
    each in log order, as dictionaries (docs/monitor.md, "The log").
    """

    source: str
    headers: tuple[dict[str, Any], ...]
    updates: tuple[dict[str, Any], ...]
    bad_batches: tuple[dict[str, Any], ...]

    @classmethod
    def from_records(cls, records: Sequence[Mapping[str, Any]], *,
                     source: str = "") -> MonitorHistory:
        """Split log records by kind (records of unknown kinds are kept out)."""
        kinds: dict[str, list] = {"header": [], "update": [], "bad_batch": []}
        for r in records:
            if isinstance(r, Mapping) and r.get("kind") in kinds:
                kinds[r["kind"]].append(dict(r))
        return cls(source, tuple(kinds["header"]), tuple(kinds["update"]),
                   tuple(kinds["bad_batch"]))

    @property
    def margin(self) -> float | None:
        """The margin of the last segment."""
        return self.headers[-1]["config"]["margin"] if self.headers else None

    def column(self, key: str, section: str | None = "stats") -> np.ndarray:
        """``update[section][key]`` over the updates, NaN where absent (float array)."""
        out = np.full(len(self.updates), np.nan)
        for k, u in enumerate(self.updates):
            src = u if section is None else u.get(section)
            v = src.get(key) if isinstance(src, Mapping) else None
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                out[k] = v
        return out

    def steps(self) -> np.ndarray:
        """The step of each update (NaN where the step was invalid)."""
        return self.column("step", None)

    def signature_intervals(self) -> list[dict[str, Any]]:
        """When each signature held: ``{"signature", "start", "end"}`` in log order.

        ``start`` is the step of the first update where it held, ``end`` the
        step of the first later update where it no longer held (None: it held
        to the last update).
        """
        open_: dict[str, dict[str, Any]] = {}
        out: list[dict[str, Any]] = []
        for u in self.updates:
            now = set(u.get("signatures", ()))
            for name in list(open_):
                if name not in now:
                    open_.pop(name)["end"] = u.get("step")
            for name in u.get("signatures", ()):
                if name not in open_:
                    iv = {"signature": name, "start": u.get("step"), "end": None}
                    open_[name] = iv
                    out.append(iv)
        return out

    def signature_summary(self) -> dict[str, dict[str, Any]]:
        """Per signature that ever held, a bounded digest of :meth:`signature_intervals`.

        ``{"onsets": count, "first": first interval, "last": last interval,
        "held_updates": updates where it held, "holding": whether it held at
        the last update}``: a few numbers however often it flapped.
        """
        out: dict[str, dict[str, Any]] = {}
        for iv in self.signature_intervals():
            d = out.setdefault(iv["signature"], {"onsets": 0, "first": iv})
            d["onsets"] += 1
            d["last"] = iv
        last = set(self.updates[-1].get("signatures", ())) if self.updates else set()
        for name, d in out.items():
            d["held_updates"] = sum(1 for u in self.updates if name in u.get("signatures", ()))
            d["holding"] = name in last
        return out

    def theory_updates(self) -> list[dict[str, Any]]:
        """The updates at which the theory was evaluated (without an error)."""
        return [u for u in self.updates
                if isinstance(u.get("theory"), Mapping) and "error" not in u["theory"]]

    def summary(self) -> dict[str, Any]:
        """Counts, first and last step, signature intervals, bad batches, the last numbers."""
        steps = [u["step"] for u in self.updates if u.get("step") is not None]
        reasons: dict[str, dict[str, Any]] = {}
        for b in self.bad_batches:
            r = reasons.setdefault(b["reason"], {"count": 0, "first_step": b.get("step")})
            r["count"] += 1
        th = self.theory_updates()
        last = self.updates[-1] if self.updates else None
        return {
            "source": self.source, "segments": len(self.headers), "margin": self.margin,
            "updates": len(self.updates), "bad_batches": len(self.bad_batches),
            "bad_batch_reasons": reasons,
            "first_step": min(steps) if steps else None,
            "last_step": max(steps) if steps else None,
            "theory_evaluations": len(th),
            # bounded: first and last interval and counts, not every interval
            "signatures": self.signature_summary(),
            "last": None if last is None else {
                "step": last.get("step"), "n_points": last.get("n_points"),
                "dim": last.get("dim"), "n_classes": last.get("n_classes"),
                "loss": last.get("loss"), **last.get("stats", {})},
            "last_theory": None if not th else {"step": th[-1].get("step"), **th[-1]["theory"]},
        }


def read_history(path: str | os.PathLike) -> MonitorHistory:
    """Read a :class:`CollapseMonitor` log (a torn last line is dropped).

    Parameters
    ----------
    path : str or os.PathLike
        The monitor's log (JSON lines with a header line).

    Returns
    -------
    MonitorHistory
        The log's records, by step.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    InvalidInputError
        If the file is empty, not UTF-8 text, not a monitor log, or corrupt
        before its last line.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"monitor log not found: {path}")
    if path.is_dir():
        raise InvalidInputError(f"`{path}` is a folder; expected a monitor log (JSON lines)")
    records = read_jsonl(path)  # a corrupt line (not UTF-8, not JSON) before the last: one line
    if not records:
        if not _is_text(path):
            raise InvalidInputError(f"`{path}` is not a text file; expected a monitor log "
                                    "(JSON lines)")
        raise InvalidInputError(f"`{path}` holds no records; expected a monitor log (JSON lines "
                                "with a header line)")
    _check_header(records[0], path, "log")
    return MonitorHistory.from_records(records, source=str(path))
