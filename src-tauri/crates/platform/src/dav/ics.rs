//! Events: read from iCalendar with the `icalendar` crate, expanded with `rrule`, written with
//! `icalendar`'s builder (new events) or line by line (updates, see `lines`), in time zones from
//! `chrono-tz`.
//!
//! Times with a TZID keep their zone: a new event created "at 10:00 Europe/Berlin" is stored as
//! `DTSTART;TZID=Europe/Berlin:...T100000` with a VTIMEZONE for it, and a weekly one stays at
//! 10:00 Berlin time across the DST switch. Listings show the person's zone. Floating times and
//! dates (all-day events) are read in the person's zone. A local time that does not exist (the
//! hour the clocks skip) is refused on input and moved forward on reading (RFC 5545 3.3.5); an
//! ambiguous one (the hour that repeats) is the first of the two.
//!
//! Recurrences: RRULE, RDATE and EXDATE, and overridden instances (RECURRENCE-ID) of the same
//! object, at most [`MAX_OCCURRENCES`] per event and listing. Not supported: RANGE=THISANDFUTURE
//! overrides (read as single ones), EXRULE, and TZIDs that are neither IANA names nor end in one
//! (Windows zone names): those times are read in the person's zone and marked so.

use std::str::FromStr;

use chrono::{
    DateTime, Datelike, Duration, FixedOffset, NaiveDate, NaiveDateTime, NaiveTime, Offset,
    TimeZone, Utc,
};
use chrono_tz::{OffsetComponents as _, OffsetName as _, Tz};
use icalendar::{CalendarDateTime, Component as _, DatePerhapsTime, EventLike as _, Property};

use super::lines::{Block, Document, fold};
use crate::error::{Error, Result};

/// Occurrences of one event a listing shows at most.
pub(crate) const MAX_OCCURRENCES: u16 = 500;

/// A start or end: a day (all-day events) or an instant in a zone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Moment {
    Day(NaiveDate),
    At(DateTime<Tz>),
}

impl Moment {
    /// The instant it begins, days at midnight in `local`.
    pub(crate) fn instant(self, local: Tz) -> DateTime<Utc> {
        match self {
            Moment::At(at) => at.with_timezone(&Utc),
            Moment::Day(day) => read_local(local, day.and_time(NaiveTime::MIN)).with_timezone(&Utc),
        }
    }
}

/// One VEVENT, read.
#[derive(Clone, Debug)]
pub(crate) struct Event {
    pub uid: String,
    pub summary: String,
    pub location: String,
    pub description: String,
    pub start: Moment,
    /// Exclusive: the day after the last for all-day events.
    pub end: Moment,
    /// The TZID of DTSTART, as written.
    pub zone: Option<String>,
    /// False when that TZID is not a zone known here (read in the person's zone).
    pub zone_known: bool,
    /// The RRULE, as written.
    pub rule: Option<String>,
    pub recurrence_id: Option<Moment>,
    rdates: Vec<Moment>,
    exdates: Vec<Moment>,
}

impl Event {
    pub(crate) fn all_day(&self) -> bool {
        matches!(self.start, Moment::Day(_))
    }

    fn duration(&self, local: Tz) -> Duration {
        self.end.instant(local) - self.start.instant(local)
    }

    /// Whether `text` (lower case) is in its title, location or description.
    pub(crate) fn matches(&self, text: &str) -> bool {
        [&self.summary, &self.location, &self.description]
            .iter()
            .any(|field| field.to_lowercase().contains(text))
    }
}

/// An IANA zone from a TZID: the name itself, or a name it ends in (`/mozilla.org/.../Europe/Berlin`).
pub(crate) fn zone_named(tzid: &str) -> Option<Tz> {
    let tzid = tzid.trim().trim_matches('"');
    if let Ok(tz) = tzid.parse::<Tz>() {
        return Some(tz);
    }
    let parts: Vec<&str> = tzid.split('/').filter(|p| !p.is_empty()).collect();
    (1..parts.len())
        .map(|i| parts[i..].join("/"))
        .find_map(|tail| tail.parse::<Tz>().ok())
}

/// A local time on reading: a skipped one is moved forward by the gap, a repeated one is the
/// first (RFC 5545 3.3.5).
fn read_local(tz: Tz, naive: NaiveDateTime) -> DateTime<Tz> {
    match tz.from_local_datetime(&naive) {
        chrono::LocalResult::Single(at) | chrono::LocalResult::Ambiguous(at, _) => at,
        chrono::LocalResult::None => {
            let mut probe = naive;
            for _ in 0..48 {
                probe += Duration::minutes(30);
                if let Some(at) = tz.from_local_datetime(&probe).earliest() {
                    return at - (probe - naive);
                }
            }
            tz.from_utc_datetime(&naive)
        }
    }
}

