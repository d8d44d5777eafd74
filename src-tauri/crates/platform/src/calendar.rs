//! The `calendar` resource: the events of the configured CalDAV accounts and of the desktop's
//! own calendars (Evolution Data Server; see `dav`). Listing
//! asks the server for the events that overlap the range (widened by a day, so all-day and
//! floating events are not cut by the server's idea of the zone) and expands recurrences here.
//! Creating is idempotent: the object is stored at `<uid>.ics` with `If-None-Match: *`, and a
//! create without a uid derives one from title, start and calendar, so the same create twice
//! finds the first instead of making a duplicate. Update and delete send `If-Match` with the
//! version the model was last shown.

use chrono::{DateTime, Duration, Utc};
use chrono_tz::Tz;
use osprey_tools::Call;
use osprey_types::ToolResult;

use crate::dav::ics::{self, Changes, Input, Moment, NewEvent};
use crate::dav::lines::{Block, Document};
use crate::dav::resource::{PathCheck, derived_uid, file_path, read_file, write_file};
use crate::dav::{Collection, Dav, Kind, Located, check_uid};
use crate::error::{Error, Result};
use crate::tool::{count, text};

/// Lines a listing shows at most.
const MAX_LINES: usize = 300;

pub(crate) async fn run(dav: &Dav, call: &Call, paths: PathCheck<'_>) -> Result<ToolResult> {
    let account = call.str("account");
    match call.action() {
        "calendars" => text(dav.describe_collections(Kind::Calendar, account).await?),
        "list" | "search" => list(dav, call).await,
        "create" => create(dav, call).await,
        "update" => update(dav, call).await,
        "delete" => delete(dav, call).await,
        "import" => import(dav, call, paths).await,
        "export" => export(dav, call, paths).await,
        other => Err(Error::invalid(format!("unknown calendar action {other}"))),
    }
}

fn input(call: &Call, key: &str) -> Result<Option<Input>> {
    call.str(key).map(Input::parse).transpose()
}

fn zone(call: &Call) -> Result<Option<Tz>> {
    call.str("timezone")
        .map(|name| {
            ics::zone_named(name).ok_or_else(|| {
                Error::invalid(format!(
                    "unknown time zone {name:?}: give an IANA name such as Europe/Berlin or \
                     America/New_York"
                ))
            })
        })
        .transpose()
}

/// An object with its parsed events, and the calendar it is in.
type Fetched = (Collection, crate::dav::StoredObject, Vec<ics::Event>);

/// The events of `collections` overlapping `range` (all events without one), each object with
/// its parsed events, and the desktop calendars that could not be read, with why.
async fn fetch(
    dav: &Dav,
    collections: &[Collection],
    range: Option<&(DateTime<Utc>, DateTime<Utc>)>,
) -> Result<(Vec<Fetched>, Vec<String>)> {
    let local = dav.local_zone();
    let widened = range.map(|(from, to)| (*from - Duration::days(1), *to + Duration::days(1)));
    let (objects, unread) = dav.objects_of(collections, Kind::Calendar, widened).await?;
    let mut out = Vec::new();
    for (collection, object) in objects {
        match ics::parse_events(&object.text, local) {
            Ok(events) => out.push((collection, object, events)),
            Err(why) => {
                tracing::debug!(url = %object.url, %why, "skipping an unreadable event")
            }
        }
    }
    Ok((out, unread))
}

/// The line that names the calendars or address books a listing could not read.
pub(crate) fn unread_line(unread: &[String]) -> Option<String> {
    (!unread.is_empty()).then(|| format!("Not read: {}", unread.join("; ")))
}

async fn list(dav: &Dav, call: &Call) -> Result<ToolResult> {
    let local = dav.local_zone();
    let search = call.action() == "search";
    let needle = call.str("query").map(|q| q.trim().to_lowercase());
    if search && needle.as_deref().is_none_or(str::is_empty) {
        return Err(Error::invalid(
            "calendar search needs `query`: the text to look for",
        ));
    }
    let (start, end) = (input(call, "start")?, input(call, "end")?);
    let range = if search && start.is_none() && end.is_none() {
        None
    } else {
        Some(ics::range(start, end, local)?)
    };
    let (collections, accounts) = dav
        .select(Kind::Calendar, call.str("account"), call.str("calendar"))
        .await?;
    let (objects, unread) = fetch(dav, &collections, range.as_ref()).await?;
    let mut rows: Vec<(DateTime<Utc>, String)> = Vec::new();
    for (collection, object, events) in &objects {
        dav.remember(&object.url, object.etag.as_deref());
        for occurrence in ics::occurrences(events, range.as_ref(), local) {
            let event = occurrence.event;
            if let Some(needle) = &needle
                && !event.matches(needle)
            {
                continue;
            }
            let mut line = format!(
                "{}  {}",
                ics::describe_time(&occurrence, local),
                if event.summary.is_empty() {
                    "(no title)"
                } else {
                    &event.summary
                }
            );
            if !event.location.is_empty() {
                line.push_str(&format!(" @ {}", event.location));
            }
            line.push_str(&format!(
                "  [uid {}; {}{}]",
                event.uid,
                collection.label(accounts),
                match (&event.rule, occurrence.repeats) {
                    (Some(rule), true) => format!("; repeats {rule}"),
                    (None, true) => "; repeats".to_string(),
                    _ => String::new(),
                }
            ));
            if !event.description.is_empty() {
                let short: String = event.description.chars().take(160).collect();
                line.push_str(&format!("\n    {}", short.replace('\n', " ")));
            }
            rows.push((occurrence.start.instant(local), line));
        }
    }
    rows.sort();
    let heading = match &range {
        Some((from, to)) => format!(
            "{} from {} to {} (times in {}):",
            if search { "Matching events" } else { "Events" },
            from.with_timezone(&local).format("%Y-%m-%d %H:%M"),
            to.with_timezone(&local).format("%Y-%m-%d %H:%M"),
            local.name()
        ),
        None => format!(
            "Matching events (times in {}; a series is shown at its first start):",
            local.name()
        ),
    };
    let mut lines: Vec<String> = Vec::new();
    if rows.is_empty() {
        lines.push(format!("{heading} none."));
    } else {
        let total = rows.len();
        lines.push(heading);
        lines.extend(rows.into_iter().take(MAX_LINES).map(|(_, line)| line));
        if total > MAX_LINES {
            lines.push(format!("({} more; narrow the range)", total - MAX_LINES));
        }
    }
    lines.extend(unread_line(&unread));
    text(lines.join("\n"))
}

