//! Reading schedules: one-shot times (`in 5 min`, `in 1h30m`, `at 15:30`, `tomorrow 9am`,
//! `monday 8:00`, an RFC 3339 time, `2026-12-24 18:00`), cron expressions (standard five fields
//! and the `@hourly` / `@daily` / `@weekly` / `@monthly` / `@yearly` aliases, through `croner`),
//! and a few plain-English repeats (`every 15 minutes`, `every day at 9am`, `every weekday at
//! 8:30`) turned into cron. Local times are read in the reminder's IANA time zone; every error
//! names valid examples, because the reader is usually a model that will try again.

use chrono::{DateTime, Datelike, Duration, LocalResult, NaiveTime, TimeZone, Weekday};
use chrono_tz::Tz;
use croner::Cron;
use croner::parser::{CronParser, Seconds, Year};
use osprey_db::ReminderKind;

use crate::{Error, Result};

/// What the person can write, for error messages.
pub const EXAMPLES: &str = "one-shot: `in 5 min`, `in 2 hours`, `in 1h30m`, `at 15:30`, \
     `tomorrow 9am`, `friday 17:00`, `2026-12-24 18:00`, `2026-12-24T18:00:00+01:00`; \
     repeating (cron, five fields: minute hour day-of-month month day-of-week): `0 9 * * 1-5` \
     (weekdays at 9:00), `*/15 * * * *`, `@daily`, `@hourly`, or `every day at 9am`, \
     `every weekday at 8:30`, `every 30 minutes`, `every monday at 10:00`";

/// A schedule read and planned: its kind, the text to store, and its first time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    pub kind: ReminderKind,
    /// For cron, the expression (what a restart recomputes from); for a one-shot, the text as
    /// given (for display: the time itself is `next_run_ms`).
    pub schedule: String,
    pub next_run_ms: i64,
}

/// The machine's IANA time zone, or UTC when it cannot be found or is unknown to the bundled
/// database.
pub fn local_timezone() -> Tz {
    iana_time_zone::get_timezone()
        .ok()
        .and_then(|name| name.parse().ok())
        .unwrap_or(Tz::UTC)
}

/// Reads an IANA time zone name (`Europe/Berlin`, `UTC`).
pub fn parse_timezone(name: &str) -> Result<Tz> {
    name.trim().parse().map_err(|_| {
        Error::InvalidSchedule(format!(
            "unknown time zone `{name}`: use an IANA name such as `Europe/Berlin`, `America/New_York` or `UTC`"
        ))
    })
}

/// Reads `schedule` as `kind` (or guesses the kind: cron when it looks like a cron expression or
/// an `every ...` phrase, else a one-shot) and computes its first time after `now_ms`.
pub fn plan(kind: Option<ReminderKind>, schedule: &str, tz: Tz, now_ms: i64) -> Result<Plan> {
    let text = schedule.trim();
    if text.is_empty() {
        return Err(Error::InvalidSchedule(format!(
            "the schedule is empty; examples: {EXAMPLES}"
        )));
    }
    let kind = kind.unwrap_or_else(|| {
        if looks_like_cron(text) || every_to_cron(text).is_some() {
            ReminderKind::Cron
        } else {
            ReminderKind::OneShot
        }
    });
    match kind {
        ReminderKind::Cron => {
            let expression = match every_to_cron(text) {
                Some(translated) => translated?,
                None => text.to_string(),
            };
            let cron = parse_cron(&expression)?;
            Ok(Plan {
                kind,
                next_run_ms: next_cron_ms(&cron, tz, now_ms)?,
                schedule: expression,
            })
        }
        ReminderKind::OneShot => Ok(Plan {
            kind,
            next_run_ms: parse_one_shot(text, tz, now_ms)?,
            schedule: text.to_string(),
        }),
    }
}

/// Five whitespace-separated fields of cron characters, or an `@alias`.
pub fn looks_like_cron(text: &str) -> bool {
    let text = text.trim();
    if text.starts_with('@') {
        return true;
    }
    let fields: Vec<&str> = text.split_whitespace().collect();
    fields.len() == 5
        && fields[0]
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_digit() || c == '*')
        && fields.iter().all(|f| {
            f.chars()
                .all(|c| c.is_ascii_alphanumeric() || "*/,-?#".contains(c))
        })
}