/// A local time the person gave: refused when the clocks skip it, the first when they repeat it.
pub(crate) fn input_local(tz: Tz, naive: NaiveDateTime) -> Result<DateTime<Tz>> {
    match tz.from_local_datetime(&naive) {
        chrono::LocalResult::Single(at) | chrono::LocalResult::Ambiguous(at, _) => Ok(at),
        chrono::LocalResult::None => Err(Error::invalid(format!(
            "{} does not exist in {tz}: the clocks skip that hour (daylight saving time); give \
             another time",
            naive.format("%Y-%m-%d %H:%M")
        ))),
    }
}

fn moment(value: DatePerhapsTime, local: Tz) -> (Moment, Option<String>, bool) {
    match value {
        DatePerhapsTime::Date(day) => (Moment::Day(day), None, true),
        DatePerhapsTime::DateTime(CalendarDateTime::Utc(at)) => {
            (Moment::At(at.with_timezone(&chrono_tz::UTC)), None, true)
        }
        DatePerhapsTime::DateTime(CalendarDateTime::Floating(naive)) => {
            (Moment::At(read_local(local, naive)), None, true)
        }
        DatePerhapsTime::DateTime(CalendarDateTime::WithTimezone { date_time, tzid }) => {
            match zone_named(&tzid) {
                Some(tz) => (Moment::At(read_local(tz, date_time)), Some(tzid), true),
                None => (Moment::At(read_local(local, date_time)), Some(tzid), false),
            }
        }
    }
}

/// The values of a multi-valued date property (RDATE, EXDATE: several lines, comma lists).
fn dates_of(event: &icalendar::Event, name: &str, local: Tz) -> Vec<Moment> {
    let mut out = Vec::new();
    let mut properties: Vec<&Property> = event.properties().get(name).into_iter().collect();
    if let Some(multi) = event.multi_properties().get(name) {
        properties.extend(multi.iter());
    }
    for property in properties {
        for value in property.value().split(',') {
            let mut single = Property::new(name, value.trim());
            for parameter in property.params().values() {
                single.append_parameter(parameter.clone());
            }
            if let Some(value) = DatePerhapsTime::from_property(&single) {
                out.push(moment(value, local).0);
            }
        }
    }
    out
}

/// The events of one calendar object (or file).
pub(crate) fn parse_events(text: &str, local: Tz) -> Result<Vec<Event>> {
    let calendar = icalendar::Calendar::from_str(text)
        .map_err(|e| Error::invalid(format!("not iCalendar data: {e}")))?;
    let mut out = Vec::new();
    for event in calendar.events() {
        let Some(start) = event.get_start() else {
            continue;
        };
        let (start, zone, zone_known) = moment(start, local);
        let end = match event.get_end() {
            Some(end) => moment(end, local).0,
            None => {
                let length = event
                    .property_value("DURATION")
                    .and_then(|d| iso8601::duration(d.trim()).ok())
                    .and_then(|d| Duration::from_std(d.into()).ok());
                match (start, length) {
                    (Moment::Day(day), Some(length)) => {
                        Moment::Day(day + Duration::days(length.num_days().max(1)))
                    }
                    (Moment::Day(day), None) => Moment::Day(day + Duration::days(1)),
                    (Moment::At(at), length) => Moment::At(at + length.unwrap_or_default()),
                }
            }
        };
        let text = |value: Option<&str>| value.unwrap_or_default().trim().to_string();
        out.push(Event {
            uid: text(event.get_uid()),
            summary: text(event.get_summary()),
            location: text(event.get_location()),
            description: text(event.get_description()),
            start,
            end,
            zone,
            zone_known,
            rule: event.property_value("RRULE").map(str::to_string),
            recurrence_id: event.get_recurrence_id().map(|r| moment(r, local).0),
            rdates: dates_of(event, "RDATE", local),
            exdates: dates_of(event, "EXDATE", local),
        });
    }
    Ok(out)
}

/// One occurrence of an event.
#[derive(Clone, Debug)]
pub(crate) struct Occurrence<'a> {
    pub event: &'a Event,
    pub start: Moment,
    pub end: Moment,
    /// From a recurring series.
    pub repeats: bool,
}

impl Occurrence<'_> {
    fn overlaps(&self, range: &(DateTime<Utc>, DateTime<Utc>), local: Tz) -> bool {
        let (start, end) = (self.start.instant(local), self.end.instant(local));
        if start == end {
            start >= range.0 && start < range.1
        } else {
            start < range.1 && end > range.0
        }
    }
}

