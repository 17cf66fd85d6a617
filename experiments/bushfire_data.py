"""Generated data for the bushfire case study of the dissertation's §5.6.4 (Listing 5.2,
Figure 5.16a): GOES-16 hotspot observations as the stream, ground-station readings as
remote data. The source's dataset is not public; this one is generated to its
description, and every number below is an assumption of drsim's, not the source's.

**Stream.** One day of a region of ``areas`` areas from 05:00 to 19:00 (``time`` in
minutes of the day, so that Listing 5.2's ``a.time>=6:00`` and ``c.time<18:00`` read it).
The satellite scans the region every 5 minutes (GOES-16's CONUS cadence); a scan reports
the pixels that pass its fire pre-filter, each in channels 7 (mid-wave IR), 14 (long-wave
IR) and 16 (CO₂), as three ``Satellite`` events spread over the scan's 5 minutes with
the attributes ``channel``, ``level`` (``"low"``, ``"mid"``, ``"high"``), ``boundary``
(the pixel; ``OVERLAP(boundary)`` is its area, :func:`overlap`), ``temperature`` and
``humidity`` (the keys of the area's ground-station readings at the remote source).
A share ``burning`` of the areas burn that day, from a start hour U(6, 15) for U(1, 4)
hours, and report a hotspot pixel in a scan with probability 0.25; every area reports a
false alarm (warm ground, sun glint) with probability ``false_alarm`` a scan. A fire
pixel is high in channel 7 with probability 0.9, lower in channel 14 than in 7 with 0.8
and high in channel 16 with 0.7; a false alarm 0.5, 0.3 and 0.3.

**Remote data** (:func:`remote_table`): per area, the day's peak temperature [°C] and
lowest relative humidity [%] of its ground station, under keys ``2·area`` and
``2·area + 1``: a burning area U(44, 60) °C and U(8, 26) %, another U(15, 45) °C and
U(20, 80) %, so that Listing 5.2's thresholds (46.51 °C, 23.38 %) mostly, not always,
tell them apart. (The text says humidity "above 23.38" where the listing says ``<=``;
the listing is followed.)

>>> events = stream(areas=20, seed=1)
>>> sorted({e["channel"] for e in events}), events[0]["time"] >= 300
([7, 14, 16], True)
>>> all(a["time"] <= b["time"] for a, b in zip(events, events[1:]))
True
"""

from __future__ import annotations

import numpy as np

__all__ = ["LISTING_5_2", "LEVELS", "stream", "remote_table", "params",
           "overlap", "udf1"]

#: Listing 5.2 as the tests' fixture holds it (the stray parenthesis removed)
LISTING_5_2 = (
    "PATTERN SEQ(Satellite a, Satellite b, Satellite c)+ "
    "WHERE SAME[OVERLAP(boundary)] AND a.channel=7 AND a.time>=6:00 "
    "AND a.level=high AND b.channel=14 AND UDF1[a.level,b.level]=high "
    "AND c.channel=16 AND c.time<18:00 AND REMOTE[c.temperature]>=46.51°C "
    "AND c.level=high AND REMOTE[c.humidity]<=23.38 "
    "WITHIN 1h")

LEVELS = ("low", "mid", "high")
START, END, SCAN = 5 * 60, 19 * 60, 5  # minutes of the day
PIXELS = 4  # pixels (boundaries) per area
DETECT = 0.25  # P(a burning area reports a hotspot in a scan)
FIRE = (0.9, 0.8, 0.7)  # P(ch7 high), P(ch14 below ch7), P(ch16 high)
FALSE_ALARM = (0.5, 0.3, 0.3)


def overlap(boundary: int) -> int:
    """The area a pixel's boundary overlaps (Listing 5.2's ``OVERLAP``).

    >>> overlap(9)
    2
    """
    return int(boundary) // PIXELS


def udf1(level7: str, level14: str) -> str:
    """Listing 5.2's ``UDF1``: ``"high"`` when the mid-wave IR level (channel 7) is above
    the long-wave one (channel 14).

    >>> udf1("high", "mid"), udf1("mid", "high")
    ('high', 'low')
    """
    return "high" if LEVELS.index(level7) > LEVELS.index(level14) else "low"


def params() -> dict:
    """The listing's parameters: ``high``, ``UDF1`` and ``OVERLAP``."""
    return {"high": "high", "UDF1": udf1, "OVERLAP": overlap}


def _fires(areas: int, burning: float, rng) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Which areas burn, and from when to when [minutes of the day]."""
    burns = rng.random(areas) < burning
    start = rng.uniform(6 * 60, 15 * 60, areas)
    return burns, start, start + rng.uniform(60, 240, areas)


def stream(areas: int = 40, burning: float = 0.1, false_alarm: float = 0.05,
           seed: int = 0) -> list[dict]:
    """The day's ``Satellite`` events of ``areas`` areas (module doc), in time order."""
    rng = np.random.default_rng(seed)
    burns, start, end = _fires(areas, burning, rng)
    scans = np.arange(START, END, SCAN, dtype=float)
    t = scans[:, None]
    fire = burns & (t >= start) & (t < end) & (rng.random((len(scans), areas)) < DETECT)
    alarm = ~fire & (rng.random((len(scans), areas)) < false_alarm)
    scan_i, area = np.nonzero(fire | alarm)
    is_fire = fire[scan_i, area]
    n = len(area)
    p = np.where(is_fire[:, None], FIRE, FALSE_ALARM)
    draws = rng.random((n, 3)) < p
    l7 = np.where(draws[:, 0], 2, 1)
    l14 = np.where(draws[:, 1], l7 - 1, np.minimum(l7 + 1, 2))
    l16 = np.where(draws[:, 2], 2, rng.integers(0, 2, n))
    boundary = area * PIXELS + rng.integers(0, PIXELS, n)
    offsets = np.sort(rng.uniform(0, SCAN, (n, 3)), axis=1)  # channels 7, 14, 16 in turn
    times = scans[scan_i][:, None] + offsets
    cols = [(7, l7), (14, l14), (16, l16)]
    events = [{"type": "Satellite", "time": float(times[i, k]), "channel": ch,
               "level": LEVELS[int(lv[i])], "boundary": int(boundary[i]),
               "temperature": int(2 * area[i]), "humidity": int(2 * area[i] + 1)}
              for i in range(n) for k, (ch, lv) in enumerate(cols)]
    events.sort(key=lambda e: e["time"])
    return events


def remote_table(areas: int = 40, burning: float = 0.1, seed: int = 0) -> dict[int, float]:
    """The ground stations' readings (module doc), drawn after the same fires as
    :func:`stream` with the same arguments and seed."""
    rng = np.random.default_rng(seed)
    burns, _, _ = _fires(areas, burning, rng)
    r = np.random.default_rng([seed, 1])
    temp = np.where(burns, r.uniform(44, 60, areas), r.uniform(15, 45, areas))
    humid = np.where(burns, r.uniform(8, 26, areas), r.uniform(20, 80, areas))
    table = {}
    for a in range(areas):
        table[2 * a], table[2 * a + 1] = float(temp[a]), float(humid[a])
    return table