/// Parses a standard five-field cron expression or an `@alias`.
pub fn parse_cron(expression: &str) -> Result<Cron> {
    let parser = CronParser::builder()
        .seconds(Seconds::Disallowed)
        .year(Year::Disallowed)
        .build();
    parser.parse(expression.trim()).map_err(|e| {
        Error::InvalidSchedule(format!(
            "`{expression}` is not a valid cron expression ({e}); a cron expression has five fields, minute hour day-of-month month day-of-week, e.g. `0 9 * * 1-5` (weekdays at 9:00), `*/15 * * * *` (every 15 minutes), or an alias: @hourly, @daily, @weekly, @monthly, @yearly"
        ))
    })
}

/// The first time `cron` matches strictly after `after_ms`, in `tz`.
pub fn next_cron_ms(cron: &Cron, tz: Tz, after_ms: i64) -> Result<i64> {
    let after = tz
        .timestamp_millis_opt(after_ms)
        .single()
        .ok_or_else(|| Error::InvalidSchedule(format!("time {after_ms} ms is out of range")))?;
    let next = cron.find_next_occurrence(&after, false).map_err(|e| {
        Error::InvalidSchedule(format!(
            "the cron expression `{}` never matches ({e})",
            cron.pattern
        ))
    })?;
    Ok(next.timestamp_millis())
}

/// Reads a one-shot time relative to `now_ms` in `tz`; the result is always in the future.
pub fn parse_one_shot(text: &str, tz: Tz, now_ms: i64) -> Result<i64> {
    let bad = |why: &str| {
        Error::InvalidSchedule(format!(
            "cannot read `{}` as a time{why}; examples: {EXAMPLES}",
            text.trim()
        ))
    };
    let now = tz
        .timestamp_millis_opt(now_ms)
        .single()
        .ok_or_else(|| bad(""))?;
    let lower = text.trim().to_ascii_lowercase();
    let at_ms = if let Ok(exact) = DateTime::parse_from_rfc3339(text.trim()) {
        exact.timestamp_millis()
    } else if let Some(rest) = lower.strip_prefix("in ") {
        let duration = parse_duration(rest).ok_or_else(|| bad(""))?;
        now_ms + duration.num_milliseconds()
    } else if let Some(local) = parse_local_date_time(&lower) {
        to_instant(tz, local)?
    } else {
        parse_day_and_time(&lower, now).ok_or_else(|| bad(""))??
    };
    if at_ms <= now_ms {
        return Err(bad(" in the future (that moment has passed)"));
    }
    Ok(at_ms)
}

/// `5 min`, `2 hours`, `1h30m`, `1 hour and 30 minutes`, `an hour`, `90s`, `2 days`, `1 week`.
fn parse_duration(text: &str) -> Option<Duration> {
    let mut total = Duration::zero();
    let mut number: Option<i64> = None;
    let mut seen_unit = false;
    let mut rest = text.trim();
    while !rest.is_empty() {
        rest = rest.trim_start_matches(|c: char| c.is_whitespace() || c == ',');
        if rest.is_empty() {
            break;
        }
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        if !digits.is_empty() {
            if number.is_some() {
                return None;
            }
            number = Some(digits.parse().ok()?);
            rest = &rest[digits.len()..];
            continue;
        }
        let word: String = rest.chars().take_while(char::is_ascii_alphabetic).collect();
        if word.is_empty() {
            return None;
        }
        rest = &rest[word.len()..];
        match word.as_str() {
            "a" | "an" | "one" if number.is_none() => number = Some(1),
            "and" => {}
            unit => {
                let count = number.take()?;
                let one = match unit {
                    "s" | "sec" | "secs" | "second" | "seconds" => Duration::seconds(1),
                    "m" | "min" | "mins" | "minute" | "minutes" => Duration::minutes(1),
                    "h" | "hr" | "hrs" | "hour" | "hours" => Duration::hours(1),
                    "d" | "day" | "days" => Duration::days(1),
                    "w" | "wk" | "wks" | "week" | "weeks" => Duration::weeks(1),
                    _ => return None,
                };
                total = total.checked_add(&one.checked_mul(count.try_into().ok()?)?)?;
                seen_unit = true;
            }
        }
    }
    (seen_unit && number.is_none() && total > Duration::zero()).then_some(total)
}