async fn create(dav: &Dav, call: &Call) -> Result<ToolResult> {
    let local = dav.local_zone();
    let title = call.str("title").unwrap_or_default().trim().to_string();
    if title.is_empty() {
        return Err(Error::invalid("calendar create needs `title`"));
    }
    let start =
        input(call, "start")?.ok_or_else(|| Error::invalid("calendar create needs `start`"))?;
    let end = input(call, "end")?;
    let all_day = match call.bool("all_day") {
        Some(all_day) => all_day,
        None => matches!(start, Input::Day(_)),
    };
    let (start, end) = if all_day {
        let first = start.day();
        let last = end.map_or(first, Input::day);
        if last < first {
            return Err(Error::invalid("`end` (the last day) is before `start`"));
        }
        (Moment::Day(first), Moment::Day(last + Duration::days(1)))
    } else {
        if matches!(start, Input::Day(_)) {
            return Err(Error::invalid(
                "`start` is a date: give a time (2026-03-29T10:00) or set all_day",
            ));
        }
        let zone = zone(call)?.unwrap_or(local);
        let start = start.at(zone)?;
        let end = match end {
            Some(end) => end.at(zone)?,
            None => start + Duration::hours(1),
        };
        (Moment::At(start), Moment::At(end))
    };
    ics::check_order(start, end, local)?;
    let (collection, accounts) = dav
        .pick(Kind::Calendar, call.str("account"), call.str("calendar"))
        .await?;
    let uid = match call.str("uid") {
        Some(uid) => check_uid(uid)?.to_string(),
        None => {
            let start_key = match start {
                Moment::Day(day) => day.to_string(),
                Moment::At(at) => at.with_timezone(&Utc).to_rfc3339(),
            };
            derived_uid(&[&title.to_lowercase(), &start_key, collection.url.as_str()])
        }
    };
    let new = NewEvent {
        uid: uid.clone(),
        title: title.clone(),
        start,
        end,
        location: call.str("location").map(str::to_string),
        description: call.str("description").map(str::to_string),
    };
    let body = ics::build_event(&new);
    let parsed = ics::parse_events(&body, local)?;
    let when = ics::describe_time(
        &ics::Occurrence {
            event: &parsed[0],
            start,
            end,
            repeats: false,
        },
        local,
    );
    text(
        dav.create_once(&collection, accounts, Kind::Calendar, &uid, body, |label| {
            format!("Created {title:?} {when} in {label} (uid {uid}).")
        })
        .await?,
    )
}

async fn update(dav: &Dav, call: &Call) -> Result<ToolResult> {
    let local = dav.local_zone();
    let changes = Changes {
        title: call.str("title").map(|t| t.trim().to_string()),
        start: input(call, "start")?,
        end: input(call, "end")?,
        all_day: call.bool("all_day"),
        timezone: zone(call)?,
        location: call.str("location").map(str::to_string),
        description: call.str("description").map(str::to_string),
    };
    if changes.title.is_none()
        && changes.start.is_none()
        && changes.end.is_none()
        && changes.all_day.is_none()
        && changes.timezone.is_none()
        && changes.location.is_none()
        && changes.description.is_none()
    {
        return Err(Error::invalid(
            "nothing to change: give title, start, end, all_day, timezone, location or description",
        ));
    }
    let Located {
        collection,
        object,
        uid,
        ..
    } = dav.locate(Kind::Calendar, call).await?;
    let updated = ics::update_event(&object.text, &uid, &changes, local)?;
    dav.replace(&collection, Kind::Calendar, &object, updated.clone())
        .await?;
    let events = ics::parse_events(&updated, local)?;
    let event = events
        .iter()
        .find(|e| e.uid == uid && e.recurrence_id.is_none())
        .ok_or_else(|| Error::Failed("the updated event did not read back".into()))?;
    let when = ics::describe_time(
        &ics::Occurrence {
            event,
            start: event.start,
            end: event.end,
            repeats: false,
        },
        local,
    );
    text(format!(
        "Updated {:?} (uid {uid}): {when}{}.",
        event.summary,
        if event.rule.is_some() {
            ", the whole series"
        } else {
            ""
        }
    ))
}