/// The occurrences of `events` (the VEVENTs of one object) that overlap `range`; without a
/// range, each series once at its first start.
pub(crate) fn occurrences<'a>(
    events: &'a [Event],
    range: Option<&(DateTime<Utc>, DateTime<Utc>)>,
    local: Tz,
) -> Vec<Occurrence<'a>> {
    let mut out = Vec::new();
    for master in events.iter().filter(|e| e.recurrence_id.is_none()) {
        let recurring = master.rule.is_some() || !master.rdates.is_empty();
        let single = Occurrence {
            event: master,
            start: master.start,
            end: master.end,
            repeats: recurring,
        };
        let Some(range) = range else {
            out.push(single);
            continue;
        };
        if !recurring {
            if single.overlaps(range, local) {
                out.push(single);
            }
            continue;
        }
        let overrides: Vec<&Event> = events
            .iter()
            .filter(|e| e.uid == master.uid && e.recurrence_id.is_some())
            .collect();
        match expand(master, &overrides, range, local) {
            Ok(starts) => {
                let length = master.duration(local);
                // Days are counted as dates: a day in the week the clocks change has 23 or 25
                // hours.
                let days = match (master.start, master.end) {
                    (Moment::Day(start), Moment::Day(end)) => (end - start).num_days().max(1),
                    _ => 1,
                };
                for start in starts {
                    let end = match start {
                        Moment::Day(day) => Moment::Day(day + Duration::days(days)),
                        Moment::At(at) => Moment::At(at + length),
                    };
                    let occurrence = Occurrence {
                        event: master,
                        start,
                        end,
                        repeats: true,
                    };
                    if occurrence.overlaps(range, local) {
                        out.push(occurrence);
                    }
                }
            }
            Err(why) => {
                tracing::debug!(uid = %master.uid, %why, "recurrence not expanded");
                if single.overlaps(range, local) {
                    out.push(single);
                }
            }
        }
        for changed in overrides {
            let occurrence = Occurrence {
                event: changed,
                start: changed.start,
                end: changed.end,
                repeats: true,
            };
            if occurrence.overlaps(range, local) {
                out.push(occurrence);
            }
        }
    }
    out
}

/// The series' starts near `range` (overridden instances left out).
fn expand(
    master: &Event,
    overrides: &[&Event],
    range: &(DateTime<Utc>, DateTime<Utc>),
    local: Tz,
) -> std::result::Result<Vec<Moment>, String> {
    let zone: rrule::Tz = match master.start {
        Moment::At(at) => at.timezone().into(),
        Moment::Day(_) => local.into(),
    };
    let to_rrule = |m: Moment| -> DateTime<rrule::Tz> {
        match m {
            Moment::At(at) => at.with_timezone(&zone),
            Moment::Day(day) => {
                let naive = day.and_time(NaiveTime::MIN);
                read_local(local, naive).with_timezone(&zone)
            }
        }
    };
    let start = to_rrule(master.start);
    let mut set = rrule::RRuleSet::new(start);
    if let Some(rule) = &master.rule {
        let rule: rrule::RRule<rrule::Unvalidated> = rule.parse().map_err(|e| format!("{e}"))?;
        set = set.rrule(rule.validate(start).map_err(|e| format!("{e}"))?);
    }
    for rdate in &master.rdates {
        set = set.rdate(to_rrule(*rdate));
    }
    for exdate in master
        .exdates
        .iter()
        .chain(overrides.iter().filter_map(|o| o.recurrence_id.as_ref()))
    {
        set = set.exdate(to_rrule(*exdate));
    }
    let length = master.duration(local);
    let after = (range.0 - length - Duration::seconds(1)).with_timezone(&zone);
    let before = range.1.with_timezone(&zone);
    let result = set.after(after).before(before).all(MAX_OCCURRENCES);
    Ok(result
        .dates
        .into_iter()
        .map(|at| match master.start {
            Moment::Day(_) => Moment::Day(at.with_timezone(&local).date_naive()),
            Moment::At(_) => Moment::At(at.with_timezone(&master_tz(master))),
        })
        .collect())
}

fn master_tz(event: &Event) -> Tz {
    match event.start {
        Moment::At(at) => at.timezone(),
        Moment::Day(_) => chrono_tz::UTC,
    }
}

/// A time the person gave.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Input {
    Day(NaiveDate),
    /// A wall-clock time, in the zone the call names (else the event's, else the person's).
    Local(NaiveDateTime),
    /// A time with its UTC offset (`...Z`, `...+02:00`).
    Fixed(DateTime<FixedOffset>),
}

