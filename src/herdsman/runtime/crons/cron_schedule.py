"""Cron expressions: check one, and compute when it fires next (croniter does the calendar).

Schedules are five fields (minute hour day month weekday, as in crontab) or six with seconds
last, interpreted in UTC unless an IANA ``timezone`` is given, as LangGraph's server does. Every
time here is an aware ``datetime``; what is stored and shown is its ISO-8601 text in UTC.
"""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter

SCHEDULE_EXAMPLE = '"0 9 * * 1-5" (09:00 UTC on weekdays) or "*/15 * * * *" (every 15 minutes)'


class ScheduleError(ValueError):
    """A schedule, timezone or end time that cannot be used; the message says what to send."""


def check_schedule(schedule: str) -> str:
    """``schedule`` stripped, if croniter can read it as 5 or 6 fields; else :class:`ScheduleError`."""
    text = (schedule or "").strip()
    if len(text.split()) not in (5, 6) or not croniter.is_valid(text):
        raise ScheduleError(
            f"schedule {schedule!r} is not a cron expression; send five fields "
            f"(minute hour day-of-month month day-of-week), e.g. {SCHEDULE_EXAMPLE}"
        )
    return text


def check_timezone(name: str | None) -> str | None:
    """``name`` if it is an IANA timezone (or None); else :class:`ScheduleError`."""
    if name is None:
        return None
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ScheduleError(
            f'timezone {name!r} is not an IANA timezone; send e.g. "Europe/Paris" or omit it for UTC'
        ) from None
    return name


def parse_time(value: str | datetime | None, field: str = "end_time") -> datetime | None:
    """An aware UTC datetime from ISO-8601 text (a time without offset is taken as UTC)."""
    if value is None or value == "":
        return None
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise ScheduleError(
                f'{field} {value!r} is not an ISO-8601 time; send e.g. "2030-01-01T00:00:00Z"'
            ) from None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def iso(moment: datetime | None) -> str | None:
    """The stored and shown form of a time: ISO-8601 in UTC, to the microsecond (sorts as text)."""
    if moment is None:
        return None
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


def next_fire(
    schedule: str, after: datetime, tz: str | None = None, end_time: datetime | None = None
) -> datetime | None:
    """The first time strictly after ``after`` that ``schedule`` fires, in UTC; None past ``end_time``."""
    base = after.astimezone(ZoneInfo(tz)) if tz else after.astimezone(UTC)
    moment = croniter(schedule, base).get_next(datetime).astimezone(UTC)
    if end_time is not None and moment > end_time:
        return None
    return moment
