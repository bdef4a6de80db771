import datetime as dt

import pytest

from contextwright.clock import Clock, FixedClock, SystemClock, TranscriptClock, format_instant, parse_instant


def test_fixed_clock_stands_still_until_moved():
    clock = FixedClock("2026-03-01T23:59:59+00:00")
    assert clock.now() == clock.now()
    clock.advance(2)
    assert clock.now() == dt.datetime(2026, 3, 2, 0, 0, 1, tzinfo=dt.UTC)


def test_fixed_clock_step_gives_distinct_instants():
    clock = FixedClock("2026-01-01T00:00:00Z", step=dt.timedelta(milliseconds=5))
    assert [clock.now().microsecond for _ in range(3)] == [0, 5000, 10000]


def test_fixed_clock_never_goes_back():
    clock = FixedClock("2026-01-01T00:00:00Z")
    with pytest.raises(ValueError):
        clock.advance(-1)
    with pytest.raises(ValueError):
        clock.set("2025-12-31T00:00:00Z")


def test_naive_times_are_refused():
    with pytest.raises(ValueError):
        FixedClock(dt.datetime(2026, 1, 1))
    with pytest.raises(ValueError):
        format_instant(dt.datetime(2026, 1, 1))


def test_instants_round_trip_through_text_in_utc():
    when = dt.datetime(2026, 5, 1, 12, 30, 15, 123456, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    text = format_instant(when)
    assert text == "2026-05-01T10:30:15.123456Z"
    assert parse_instant(text) == when


def test_both_clocks_satisfy_the_protocol():
    assert isinstance(SystemClock(), Clock) and isinstance(FixedClock(), Clock)
    assert SystemClock().now().tzinfo is not None


def test_instant_text_matches_the_strftime_form_and_reads_back():
    offsets = [dt.UTC, dt.timezone(dt.timedelta(hours=-7, minutes=-30)), dt.timezone(dt.timedelta(hours=14))]
    for year, micro, zone in [(1000, 0, 0), (1970, 1, 1), (2026, 999_999, 2), (9998, 500_000, 0), (2024, 10, 1)]:
        when = dt.datetime(year, 2, 28, 23, 59, 59, micro, tzinfo=offsets[zone])
        text = format_instant(when)
        assert text == when.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        assert parse_instant(text) == when
    assert format_instant(dt.datetime(5, 1, 1, tzinfo=dt.UTC)) == "0005-01-01T00:00:00.000000Z"


def test_a_transcript_clock_follows_recorded_times_and_never_runs_back():
    clock = TranscriptClock("2026-01-01T00:00:00Z")
    first, second = clock.now(), clock.now()
    assert second - first == dt.timedelta(milliseconds=1)
    clock.follow("2026-01-01T00:10:00Z")
    assert clock.now() == dt.datetime(2026, 1, 1, 0, 10, tzinfo=dt.UTC)
    clock.follow("2026-01-01T00:05:00Z")  # out of order: ignored
    assert clock.now() > dt.datetime(2026, 1, 1, 0, 10, tzinfo=dt.UTC)
    clock.restart("2025-06-01T12:00:00Z")  # the next transcript starts at its own first time
    assert clock.now() == dt.datetime(2025, 6, 1, 12, tzinfo=dt.UTC)
    clock.restart(None)
    assert clock.now() > dt.datetime(2025, 6, 1, 12, tzinfo=dt.UTC)