async fn delete(dav: &Dav, call: &Call) -> Result<ToolResult> {
    let local = dav.local_zone();
    text(
        dav.delete_by_uid(Kind::Calendar, call, |body, uid| {
            ics::parse_events(body, local)
                .ok()?
                .into_iter()
                .find(|e| e.uid == uid)
                .map(|e| e.summary)
        })
        .await?,
    )
}

async fn import(dav: &Dav, call: &Call, paths: PathCheck<'_>) -> Result<ToolResult> {
    let path = file_path(call, Kind::Calendar, paths, false)?;
    let content = read_file(&path).await?;
    let document = Document::parse(&content)
        .map_err(|e| Error::invalid(format!("{} is not an .ics file: {e}", path.display())))?;
    let (collection, accounts) = dav
        .pick(Kind::Calendar, call.str("account"), call.str("calendar"))
        .await?;
    let mut zones: Vec<Block> = Vec::new();
    let mut groups: Vec<(String, Vec<Block>)> = Vec::new();
    for calendar in document.blocks.iter().filter(|b| b.name == "VCALENDAR") {
        for block in &calendar.children {
            match block.name.as_str() {
                "VTIMEZONE" => zones.push(block.clone()),
                "VEVENT" => {
                    let mut event = block.clone();
                    let uid = match event.value("UID").filter(|u| !u.is_empty()) {
                        Some(uid) => uid,
                        None => {
                            let uid = derived_uid(&[
                                &event.value("SUMMARY").unwrap_or_default().to_lowercase(),
                                &event.value("DTSTART").unwrap_or_default(),
                                collection.url.as_str(),
                            ]);
                            event.replace(&["UID"], vec![format!("UID:{uid}")]);
                            uid
                        }
                    };
                    match groups.iter_mut().find(|(u, _)| *u == uid) {
                        Some((_, events)) => events.push(event),
                        None => groups.push((uid, vec![event])),
                    }
                }
                _ => {}
            }
        }
    }
    if groups.is_empty() {
        return Err(Error::invalid(format!(
            "{} holds no events",
            path.display()
        )));
    }
    let mut objects = Vec::new();
    for (uid, events) in groups {
        let mut object = ics::object_block();
        let used = ics::zones_named(&events);
        for zone in &zones {
            if zone.value("TZID").is_some_and(|tzid| used.contains(&tzid)) {
                object.children.push(zone.clone());
            }
        }
        object.children.extend(events);
        objects.push((uid, object.to_text()));
    }
    text(
        dav.import_objects(&collection, accounts, Kind::Calendar, objects, &path)
            .await?,
    )
}

async fn export(dav: &Dav, call: &Call, paths: PathCheck<'_>) -> Result<ToolResult> {
    let local = dav.local_zone();
    let path = file_path(call, Kind::Calendar, paths, true)?;
    let (start, end) = (input(call, "start")?, input(call, "end")?);
    let range = if start.is_none() && end.is_none() {
        None
    } else {
        Some(ics::range(start, end, local)?)
    };
    let (collections, _) = dav
        .select(Kind::Calendar, call.str("account"), call.str("calendar"))
        .await?;
    let (objects, unread) = fetch(dav, &collections, range.as_ref()).await?;
    let mut out = Block::new("VCALENDAR");
    out.replace(
        &[],
        vec![
            "VERSION:2.0".into(),
            "PRODID:-//Osprey//os tool//EN".into(),
            "CALSCALE:GREGORIAN".into(),
        ],
    );
    let mut zones: Vec<Block> = Vec::new();
    let mut events: Vec<Block> = Vec::new();
    let mut written = 0;
    for (_, object, parsed) in &objects {
        if range.is_some() && ics::occurrences(parsed, range.as_ref(), local).is_empty() {
            continue;
        }
        let document = Document::parse(&object.text)?;
        for calendar in document.blocks.iter().filter(|b| b.name == "VCALENDAR") {
            for block in &calendar.children {
                match block.name.as_str() {
                    "VTIMEZONE" => {
                        let tzid = block.value("TZID");
                        if !zones.iter().any(|z| z.value("TZID") == tzid) {
                            zones.push(block.clone());
                        }
                    }
                    "VEVENT" => events.push(block.clone()),
                    _ => {}
                }
            }
        }
        written += 1;
    }
    out.children.extend(zones);
    out.children.extend(events);
    write_file(&path, &out.to_text()).await?;
    text(format!(
        "Wrote {} to {}.{}",
        count(written, "event"),
        path.display(),
        unread_line(&unread)
            .map(|l| format!(" {l}"))
            .unwrap_or_default()
    ))
}