impl Input {
    pub(crate) fn parse(text: &str) -> Result<Input> {
        let text = text.trim();
        if let Ok(at) = DateTime::parse_from_rfc3339(text) {
            return Ok(Input::Fixed(at));
        }
        for format in [
            "%Y-%m-%dT%H:%M:%S%:z",
            "%Y-%m-%dT%H:%M%:z",
            "%Y-%m-%d %H:%M%:z",
        ] {
            if let Ok(at) = DateTime::parse_from_str(text, format) {
                return Ok(Input::Fixed(at));
            }
        }
        if let Some(utc) = text.strip_suffix('Z').or_else(|| text.strip_suffix('z'))
            && let Ok(Input::Local(naive)) = Input::parse(utc)
        {
            return Ok(Input::Fixed(naive.and_utc().fixed_offset()));
        }
        for format in [
            "%Y-%m-%dT%H:%M:%S",
            "%Y-%m-%dT%H:%M",
            "%Y-%m-%d %H:%M:%S",
            "%Y-%m-%d %H:%M",
        ] {
            if let Ok(naive) = NaiveDateTime::parse_from_str(text, format) {
                return Ok(Input::Local(naive));
            }
        }
        if let Ok(day) = NaiveDate::parse_from_str(text, "%Y-%m-%d") {
            return Ok(Input::Day(day));
        }
        Err(Error::invalid(format!(
            "{text:?} is not a date or time: give 2026-03-29, 2026-03-29T10:00 (in `timezone`, \
             else local time) or 2026-03-29T10:00:00+02:00"
        )))
    }

    pub(crate) fn day(self) -> NaiveDate {
        match self {
            Input::Day(day) => day,
            Input::Local(naive) => naive.date(),
            Input::Fixed(at) => at.date_naive(),
        }
    }

    /// The instant, a wall-clock time or day read in `tz`.
    pub(crate) fn at(self, tz: Tz) -> Result<DateTime<Tz>> {
        match self {
            Input::Day(day) => Ok(read_local(tz, day.and_time(NaiveTime::MIN))),
            Input::Local(naive) => input_local(tz, naive),
            Input::Fixed(at) => Ok(at.with_timezone(&tz)),
        }
    }
}

/// A new event's fields.
#[derive(Clone, Debug)]
pub(crate) struct NewEvent {
    pub uid: String,
    pub title: String,
    pub start: Moment,
    pub end: Moment,
    pub location: Option<String>,
    pub description: Option<String>,
}

fn date_property(name: &str, moment: Moment) -> Property {
    let value = match moment {
        Moment::Day(day) => DatePerhapsTime::Date(day),
        Moment::At(at) if at.timezone() == chrono_tz::UTC => {
            DatePerhapsTime::DateTime(CalendarDateTime::Utc(at.with_timezone(&Utc)))
        }
        Moment::At(at) => DatePerhapsTime::DateTime(CalendarDateTime::WithTimezone {
            date_time: at.naive_local(),
            tzid: at.timezone().name().to_string(),
        }),
    };
    value.to_property(name)
}

fn line(property: Property) -> String {
    let text: String = property.try_into().unwrap_or_default();
    text.trim_end().to_string()
}

fn stamp(name: &str) -> String {
    format!("{name}:{}", Utc::now().format("%Y%m%dT%H%M%SZ"))
}

/// An empty calendar object (a VCALENDAR with Osprey's PRODID) for events to go in.
pub(crate) fn object_block() -> Block {
    let mut object = Block::new("VCALENDAR");
    object.replace(
        &[],
        vec!["VERSION:2.0".into(), "PRODID:-//Osprey//os tool//EN".into()],
    );
    object
}

/// The TZIDs the events' times name (DTSTART, DTEND, EXDATE, RECURRENCE-ID, alarms), each
/// time it is named.
pub(crate) fn zones_named(events: &[Block]) -> Vec<String> {
    events
        .iter()
        .flat_map(|e| {
            e.props
                .iter()
                .chain(e.children.iter().flat_map(|c| &c.props))
        })
        .filter_map(|l| l.param("TZID"))
        .collect()
}

/// The text of a new calendar object with one event (and the VTIMEZONE its zone needs).
pub(crate) fn build_event(new: &NewEvent) -> String {
    let mut event = Block::new("VEVENT");
    let mut lines = vec![
        line(Property::new("UID", &new.uid)),
        stamp("DTSTAMP"),
        stamp("CREATED"),
        line(Property::new("SUMMARY", &new.title)),
        line(date_property("DTSTART", new.start)),
        line(date_property("DTEND", new.end)),
    ];
    if let Some(location) = new.location.as_deref().filter(|l| !l.is_empty()) {
        lines.push(line(Property::new("LOCATION", location)));
    }
    if let Some(description) = new.description.as_deref().filter(|d| !d.is_empty()) {
        lines.push(line(Property::new("DESCRIPTION", description)));
    }
    event.replace(&[], lines);
    let mut calendar = Block::new("VCALENDAR");
    calendar.replace(
        &[],
        vec![
            "VERSION:2.0".into(),
            "PRODID:-//Osprey//os tool//EN".into(),
            "CALSCALE:GREGORIAN".into(),
        ],
    );
    if let Moment::At(at) = new.start
        && at.timezone() != chrono_tz::UTC
    {
        calendar.children.push(vtimezone(at.timezone(), at.year()));
    }
    calendar.children.push(event);
    calendar.to_text()
}