/// `2026-12-24 18:00`, `2026-12-24T18:00`, `2026-12-24 18:00:30`: a date and time without an
/// offset, read in the reminder's zone.
fn parse_local_date_time(text: &str) -> Option<chrono::NaiveDateTime> {
    let text = text.replacen('t', " ", 1);
    ["%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M"]
        .iter()
        .find_map(|format| chrono::NaiveDateTime::parse_from_str(text.trim(), format).ok())
}

/// `at 15:30`, `15:30`, `9am`, `tomorrow 9am`, `today at 17:00`, `friday 8:30 pm`, `noon`.
/// `None` when it is not of this form; `Some(Err)` when it is but names no real time.
fn parse_day_and_time(text: &str, now: DateTime<Tz>) -> Option<Result<i64>> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let mut words: &[&str] = &words;
    let mut day: Option<Day> = None;
    if let Some((first, rest)) = words.split_first() {
        let first = first.trim_end_matches(',');
        if first == "today" {
            day = Some(Day::Today);
            words = rest;
        } else if first == "tomorrow" {
            day = Some(Day::Tomorrow);
            words = rest;
        } else if first == "next"
            && let Some((weekday, rest)) = rest.split_first()
            && let Some(weekday) = parse_weekday(weekday)
        {
            day = Some(Day::Weekday(weekday));
            words = rest;
        } else if let Some(weekday) = parse_weekday(first) {
            day = Some(Day::Weekday(weekday));
            words = rest;
        }
    }
    if let Some((first, rest)) = words.split_first()
        && *first == "at"
    {
        words = rest;
    }
    if words.is_empty() {
        return None;
    }
    let time = parse_time_of_day(&words.join(""))?;
    let today = now.date_naive();
    let date = match day {
        Some(Day::Today) => today,
        Some(Day::Tomorrow) => today.succ_opt()?,
        Some(Day::Weekday(weekday)) => {
            let ahead = (7 + weekday.num_days_from_monday() as i64
                - today.weekday().num_days_from_monday() as i64)
                % 7;
            let candidate = today + Duration::days(ahead);
            // Today's weekday means today if the time is still ahead, else next week.
            if ahead == 0 && candidate.and_time(time) <= now.naive_local() {
                candidate + Duration::days(7)
            } else {
                candidate
            }
        }
        None => {
            // A bare time is its next occurrence: today, or tomorrow once it has passed.
            if today.and_time(time) > now.naive_local() {
                today
            } else {
                today.succ_opt()?
            }
        }
    };
    Some(to_instant(now.timezone(), date.and_time(time)))
}

enum Day {
    Today,
    Tomorrow,
    Weekday(Weekday),
}

fn parse_weekday(word: &str) -> Option<Weekday> {
    let word = word.trim_end_matches(',');
    let names = [
        ("monday", "mon", Weekday::Mon),
        ("tuesday", "tue", Weekday::Tue),
        ("wednesday", "wed", Weekday::Wed),
        ("thursday", "thu", Weekday::Thu),
        ("friday", "fri", Weekday::Fri),
        ("saturday", "sat", Weekday::Sat),
        ("sunday", "sun", Weekday::Sun),
    ];
    names
        .iter()
        .find(|(long, short, _)| word == *long || word == *short)
        .map(|(_, _, day)| *day)
}

