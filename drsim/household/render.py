"""Load rendered from what a run committed.

Each cycle phase and each charging session is a rectangle [start, end) × kW added to a
per-household minute grid by a difference array and a cumulative sum, in whole µkW so
that every sum is exact in any order (docs/architecture.md, "Determinism").
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from drsim.household.starts import Batch
from drsim.units import MICRO


def session_minutes(b: Batch) -> np.ndarray:
    r"""Compute the whole minutes a charging session occupies the charger.

    The session charges at the charger's full power, the last minute partly
    (:func:`ev_rectangles`); drsim's reading of §6.3.1's EV sessions
    (docs/decisions.md, "Load model data and its sources"):

    .. math:: m = \lceil 60 \cdot E / P \rceil

    Parameters
    ----------
    b : Batch
        EV sessions with energy to charge ``energy_kwh`` E [kWh] and charger power ``kw``
        P [kW].

    Returns
    -------
    numpy.ndarray
        Minutes on the charger [min], int64.

    Examples
    --------
    >>> from drsim.household.starts import make_batch
    >>> b = make_batch(np.array([0]), np.array([1110]), -1, 0, np.array([0]),
    ...                energy_kwh=np.array([10.0]), kw=np.array([7.0]))
    >>> session_minutes(b).tolist()  # 10 kWh at 7 kW: 85.7 minutes
    [86]
    """
    return np.ceil(b.energy_kwh / b.kw * 60.0 - 1e-9).astype(np.int64)


def micro_kw(kw) -> np.ndarray:
    """Round kW to whole µkW.

    Parameters
    ----------
    kw : array_like
        Power [kW].

    Returns
    -------
    numpy.ndarray
        Power [µkW], whole numbers as float64 (sums are exact below 2**53 µkW).

    Examples
    --------
    >>> micro_kw([0.0012, 2.0]).tolist()
    [1200.0, 2000000.0]
    """
    return np.round(np.asarray(kw, dtype=np.float64) * MICRO)


def rectangle_entries(rows, start, end, micro, lo: int, hi: int,
                      minute_major: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    r"""Turn load rectangles into the steps of a difference array.

    A rectangle is a power drawn over minutes [start, end); its steps on a grid of rows ×
    (hi-lo+1) minutes are +power where it starts and −power where it ends (clipped to
    [lo, hi)), so that the running sum over minutes (:func:`render_entries`) is the load

    .. math:: L_{r,t} = \sum_{i:\ row_i = r} P_i \cdot [s_i \le t < e_i]

    Powers are whole µkW, so every sum is an exact integer and the result does not
    depend on the order of the rectangles (chunking); drsim's way of summing loads
    (docs/architecture.md, "Determinism"). A rectangle outside [lo, hi), or empty, has
    both steps in one cell, which add up to exactly zero; when most are, they are left
    out. Every rectangle ends at or after its start.

    Parameters
    ----------
    rows : numpy.ndarray
        Grid row of each rectangle (int).
    start, end : numpy.ndarray
        Minutes of each rectangle, end excluded [minutes since midnight of the DR day].
    micro : numpy.ndarray
        Power of each rectangle [µkW], whole numbers.
    lo, hi : int
        The grid's minutes, hi excluded [minutes since midnight of the DR day].
    minute_major : int, optional
        The grid's rows, for a grid stored minute by minute (:func:`step_grid`); None:
        row by row.

    Returns
    -------
    index : numpy.ndarray
        Flat index ``row * (hi-lo+1) + minute - lo`` of each step, or
        ``(minute - lo) * minute_major + row`` in a grid stored minute by minute.
    weight : numpy.ndarray
        The step [µkW]: +power at the start, −power at the end.

    Examples
    --------
    >>> index, weight = rectangle_entries(np.array([0, 1]), np.array([1, 0]),
    ...                                   np.array([3, 2]), np.array([5.0, 7.0]), 0, 4)
    >>> index.tolist(), weight.tolist()
    ([1, 5, 3, 7], [5.0, 7.0, -5.0, -7.0])
    """
    pieces = rectangle_steps(rows, start, end, micro, lo, hi, minute_major)
    return np.concatenate([i for i, _ in pieces]), np.concatenate([w for _, w in pieces])


def rectangle_steps(rows, start, end, micro, lo: int, hi: int,
                    minute_major: int | None = None) -> list[tuple[np.ndarray, np.ndarray]]:
    """Turn load rectangles into steps, in two pieces: the starts' and the ends'.

    The steps of :func:`rectangle_entries`, not joined: :func:`step_grid` joins all the
    pieces of a grid at once.

    Parameters
    ----------
    rows, start, end, micro, lo, hi, minute_major
        As for :func:`rectangle_entries`.

    Returns
    -------
    list of tuple of numpy.ndarray
        ``[(index, +micro), (index, −micro)]`` [µkW].

    Examples
    --------
    >>> [(i.tolist(), w.tolist()) for i, w in rectangle_steps(
    ...     np.array([0]), np.array([1]), np.array([3]), np.array([5.0]), 0, 4)]
    [([1], [5.0]), ([3], [-5.0])]
    """
    width = hi - lo
    s, e = start - lo, end - lo  # new arrays, then changed in place: fewer temporaries
    np.clip(s, 0, width, out=s)
    np.clip(e, 0, width, out=e)
    if s.size and (s == e).mean() > 0.5:  # mostly outside [lo, hi): leave those out
        keep = s != e
        rows, micro, s, e = rows[keep], micro[keep], s[keep], e[keep]
    if minute_major is None:  # row * (width + 1) + minute
        base = rows * (width + 1)
        s += base
        e += base
    else:  # minute * rows + row
        s *= minute_major
        s += rows
        e *= minute_major
        e += rows
    return [(s, micro), (e, -micro)]


def step_grid(n_rows: int, entries: list[tuple[np.ndarray, np.ndarray]], lo: int,
              hi: int, minute_major: bool = False, peak: float | None = None) -> np.ndarray:
    """Add step entries up per cell of a minute grid (the difference array of a load).

    Whole µkW add up exactly in float64; where ``peak`` bounds every row's steps and
    running sums below 2^31, they add up exactly in int32 as well, in half the memory and
    faster.

    Parameters
    ----------
    n_rows : int
        Rows of the grid (households, categories).
    entries : list of tuple of numpy.ndarray
        ``(index, weight)`` steps from :func:`rectangle_entries` [µkW].
    lo, hi : int
        The grid's minutes, hi excluded [minutes since midnight of the DR day].
    minute_major : bool, default False
        Store the grid minute by minute, (hi-lo+1, n_rows), for entries made with
        ``minute_major=n_rows``.
    peak : float, optional
        A bound on the sum of the absolute powers of any row's rectangles [µkW]
        (:func:`row_peaks`); None: float64.

    Returns
    -------
    numpy.ndarray
        (n_rows, hi-lo+1) steps [µkW], or (hi-lo+1, n_rows) minute by minute; whole
        numbers (float64, or int32 under ``peak``): grids of the same shape add up
        exactly, in any order.

    Examples
    --------
    >>> step_grid(1, [(np.array([1, 3]), np.array([5.0, -5.0]))], 0, 4).tolist()
    [[0.0, 5.0, 0.0, -5.0, 0.0]]
    >>> step_grid(1, [(np.array([1, 3]), np.array([5.0, -5.0]))], 0, 4, peak=5.0).tolist()
    [[0, 5, 0, -5, 0]]
    """
    stride = hi - lo + 1
    idx = np.concatenate([i for i, _ in entries])
    w = np.concatenate([w for _, w in entries])
    shape = (stride, n_rows) if minute_major else (n_rows, stride)
    if peak is not None and peak < _INT32_LIMIT:
        grid = np.zeros(n_rows * stride, dtype=np.int32)
        np.add.at(grid, idx, w.astype(np.int32))
        return grid.reshape(shape)
    return np.bincount(idx, weights=w, minlength=n_rows * stride).reshape(shape)


_INT32_LIMIT = 2**31  # int32 holds every whole µkW below it exactly


def row_peaks(n_rows: int, rectangles: Sequence[tuple[np.ndarray, ...]]) -> np.ndarray:
    """Bound each row's load: the sum of the absolute powers of its rectangles.

    No minute of a row's load, and no sum of its steps, exceeds it in absolute value
    (:func:`step_grid`'s ``peak``).

    Parameters
    ----------
    n_rows : int
        Rows of the grid.
    rectangles : list of tuple of numpy.ndarray
        ``(row, start, end, micro)`` pieces (:func:`phase_rectangles`, :func:`ev_rectangles`)
        [µkW].

    Returns
    -------
    numpy.ndarray
        (n_rows,) bound [µkW].

    Examples
    --------
    >>> row_peaks(2, [(np.array([0, 0, 1]), None, None, np.array([5.0, -2.0, 7.0]))]).tolist()
    [7.0, 7.0]
    """
    out = np.zeros(n_rows)
    for rows, _, _, micro in rectangles:
        out += np.bincount(rows, weights=np.abs(micro), minlength=n_rows)
    return out


def render_steps(steps: np.ndarray, divisor: float = 1.0, dtype=np.float64,
                 minute_major: bool = False) -> np.ndarray:
    """Sum a grid of steps along the minutes into loads of whole µkW / ``divisor``.

    The running sums are taken in place (``steps`` is used up): by rows in blocks that
    fit in the CPU cache, or, for a grid stored minute by minute, one minute after the
    other over all rows at once (each row's sums are the same, in the same order, and
    come out faster for many rows).

    Parameters
    ----------
    steps : numpy.ndarray
        (n_rows, minutes + 1) steps from :func:`step_grid` [µkW], or (minutes + 1,
        n_rows) with ``minute_major``.
    divisor : float, default 1.0
        Divides the sums: :data:`MICRO` gives kW.
    dtype : numpy dtype, default numpy.float64
        Type of the result.
    minute_major : bool, default False
        ``steps`` is stored minute by minute.

    Returns
    -------
    numpy.ndarray
        (n_rows, minutes) load per minute [µkW / ``divisor``]; with ``minute_major`` a
        view in Fortran (column-major) order.

    Examples
    --------
    >>> render_steps(np.array([[0.0, 5.0, 0.0, -5.0, 0.0]])).tolist()
    [[0.0, 5.0, 5.0, 0.0]]
    >>> render_steps(np.array([[0.0], [5.0], [0.0], [-5.0], [0.0]]), minute_major=True).tolist()
    [[0.0, 5.0, 5.0, 0.0]]
    """
    if minute_major:
        minutes = steps.shape[0] - 1
        for t in range(1, minutes):
            np.add(steps[t], steps[t - 1], out=steps[t])
        out = np.empty((minutes, steps.shape[1]), dtype=dtype)
        np.divide(steps[:minutes], divisor, out=out, casting="same_kind")
        return out.T
    n_rows, stride = steps.shape
    out = np.empty((n_rows, stride - 1), dtype=dtype)
    for b in range(0, n_rows, _BLOCK_ROWS):
        block = steps[b : b + _BLOCK_ROWS, : stride - 1]
        np.cumsum(block, axis=1, out=block)
        if divisor != 1.0:  # divided in float64, then rounded to ``dtype``
            np.divide(block, divisor, out=out[b : b + _BLOCK_ROWS], casting="same_kind")
        else:
            out[b : b + _BLOCK_ROWS] = block
    return out


def render_entries(n_rows: int, entries: list[tuple[np.ndarray, np.ndarray]], lo: int,
                   hi: int, divisor: float = 1.0, dtype=np.float64,
                   minute_major: bool = False) -> np.ndarray:
    """Sum step entries into a minute grid of whole µkW / ``divisor``.

    The steps of all entries are added per grid cell (:func:`step_grid`) and summed along
    the minutes (:func:`render_steps`).

    Parameters
    ----------
    n_rows, entries, lo, hi
        As for :func:`step_grid`.
    divisor, dtype, minute_major
        As for :func:`render_steps`.

    Returns
    -------
    numpy.ndarray
        (n_rows, hi-lo) load per minute [µkW / ``divisor``].
    """
    return render_steps(step_grid(n_rows, entries, lo, hi, minute_major), divisor, dtype,
                        minute_major)


#: load rectangles: row, start and end [minutes since midnight of the DR day), power [µkW]
Rectangles = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
_BLOCK_ROWS = 128  # rows per block: 128 × 1441 float64 ≈ 1.5 MB


def render_rectangles(n_rows: int, rows, start, end, micro, lo: int, hi: int) -> np.ndarray:
    """Sum rectangles [start, end) × µkW into a minute grid of whole µkW.

    Parameters
    ----------
    n_rows : int
        Rows of the grid.
    rows, start, end, micro : numpy.ndarray
        Row, minutes [start, end) [minutes since midnight of the DR day] and power [µkW]
        of each rectangle, as for :func:`rectangle_entries`.
    lo, hi : int
        The grid's minutes, hi excluded [minutes since midnight of the DR day].

    Returns
    -------
    numpy.ndarray
        (n_rows, hi-lo) load per minute [µkW].

    Examples
    --------
    >>> render_rectangles(2, np.array([0, 1, 0]), np.array([1, 0, 2]), np.array([3, 2, 6]),
    ...                   np.array([5.0, 7.0, 1.0]), 0, 4).tolist()
    [[0.0, 5.0, 6.0, 1.0], [7.0, 7.0, 0.0, 0.0]]
    """
    return render_entries(n_rows, [rectangle_entries(rows, start, end, micro, lo, hi)], lo, hi)


def appliance_rectangles(cat, b: Batch, lo: int, hi: int, key: np.ndarray | None = None):
    """Turn appliance cycles into load rectangles, one per phase.

    A cycle runs its phases back to back from its start, each at its power for its
    minutes (the catalogue's ``phases``: the cycle energy of the CREST model [1]_, shaped
    as the data file's ``phases_source`` says). Phase power is counted above the
    appliance's standby (standby is added per household).

    Parameters
    ----------
    cat : Catalogue
        The appliance catalogue.
    b : Batch
        Committed appliance starts [minutes since midnight of the DR day].
    lo, hi : int
        Only cycles overlapping [lo, hi) are kept [minutes since midnight of the DR day].
    key : numpy.ndarray, optional
        Grid row each start's rectangles are added to; default the household row.

    Returns
    -------
    key, start, end, micro : numpy.ndarray
        Row, minutes [start, end) [minutes since midnight of the DR day] and power above
        standby [µkW] of each phase.

    References
    ----------
    .. [1] I. Richardson, M. Thomson, D. Infield, C. Clifford, "Domestic electricity use:
       A high-resolution energy demand model", Energy and Buildings 42(10), 1878-1887,
       2010.

    Examples
    --------
    >>> from drsim.household.appliances import load_catalogue
    >>> cat = load_catalogue()
    >>> from drsim.household.starts import make_batch
    >>> b = make_batch(np.array([0]), np.array([1110]), cat.index("washing_machine"), 0,
    ...                np.array([0]))
    >>> [x.tolist() for x in appliance_rectangles(cat, b, 0, 1440)]
    [[0, 0, 0], [1110, 1125, 1218], [1125, 1218, 1248], [1999000.0, 119000.0, 494600.0]]
    """
    keep = _overlapping(cat, b, lo, hi)
    pieces = phase_rectangles(cat, b.take(keep), lo, hi, None if key is None else key[keep])
    return tuple(np.concatenate([piece[j] for piece in pieces]) for j in range(4))


def _overlapping(cat, b: Batch, lo: int, hi: int) -> np.ndarray:
    """Which cycles of ``b`` overlap [lo, hi)."""
    return (b.t < hi) & (b.t + cat.cycle_minutes[b.appliance] > lo)


def phase_rectangles(cat, b: Batch, lo: int, hi: int, key: np.ndarray | None = None
                     ) -> list[Rectangles]:
    """Turn appliance cycles into load rectangles, phase by phase.

    The rectangles of :func:`appliance_rectangles`, not joined: one piece per phase that
    some cycle has.

    Parameters
    ----------
    cat, b, lo, hi, key
        As for :func:`appliance_rectangles`; cycles outside [lo, hi) may be kept (their
        steps add up to zero).

    Returns
    -------
    list of tuple of numpy.ndarray
        ``(key, start, end, micro)`` per phase [minutes since midnight of the DR day,
        µkW].
    """
    a, s, k = b.appliance, b.t, (b.row if key is None else key)
    keep = _overlapping(cat, b, lo, hi)
    if keep.size and keep.mean() < 0.9:  # cycles outside [lo, hi) cancel; many: a copy
        a, s, k = a[keep], s[keep], k[keep]
    pieces = []
    for p in range(cat.phase_minutes.shape[1]):
        if p:  # most cycles have one phase: go on with the others only
            more = np.flatnonzero(cat.phase_count[a] > p)
            a, s, k = a[more], s[more], k[more]
            if not len(a):
                break
        end = s + cat.phase_minutes[a, p]
        pieces.append((k, s, end, cat.phase_micro_kw[a, p]))
        s = end
    return pieces


def ev_rectangles(b: Batch, key: np.ndarray | None = None) -> Rectangles:
    r"""Turn EV charging sessions into load rectangles.

    A session draws the charger's full power :math:`P` for its whole minutes and the
    remainder in the last one, so that it delivers exactly its energy :math:`E`:
    :math:`\lfloor 60 E / P \rfloor` minutes at :math:`P`, then one minute at
    :math:`P \cdot (60 E / P - \lfloor 60 E / P \rfloor)`. drsim's reading of §6.3.1's EV
    sessions (docs/decisions.md, "Load model data and its sources").

    Parameters
    ----------
    b : Batch
        Committed EV sessions: start [minutes since midnight of the DR day], energy to
        charge ``energy_kwh`` [kWh], charger power ``kw`` [kW].
    key : numpy.ndarray, optional
        Grid row each session's rectangles are added to; default the household row.

    Returns
    -------
    key, start, end, micro : numpy.ndarray
        Row, minutes [start, end) [minutes since midnight of the DR day] and power [µkW]
        of each rectangle (two per session).

    Examples
    --------
    >>> from drsim.household.starts import make_batch
    >>> b = make_batch(np.array([0]), np.array([1110]), -1, 0, np.array([0]),
    ...                energy_kwh=np.array([10.0]), kw=np.array([7.0]))
    >>> [x.tolist() for x in ev_rectangles(b)]  # 85 minutes at 7 kW, then 5 kW for one
    [[0, 0], [1110, 1195], [1195, 1196], [7000000.0, 5000000.0]]
    """
    minutes = b.energy_kwh / b.kw * 60.0
    full = np.floor(minutes + 1e-9).astype(np.int64)
    tail = np.maximum(minutes - full, 0.0)
    k = b.row if key is None else key
    return (np.concatenate([k, k]), np.concatenate([b.t, b.t + full]),
            np.concatenate([b.t + full, b.t + full + 1]),
            micro_kw(np.concatenate([b.kw, b.kw * tail])))