/// A VTIMEZONE for `tz` with its transitions from the year before `year` to two years after
/// (RFC 5545 3.6.5 wants one for every TZID; readers that know IANA names ignore it).
pub(crate) fn vtimezone(tz: Tz, year: i32) -> Block {
    let mut block = Block::new("VTIMEZONE");
    block.replace(&[], vec![format!("TZID:{}", tz.name())]);
    let offset = |at: DateTime<Utc>| tz.offset_from_utc_datetime(&at.naive_utc());
    let first = Utc
        .with_ymd_and_hms(year - 1, 1, 1, 0, 0, 0)
        .single()
        .unwrap_or_else(Utc::now);
    let last = Utc
        .with_ymd_and_hms(year + 3, 1, 1, 0, 0, 0)
        .single()
        .unwrap_or_else(Utc::now);
    let format_offset = |o: FixedOffset| {
        let seconds = o.local_minus_utc();
        let sign = if seconds < 0 { '-' } else { '+' };
        let seconds = seconds.abs();
        format!("{sign}{:02}{:02}", seconds / 3600, seconds % 3600 / 60)
    };
    let mut observance = |from: FixedOffset, at: DateTime<Utc>, to: chrono_tz::TzOffset| {
        let kind = if to.dst_offset().is_zero() {
            "STANDARD"
        } else {
            "DAYLIGHT"
        };
        let mut part = Block::new(kind);
        let mut lines = vec![
            format!(
                "DTSTART:{}",
                (at + from).naive_utc().format("%Y%m%dT%H%M%S")
            ),
            format!("TZOFFSETFROM:{}", format_offset(from)),
            format!("TZOFFSETTO:{}", format_offset(to.fix())),
        ];
        if let Some(name) = to.abbreviation() {
            lines.push(fold(&format!("TZNAME:{name}")));
        }
        part.replace(&[], lines);
        block.children.push(part);
    };
    let mut previous = offset(first);
    let mut day = first;
    let mut found = false;
    while day < last {
        let next = day + Duration::days(1);
        let now = offset(next);
        if now.fix() != previous.fix() {
            // The transition is within this day: find its second.
            let (mut low, mut high) = (day, next);
            while high - low > Duration::seconds(1) {
                let middle = low + (high - low) / 2;
                if offset(middle).fix() == previous.fix() {
                    low = middle;
                } else {
                    high = middle;
                }
            }
            observance(previous.fix(), high, offset(high));
            found = true;
        }
        previous = now;
        day = next;
    }
    if !found {
        let fixed = offset(first);
        observance(
            fixed.fix(),
            Utc.with_ymd_and_hms(1970, 1, 1, 0, 0, 0)
                .single()
                .expect("a valid date")
                - fixed.fix(),
            fixed,
        );
    }
    block
}

/// What an update changes; `None` keeps the value.
#[derive(Clone, Debug, Default)]
pub(crate) struct Changes {
    pub title: Option<String>,
    pub start: Option<Input>,
    pub end: Option<Input>,
    pub all_day: Option<bool>,
    pub timezone: Option<Tz>,
    pub location: Option<String>,
    pub description: Option<String>,
}