/// `15:30`, `15:30:10`, `9am`, `9:30pm`, `12am`, `noon`, `midnight` (spaces already removed).
fn parse_time_of_day(text: &str) -> Option<NaiveTime> {
    match text {
        "noon" | "midday" => return NaiveTime::from_hms_opt(12, 0, 0),
        "midnight" => return NaiveTime::from_hms_opt(0, 0, 0),
        _ => {}
    }
    let (clock, meridiem) = if let Some(clock) = text.strip_suffix("am") {
        (clock, Some(false))
    } else if let Some(clock) = text.strip_suffix("pm") {
        (clock, Some(true))
    } else {
        (text, None)
    };
    let mut parts = clock.split(':');
    let hour: u32 = parts.next()?.parse().ok()?;
    let minute: u32 = match parts.next() {
        Some(m) if m.len() == 2 => m.parse().ok()?,
        Some(_) => return None,
        None if meridiem.is_some() => 0,
        // A bare number ("at 9") is too ambiguous to guess; ask for 9am or 09:00.
        None => return None,
    };
    let second: u32 = match parts.next() {
        Some(s) if s.len() == 2 => s.parse().ok()?,
        Some(_) => return None,
        None => 0,
    };
    if parts.next().is_some() {
        return None;
    }
    let hour = match meridiem {
        Some(_) if !(1..=12).contains(&hour) => return None,
        Some(false) => hour % 12,
        Some(true) => hour % 12 + 12,
        None => hour,
    };
    NaiveTime::from_hms_opt(hour, minute, second)
}

/// A local wall-clock time as an instant. A time skipped by a daylight-saving jump is moved past
/// the jump; a time that happens twice is its first occurrence.
fn to_instant(tz: Tz, local: chrono::NaiveDateTime) -> Result<i64> {
    match tz.from_local_datetime(&local) {
        LocalResult::Single(t) => Ok(t.timestamp_millis()),
        LocalResult::Ambiguous(first, _) => Ok(first.timestamp_millis()),
        LocalResult::None => tz
            .from_local_datetime(&(local + Duration::hours(1)))
            .earliest()
            .map(|t| t.timestamp_millis())
            .ok_or_else(|| {
                Error::InvalidSchedule(format!("{local} does not exist in the time zone {tz}"))
            }),
    }
}

/// `every 15 minutes`, `every hour`, `every 2 hours`, `every day at 9am`, `daily at 9:00`,
/// `every weekday at 8:30`, `every monday at 10am` as cron. `None` when the text is not an
/// `every`/`daily` phrase; `Some(Err)` when it is but cannot be read.
fn every_to_cron(text: &str) -> Option<Result<String>> {
    let lower = text.trim().to_ascii_lowercase();
    let rest = if let Some(rest) = lower.strip_prefix("every ") {
        rest.trim().to_string()
    } else if let Some(rest) = lower.strip_prefix("daily") {
        format!("day{rest}")
    } else if let Some(rest) = lower.strip_prefix("hourly") {
        format!("hour{rest}")
    } else {
        return None;
    };
    let bad = || {
        Err(Error::InvalidSchedule(format!(
            "cannot read `{}` as a repeating schedule; examples: {EXAMPLES}",
            text.trim()
        )))
    };
    let (what, time) = match rest.split_once(" at ") {
        Some((what, time)) => (what.trim(), Some(time.replace(' ', ""))),
        None => (rest.trim(), None),
    };
    let time = match time.as_deref().map(parse_time_of_day) {
        Some(None) => return Some(bad()),
        Some(Some(t)) => Some(t),
        None => None,
    };
    let at = |t: Option<NaiveTime>| {
        let t = t.unwrap_or(NaiveTime::MIN);
        use chrono::Timelike;
        format!("{} {}", t.minute(), t.hour())
    };
    let words: Vec<&str> = what.split_whitespace().collect();
    let expression = match words.as_slice() {
        ["minute"] if time.is_none() => "* * * * *".to_string(),
        [n, "minutes" | "mins" | "min"] if time.is_none() => match n.parse::<u32>() {
            Ok(n) if (1..60).contains(&n) => format!("*/{n} * * * *"),
            _ => return Some(bad()),
        },
        ["hour"] if time.is_none() => "0 * * * *".to_string(),
        [n, "hours" | "hrs"] if time.is_none() => match n.parse::<u32>() {
            Ok(n) if (1..24).contains(&n) => format!("0 */{n} * * *"),
            _ => return Some(bad()),
        },
        ["day"] => format!("{} * * *", at(time)),
        ["weekday"] | ["weekdays"] => format!("{} * * 1-5", at(time)),
        ["weekend"] | ["weekends"] => format!("{} * * 0,6", at(time)),
        [day] => match parse_weekday(day.trim_end_matches('s')) {
            Some(weekday) => format!("{} * * {}", at(time), weekday.num_days_from_sunday()),
            None => return Some(bad()),
        },
        _ => return Some(bad()),
    };
    Some(Ok(expression))
}

