"""drsim.units: clock times are read and written in one place."""

from __future__ import annotations

import pytest

from drsim.units import DAY, clock, clock_minutes, clock_minutes_or_none, is_clock


def test_every_minute_of_the_day_goes_to_text_and_back():
    for minute in range(DAY + 1):
        text = clock(minute)
        assert is_clock(text)
        assert clock_minutes(text) == clock_minutes_or_none(text) == minute


@pytest.mark.parametrize("text", ["24:01", "25:00", "18:60", "1830", "18:3", "", "noon"])
def test_what_is_not_a_clock_time(text):
    assert not is_clock(text)
    with pytest.raises(ValueError, match="expected a clock time HH:MM"):
        clock_minutes(text)
    with pytest.raises(ValueError, match="t_nc: expected a clock time"):
        clock_minutes_or_none(text, "t_nc")


def test_an_absent_clock_time_of_a_summary_is_none():
    assert clock_minutes_or_none(None) is None
    assert clock_minutes_or_none("none") is None
    assert clock_minutes_or_none(" None ") is None
    assert not is_clock(None) and not is_clock(1110)
    assert clock_minutes(1110) == 1110 and clock_minutes(" 8:05 ") == 485