/// The object's text with the series `uid` changed; every line the change does not touch stays
/// as it was. A changed start keeps the length unless `end` is given too; a changed zone keeps
/// the wall-clock times.
pub(crate) fn update_event(text: &str, uid: &str, changes: &Changes, local: Tz) -> Result<String> {
    let current = parse_events(text, local)?
        .into_iter()
        .find(|e| e.uid == uid && e.recurrence_id.is_none())
        .ok_or_else(|| Error::Failed(format!("the stored object holds no event {uid:?}")))?;
    let mut document = Document::parse(text)?;
    let calendar = document
        .blocks
        .iter_mut()
        .find(|b| b.name == "VCALENDAR")
        .ok_or_else(|| Error::Failed("the stored object is not a VCALENDAR".into()))?;
    let zone = changes.timezone.unwrap_or(match current.start {
        Moment::At(at) if current.zone_known => at.timezone(),
        _ => local,
    });
    let times_change = changes.start.is_some()
        || changes.end.is_some()
        || changes.all_day.is_some()
        || changes.timezone.is_some();
    let mut lines = Vec::new();
    let mut needs_zone = None;
    if times_change {
        let all_day = changes.all_day.unwrap_or(match changes.start {
            Some(Input::Day(_)) => true,
            Some(_) => false,
            None => current.all_day(),
        });
        let (start, end) = if all_day {
            let start = match changes.start {
                Some(input) => input.day(),
                None => match current.start {
                    Moment::Day(day) => day,
                    Moment::At(at) => at.with_timezone(&zone).date_naive(),
                },
            };
            let days = match (current.start, current.end) {
                (Moment::Day(s), Moment::Day(e)) => (e - s).num_days().max(1),
                _ => 1,
            };
            let end = match changes.end {
                Some(input) => input.day() + Duration::days(1),
                None => start + Duration::days(days),
            };
            (Moment::Day(start), Moment::Day(end))
        } else {
            let wall = |m: Moment| match m {
                Moment::At(at) => at.naive_local(),
                Moment::Day(day) => day.and_hms_opt(9, 0, 0).expect("a valid time"),
            };
            let start = match changes.start {
                Some(input) => input.at(zone)?,
                None => input_local(zone, wall(current.start))?,
            };
            let length = if current.all_day() {
                Duration::hours(1)
            } else {
                current.duration(local)
            };
            let end = match changes.end {
                Some(input) => input.at(zone)?,
                None if changes.start.is_some() => start + length,
                None => input_local(zone, wall(current.end))?,
            };
            needs_zone = Some(zone);
            (Moment::At(start), Moment::At(end))
        };
        check_order(start, end, local)?;
        lines.push(line(date_property("DTSTART", start)));
        lines.push(line(date_property("DTEND", end)));
    }
    let master = calendar
        .children
        .iter_mut()
        .find(|b| {
            b.name == "VEVENT" && b.value("UID").as_deref() == Some(uid) && !b.has("RECURRENCE-ID")
        })
        .ok_or_else(|| Error::Failed(format!("the stored object holds no event {uid:?}")))?;
    if !lines.is_empty() {
        master.replace(&["DTSTART", "DTEND", "DURATION"], lines);
    }
    for (name, value) in [
        ("SUMMARY", &changes.title),
        ("LOCATION", &changes.location),
        ("DESCRIPTION", &changes.description),
    ] {
        if let Some(value) = value {
            let new = if value.is_empty() {
                vec![]
            } else {
                vec![line(Property::new(name, value))]
            };
            master.replace(&[name], new);
        }
    }
    let sequence = master
        .value("SEQUENCE")
        .and_then(|s| s.parse::<u32>().ok())
        .unwrap_or(0);
    master.replace(&["SEQUENCE"], vec![format!("SEQUENCE:{}", sequence + 1)]);
    master.replace(&["DTSTAMP"], vec![stamp("DTSTAMP")]);
    master.replace(&["LAST-MODIFIED"], vec![stamp("LAST-MODIFIED")]);
    if let Some(zone) = needs_zone.filter(|z| *z != chrono_tz::UTC) {
        let has = calendar
            .children
            .iter()
            .any(|b| b.name == "VTIMEZONE" && b.value("TZID").as_deref() == Some(zone.name()));
        if !has {
            let year = match current.start {
                Moment::At(at) => at.year(),
                Moment::Day(day) => day.year(),
            };
            calendar.children.insert(0, vtimezone(zone, year));
        }
    }
    Ok(document.to_text())
}

/// An end after its start.
pub(crate) fn check_order(start: Moment, end: Moment, local: Tz) -> Result<()> {
    if end.instant(local) <= start.instant(local) {
        return Err(Error::invalid("`end` must be after `start`"));
    }
    Ok(())
}

/// `2026-03-29 Sun 10:00-11:00` in `local`, the event's own zone after it when that differs.
pub(crate) fn describe_time(occurrence: &Occurrence, local: Tz) -> String {
    match (occurrence.start, occurrence.end) {
        (Moment::Day(start), Moment::Day(end)) => {
            let last = end - Duration::days(1);
            if last <= start {
                format!("{} all day", start.format("%Y-%m-%d %a"))
            } else {
                format!(
                    "{} - {} all day",
                    start.format("%Y-%m-%d %a"),
                    last.format("%Y-%m-%d %a")
                )
            }
        }
        (start, end) => {
            let (s, e) = (
                start.instant(local).with_timezone(&local),
                end.instant(local).with_timezone(&local),
            );
            let mut text = span(s, e);
            if let Moment::At(own) = start
                && own.timezone() != local
                && occurrence.event.zone.is_some()
                && occurrence.event.zone_known
            {
                let zone = own.timezone();
                text.push_str(&format!(
                    " ({} {})",
                    span(s.with_timezone(&zone), e.with_timezone(&zone)),
                    zone.name()
                ));
            }
            if !occurrence.event.zone_known
                && let Some(zone) = &occurrence.event.zone
            {
                text.push_str(&format!(
                    " (zone {zone:?} unknown here: read as local time)"
                ));
            }
            text
        }
    }
}