#[cfg(test)]
mod tests {
    use super::*;

    const BERLIN: Tz = chrono_tz::Europe::Berlin;

    /// Milliseconds of a Berlin wall-clock time.
    fn berlin(y: i32, mo: u32, d: u32, h: u32, mi: u32) -> i64 {
        BERLIN
            .with_ymd_and_hms(y, mo, d, h, mi, 0)
            .single()
            .unwrap()
            .timestamp_millis()
    }

    // Sunday 2026-11-22 10:00 in Berlin.
    fn now() -> i64 {
        berlin(2026, 11, 22, 10, 0)
    }

    fn one_shot(text: &str) -> Result<i64> {
        parse_one_shot(text, BERLIN, now())
    }

    #[test]
    fn relative_durations() {
        let min = 60_000;
        assert_eq!(one_shot("in 5 min").unwrap(), now() + 5 * min);
        assert_eq!(one_shot("in 5 minutes").unwrap(), now() + 5 * min);
        assert_eq!(one_shot("in 2 hours").unwrap(), now() + 120 * min);
        assert_eq!(one_shot("in 1h30m").unwrap(), now() + 90 * min);
        assert_eq!(
            one_shot("In 1 hour and 30 minutes").unwrap(),
            now() + 90 * min
        );
        assert_eq!(one_shot("in an hour").unwrap(), now() + 60 * min);
        assert_eq!(one_shot("in 90s").unwrap(), now() + 90_000);
        assert_eq!(one_shot("in 2 days").unwrap(), now() + 2 * 24 * 60 * min);
        for bad in [
            "in",
            "in 5",
            "in five min",
            "in 5 fortnights",
            "in 0 min",
            "in m",
        ] {
            let err = one_shot(bad).unwrap_err().to_string();
            assert!(err.contains("in 5 min"), "{bad}: {err}");
        }
    }

    #[test]
    fn clock_times_and_days_in_the_local_zone() {
        assert_eq!(one_shot("at 15:30").unwrap(), berlin(2026, 11, 22, 15, 30));
        assert_eq!(one_shot("15:30").unwrap(), berlin(2026, 11, 22, 15, 30));
        // Passed today: tomorrow.
        assert_eq!(one_shot("at 9am").unwrap(), berlin(2026, 11, 23, 9, 0));
        assert_eq!(
            one_shot("tomorrow 9am").unwrap(),
            berlin(2026, 11, 23, 9, 0)
        );
        assert_eq!(
            one_shot("tomorrow at 9:30 pm").unwrap(),
            berlin(2026, 11, 23, 21, 30)
        );
        assert_eq!(
            one_shot("today at noon").unwrap(),
            berlin(2026, 11, 22, 12, 0)
        );
        assert_eq!(one_shot("12am").unwrap(), berlin(2026, 11, 23, 0, 0));
        assert_eq!(
            one_shot("friday 17:00").unwrap(),
            berlin(2026, 11, 27, 17, 0)
        );
        // Today is Sunday: `sunday 9am` has passed, so it is next week's.
        assert_eq!(one_shot("sunday 9am").unwrap(), berlin(2026, 11, 29, 9, 0));
        assert_eq!(
            one_shot("next sun 11:00").unwrap(),
            berlin(2026, 11, 22, 11, 0)
        );
        assert_eq!(
            one_shot("2026-12-24 18:00").unwrap(),
            berlin(2026, 12, 24, 18, 0)
        );
        assert_eq!(
            one_shot("2026-12-24T18:00:00+01:00").unwrap(),
            berlin(2026, 12, 24, 18, 0)
        );
        assert_eq!(
            one_shot("2026-12-24T17:00:00Z").unwrap(),
            berlin(2026, 12, 24, 18, 0)
        );
        for bad in ["at 9", "at 25:00", "13pm", "tomorrow", "soonish", "at 9:5"] {
            let err = one_shot(bad).unwrap_err().to_string();
            assert!(err.contains("tomorrow 9am"), "{bad}: {err}");
        }
        let err = one_shot("2020-01-01T00:00:00Z").unwrap_err().to_string();
        assert!(err.contains("has passed"), "{err}");
        assert!(one_shot("today at 9am").is_err());
    }