fn span<Z: TimeZone>(start: DateTime<Z>, end: DateTime<Z>) -> String
where
    Z::Offset: std::fmt::Display,
{
    if start.date_naive() == end.date_naive() {
        format!(
            "{} {}-{}",
            start.format("%Y-%m-%d %a"),
            start.format("%H:%M"),
            end.format("%H:%M")
        )
    } else {
        format!(
            "{} - {}",
            start.format("%Y-%m-%d %a %H:%M"),
            end.format("%Y-%m-%d %a %H:%M")
        )
    }
}

/// The UTC bounds of a listing: `start` and `end` read in `local` (a day's end is the next
/// midnight), by default from the start of today for 30 days.
pub(crate) fn range(
    start: Option<Input>,
    end: Option<Input>,
    local: Tz,
) -> Result<(DateTime<Utc>, DateTime<Utc>)> {
    let today = Utc::now().with_timezone(&local).date_naive();
    let from = match start {
        Some(input) => input.at(local)?,
        None => read_local(local, today.and_time(NaiveTime::MIN)),
    };
    let to = match end {
        Some(Input::Day(day)) => {
            read_local(local, (day + Duration::days(1)).and_time(NaiveTime::MIN))
        }
        Some(input) => input.at(local)?,
        None => from + Duration::days(30),
    };
    if to <= from {
        return Err(Error::invalid("`end` must be after `start`"));
    }
    Ok((from.with_timezone(&Utc), to.with_timezone(&Utc)))
}

/// `YYYYMMDDTHHMMSSZ` for a CalDAV time-range.
pub(crate) fn utc_stamp(at: DateTime<Utc>) -> String {
    at.format("%Y%m%dT%H%M%SZ").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    const BERLIN: Tz = chrono_tz::Europe::Berlin;

    fn weekly() -> String {
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nBEGIN:VEVENT\r\nUID:w\r\nSUMMARY:Sync\r\n\
         DTSTART;TZID=Europe/Berlin:20260322T100000\r\nDTEND;TZID=Europe/Berlin:20260322T110000\r\n\
         RRULE:FREQ=WEEKLY;COUNT=4\r\nEXDATE;TZID=Europe/Berlin:20260405T100000\r\nEND:VEVENT\r\n\
         BEGIN:VEVENT\r\nUID:w\r\nRECURRENCE-ID;TZID=Europe/Berlin:20260412T100000\r\n\
         DTSTART;TZID=Europe/Berlin:20260412T150000\r\nDTEND;TZID=Europe/Berlin:20260412T160000\r\n\
         SUMMARY:Sync (moved)\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
            .to_string()
    }

    #[test]
    fn weekly_series_keep_wall_clock_time_across_dst_with_exceptions() {
        let events = parse_events(&weekly(), chrono_tz::UTC).unwrap();
        let range = range(
            Some(Input::Day(NaiveDate::from_ymd_opt(2026, 3, 1).unwrap())),
            Some(Input::Day(NaiveDate::from_ymd_opt(2026, 4, 30).unwrap())),
            chrono_tz::UTC,
        )
        .unwrap();
        let mut found: Vec<(String, String)> = occurrences(&events, Some(&range), chrono_tz::UTC)
            .iter()
            .map(|o| {
                (
                    o.start.instant(chrono_tz::UTC).to_rfc3339(),
                    o.event.summary.clone(),
                )
            })
            .collect();
        found.sort();
        // 10:00 Berlin is 09:00 UTC before the switch on 29 March and 08:00 after it; 5 April
        // is excluded; 12 April was moved to 15:00.
        assert_eq!(
            found,
            [
                ("2026-03-22T09:00:00+00:00".to_string(), "Sync".to_string()),
                ("2026-03-29T08:00:00+00:00".into(), "Sync".into()),
                ("2026-04-12T13:00:00+00:00".into(), "Sync (moved)".into()),
            ]
        );
    }

    #[test]
    fn all_day_series_keep_whole_days_across_dst() {
        let text = "BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nUID:d\r\nSUMMARY:Gym\r\n\
                    DTSTART;VALUE=DATE:20260322\r\nDTEND;VALUE=DATE:20260323\r\n\
                    RRULE:FREQ=WEEKLY;COUNT=3\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";
        let events = parse_events(text, BERLIN).unwrap();
        let range = range(
            Some(Input::Day(NaiveDate::from_ymd_opt(2026, 3, 29).unwrap())),
            Some(Input::Day(NaiveDate::from_ymd_opt(2026, 3, 29).unwrap())),
            BERLIN,
        )
        .unwrap();
        let found = occurrences(&events, Some(&range), BERLIN);
        assert_eq!(found.len(), 1);
        let day = |d| Moment::Day(NaiveDate::from_ymd_opt(2026, 3, d).unwrap());
        assert_eq!((found[0].start, found[0].end), (day(29), day(30)));
    }

    #[test]
    fn input_times_refuse_the_skipped_hour_and_take_the_first_repeated_one() {
        let skipped = Input::parse("2026-03-29T02:30").unwrap();
        let error = skipped.at(BERLIN).unwrap_err().to_string();
        assert!(error.contains("does not exist in Europe/Berlin"), "{error}");
        let repeated = Input::parse("2026-10-25 02:30")
            .unwrap()
            .at(BERLIN)
            .unwrap();
        assert_eq!(repeated.to_rfc3339(), "2026-10-25T02:30:00+02:00");
        assert_eq!(
            Input::parse("2026-03-29T10:00Z").unwrap(),
            Input::Fixed(
                Utc.with_ymd_and_hms(2026, 3, 29, 10, 0, 0)
                    .unwrap()
                    .fixed_offset()
            )
        );
        assert!(matches!(Input::parse("2026-03-29").unwrap(), Input::Day(_)));
        Input::parse("next tuesday").unwrap_err();
        assert_eq!(
            zone_named("/mozilla.org/20050126_1/Europe/Berlin"),
            Some(BERLIN)
        );
        assert_eq!(zone_named("W. Europe Standard Time"), None);
    }

    #[test]
    fn new_events_carry_their_zone_and_a_vtimezone_and_read_back() {
        let start = Input::parse("2026-03-29T01:30")
            .unwrap()
            .at(BERLIN)
            .unwrap();
        let text = build_event(&NewEvent {
            uid: "u1".into(),
            title: "Night, shift; ok".into(),
            start: Moment::At(start),
            end: Moment::At(start + Duration::hours(2)),
            location: None,
            description: Some("line one\nline two".into()),
        });
        assert!(
            text.contains("DTSTART;TZID=Europe/Berlin:20260329T013000\r\n"),
            "{text}"
        );
        // Two hours after 01:30 CET is 04:30 CEST.
        assert!(
            text.contains("DTEND;TZID=Europe/Berlin:20260329T043000\r\n"),
            "{text}"
        );
        assert!(
            text.contains("BEGIN:VTIMEZONE\r\nTZID:Europe/Berlin\r\n"),
            "{text}"
        );
        assert!(text.contains("BEGIN:DAYLIGHT\r\nDTSTART:20260329T020000\r\nTZOFFSETFROM:+0100\r\nTZOFFSETTO:+0200\r\nTZNAME:CEST\r\n"), "{text}");
        let events = parse_events(&text, chrono_tz::UTC).unwrap();
        assert_eq!(events[0].summary, "Night, shift; ok");
        assert_eq!(events[0].description, "line one\nline two");
        assert_eq!(events[0].duration(chrono_tz::UTC), Duration::hours(2));
    }

    #[test]
    fn updates_change_only_what_they_name() {
        let text = weekly().replace("SUMMARY:Sync\r\n", "SUMMARY:Sync\r\nX-KEEP;A=\"x:y\":z\r\n");
        let changes = Changes {
            start: Some(Input::parse("2026-03-22T11:00").unwrap()),
            location: Some("Room 4".into()),
            ..Changes::default()
        };
        let updated = update_event(&text, "w", &changes, chrono_tz::UTC).unwrap();
        assert!(updated.contains("X-KEEP;A=\"x:y\":z\r\n"), "{updated}");
        assert!(
            updated.contains("DTSTART;TZID=Europe/Berlin:20260322T110000\r\n"),
            "{updated}"
        );
        assert!(
            updated.contains("DTEND;TZID=Europe/Berlin:20260322T120000\r\n"),
            "{updated}"
        );
        assert!(updated.contains("LOCATION:Room 4\r\n"), "{updated}");
        assert!(updated.contains("SEQUENCE:1\r\n"), "{updated}");
        // The moved instance is untouched.
        assert!(
            updated.contains("DTSTART;TZID=Europe/Berlin:20260412T150000\r\n"),
            "{updated}"
        );
        let all_day = Changes {
            start: Some(Input::parse("2026-04-01").unwrap()),
            end: Some(Input::parse("2026-04-02").unwrap()),
            ..Changes::default()
        };
        let updated = update_event(&text, "w", &all_day, chrono_tz::UTC).unwrap();
        assert!(
            updated.contains("DTSTART;VALUE=DATE:20260401\r\n"),
            "{updated}"
        );
        assert!(
            updated.contains("DTEND;VALUE=DATE:20260403\r\n"),
            "{updated}"
        );
    }
}