    #[test]
    fn daylight_saving_gaps_move_past_the_jump() {
        // 2027-03-28 02:30 does not exist in Berlin (clocks jump 02:00 -> 03:00).
        let at = parse_one_shot("2027-03-28 02:30", BERLIN, now()).unwrap();
        assert_eq!(at, berlin(2027, 3, 28, 3, 30));
    }

    #[test]
    fn cron_expressions_and_aliases() {
        let cron = parse_cron("0 9 * * 1-5").unwrap();
        // From Sunday 10:00: Monday 9:00, then Tuesday 9:00.
        let first = next_cron_ms(&cron, BERLIN, now()).unwrap();
        assert_eq!(first, berlin(2026, 11, 23, 9, 0));
        assert_eq!(
            next_cron_ms(&cron, BERLIN, first).unwrap(),
            berlin(2026, 11, 24, 9, 0)
        );
        let hourly = parse_cron("@hourly").unwrap();
        assert_eq!(
            next_cron_ms(&hourly, BERLIN, now()).unwrap(),
            berlin(2026, 11, 22, 11, 0)
        );
        let daily = parse_cron("@daily").unwrap();
        assert_eq!(
            next_cron_ms(&daily, BERLIN, now()).unwrap(),
            berlin(2026, 11, 23, 0, 0)
        );
        // The same expression in another zone is another instant.
        let utc_nine = next_cron_ms(&cron, Tz::UTC, now()).unwrap();
        assert_eq!(utc_nine - first, 3_600_000);
        for bad in [
            "0 9 * *",
            "61 * * * *",
            "0 0 0 * * * *",
            "@sometimes",
            "* * * * * *",
        ] {
            let err = parse_cron(bad).unwrap_err().to_string();
            assert!(err.contains("0 9 * * 1-5"), "{bad}: {err}");
        }
    }

    #[test]
    fn plan_guesses_the_kind_and_translates_every_phrases() {
        let p = plan(None, "*/15 * * * *", BERLIN, now()).unwrap();
        assert_eq!(p.kind, ReminderKind::Cron);
        assert_eq!(p.next_run_ms, berlin(2026, 11, 22, 10, 15));
        let p = plan(None, "in 5 min", BERLIN, now()).unwrap();
        assert_eq!(p.kind, ReminderKind::OneShot);
        assert_eq!(p.schedule, "in 5 min");
        let cases = [
            ("every day at 9am", "0 9 * * *"),
            ("daily at 18:30", "30 18 * * *"),
            ("every weekday at 8:30", "30 8 * * 1-5"),
            ("every monday at 10:00", "0 10 * * 1"),
            ("every 30 minutes", "*/30 * * * *"),
            ("every hour", "0 * * * *"),
            ("every 2 hours", "0 */2 * * *"),
        ];
        for (text, cron) in cases {
            let p = plan(None, text, BERLIN, now()).unwrap();
            assert_eq!((p.kind, p.schedule.as_str()), (ReminderKind::Cron, cron));
        }
        assert!(plan(None, "every blue moon", BERLIN, now()).is_err());
        // An explicit kind is respected: a one-shot text is not a cron expression.
        let err = plan(Some(ReminderKind::Cron), "in 5 min", BERLIN, now())
            .unwrap_err()
            .to_string();
        assert!(err.contains("five fields"), "{err}");
        assert!(plan(None, "  ", BERLIN, now()).is_err());
    }

    #[test]
    fn time_zones_parse_by_iana_name() {
        assert_eq!(parse_timezone("Europe/Berlin").unwrap(), BERLIN);
        let err = parse_timezone("Mars/Olympus").unwrap_err().to_string();
        assert!(err.contains("Europe/Berlin"), "{err}");
    }
}
