//! Where the objects of a collection are read and written: a CalDAV/CardDAV server over HTTP,
//! or (Linux) Evolution Data Server over D-Bus. The calendar and contacts resources only call
//! these, so listing, search, idempotent creation, update and delete work the same on both.
//!
//! EDS has no ETags: the version of an EDS object is a hash of its text, checked against the
//! object as EDS has it now before a change, so a change someone made since the model was shown
//! the object is refused the same way as an HTTP 412. EDS hands out bare components (a VEVENT,
//! a VCARD); an event is wrapped in a VCALENDAR with the VTIMEZONEs the calendar has for its
//! TZIDs, and on writing the VTIMEZONEs are given to the calendar first, then the events.

use chrono::{DateTime, Utc};
use reqwest::Url;

#[cfg(target_os = "linux")]
use super::lines::Document;
use super::{Collection, Dav, Kind, Store, StoredObject, contains_uid, http};
use crate::dav::ics;
use crate::error::{Error, Result};

impl Dav {
    /// The objects of `collection`: for calendars the objects with events overlapping `range`
    /// (all without one), for address books every card.
    pub(crate) async fn objects(
        &self,
        collection: &Collection,
        kind: Kind,
        range: Option<(DateTime<Utc>, DateTime<Utc>)>,
    ) -> Result<Vec<StoredObject>> {
        let stamps = range.map(|(from, to)| (ics::utc_stamp(from), ics::utc_stamp(to)));
        match &collection.store {
            Store::Dav(session) => {
                let query = match kind {
                    Kind::Calendar => http::event_query(stamps),
                    Kind::Contacts => http::card_query(),
                };
                self.http
                    .query(session, kind, &collection.url, &query)
                    .await
            }
            #[cfg(target_os = "linux")]
            Store::Eds(source) => {
                let sexp = match (kind, stamps) {
                    (Kind::Calendar, Some((from, to))) => format!(
                        "(occur-in-time-range? (make-time \"{from}\") (make-time \"{to}\"))"
                    ),
                    (Kind::Calendar, None) => "#t".to_string(),
                    // Address books take no `#t`: every card is the one whose any field
                    // contains the empty text.
                    (Kind::Contacts, _) => "(contains \"x-evolution-any-field\" \"\")".to_string(),
                };
                let texts = self.eds()?.query(kind, source, &sexp).await?;
                self.eds_objects(collection, kind, source, texts).await
            }
        }
    }

    /// The objects of several collections (see [`Dav::objects`]). A desktop calendar or address
    /// book that cannot be read (its backend is not installed, its account needs signing in
    /// again) is left out of a listing of several, and named with why in the second list, so
    /// one broken source does not hide the others; a server's error, or the only collection's,
    /// is the call's error.
    pub(crate) async fn objects_of(
        &self,
        collections: &[Collection],
        kind: Kind,
        range: Option<(DateTime<Utc>, DateTime<Utc>)>,
    ) -> Result<(Vec<(Collection, StoredObject)>, Vec<String>)> {
        let (mut out, mut unread) = (Vec::new(), Vec::new());
        for collection in collections {
            match self.objects(collection, kind, range).await {
                Ok(objects) => out.extend(objects.into_iter().map(|o| (collection.clone(), o))),
                Err(error) if collections.len() > 1 && collection.is_desktop() => {
                    unread.push(format!(
                        "{} ({}): {error}",
                        collection.name, collection.account
                    ));
                }
                Err(error) => return Err(error),
            }
        }
        Ok((out, unread))
    }

    /// Stores a new object at `url` unless something is there; false when it was (no
    /// duplicate is made).
    pub(crate) async fn create(
        &self,
        collection: &Collection,
        kind: Kind,
        url: &Url,
        text: String,
    ) -> Result<bool> {
        match &collection.store {
            Store::Dav(session) => match self.http.put(session, kind, url, text, None).await? {
                http::Put::Stored(etag) => {
                    self.remember(url, etag.as_deref());
                    Ok(true)
                }
                http::Put::AlreadyThere => Ok(false),
            },
            #[cfg(target_os = "linux")]
            Store::Eds(source) => {
                let eds = self.eds()?;
                let (uid, zones, events) = components(kind, &text)?;
                if eds.get(kind, source, &uid).await?.is_some() {
                    return Ok(false);
                }
                for zone in zones {
                    eds.add_timezone(source, zone).await?;
                }
                let created = eds.create(kind, source, events).await?;
                // EDS adds its own stamps: the next change checks against what it holds then.
                self.remember(url, None);
                Ok(created)
            }
        }
    }

    /// Replaces an object, only if it is still the version the model was shown (else the one
    /// just read).
    pub(crate) async fn replace(
        &self,
        collection: &Collection,
        kind: Kind,
        object: &StoredObject,
        text: String,
    ) -> Result<()> {
        let version = self.version(object);
        match &collection.store {
            Store::Dav(session) => {
                match self
                    .http
                    .put(session, kind, &object.url, text, Some(&version))
                    .await?
                {
                    http::Put::Stored(etag) => {
                        self.remember(&object.url, etag.as_deref());
                        Ok(())
                    }
                    http::Put::AlreadyThere => Err(Error::Failed(
                        "the server answered an update as a create".into(),
                    )),
                }
            }
            #[cfg(target_os = "linux")]
            Store::Eds(source) => {
                let eds = self.eds()?;
                let (uid, zones, events) = components(kind, &text)?;
                self.eds_unchanged(collection, kind, source, &uid, &version)
                    .await?;
                for zone in zones {
                    eds.add_timezone(source, zone).await?;
                }
                for event in events {
                    // A series (or a single event) as a whole; a changed occurrence alone.
                    let mod_type = if kind == Kind::Calendar
                        && event.lines().any(|l| l.starts_with("RECURRENCE-ID"))
                    {
                        "this"
                    } else {
                        "all"
                    };
                    eds.modify(kind, source, event, mod_type).await?;
                }
                self.remember(&object.url, None);
                Ok(())
            }
        }
    }

    /// Deletes an object on the same condition; false when it was already gone.
    pub(crate) async fn remove(
        &self,
        collection: &Collection,
        kind: Kind,
        object: &StoredObject,
    ) -> Result<bool> {
        let version = self.version(object);
        let deleted = match &collection.store {
            Store::Dav(session) => {
                self.http
                    .delete(session, kind, &object.url, Some(&version))
                    .await?
            }
            #[cfg(target_os = "linux")]
            Store::Eds(source) => {
                let (uid, _, _) = components(kind, &object.text)?;
                if !self
                    .eds_unchanged(collection, kind, source, &uid, &version)
                    .await?
                {
                    return Ok(false);
                }
                self.eds()?.remove(kind, source, &uid).await?
            }
        };
        self.remember(&object.url, None);
        Ok(deleted)
    }

    /// The object with `uid` in one of `collections`: on a server the file Osprey would name it
    /// first, then a query by UID; in EDS by its UID.
    pub(crate) async fn find(
        &self,
        kind: Kind,
        collections: &[Collection],
        uid: &str,
    ) -> Result<Option<(Collection, StoredObject)>> {
        // A desktop source that cannot be read does not stop the search in the others; it is
        // the answer only when the object is nowhere else.
        let mut skipped = None;
        for collection in collections {
            match self.find_in(kind, collection, uid).await {
                Ok(Some(object)) => return Ok(Some((collection.clone(), object))),
                Ok(None) => {}
                Err(error) if collections.len() > 1 && collection.is_desktop() => {
                    skipped.get_or_insert(format!(
                        "{} ({}): {error}",
                        collection.name, collection.account
                    ));
                }
                Err(error) => return Err(error),
            }
        }
        match skipped {
            None => Ok(None),
            Some(unread) => Err(Error::invalid(format!(
                "no {} with uid {uid:?} in the {}s that could be read (not read: {unread})",
                kind.object_word(),
                kind.collection_word()
            ))),
        }
    }

    async fn find_in(
        &self,
        kind: Kind,
        collection: &Collection,
        uid: &str,
    ) -> Result<Option<StoredObject>> {
        match &collection.store {
            Store::Dav(session) => {
                let url = collection.object_url(uid, kind)?;
                if let Some(object) = self.http.get(session, kind, &url).await?
                    && contains_uid(&object.text, uid)
                {
                    return Ok(Some(object));
                }
                let found = self
                    .http
                    .query(session, kind, &collection.url, &http::uid_query(kind, uid))
                    .await?;
                Ok(found.into_iter().find(|o| contains_uid(&o.text, uid)))
            }
            #[cfg(target_os = "linux")]
            Store::Eds(source) => {
                let Some(text) = self.eds()?.get(kind, source, uid).await? else {
                    return Ok(None);
                };
                Ok(self
                    .eds_objects(collection, kind, source, vec![text])
                    .await?
                    .into_iter()
                    .next())
            }
        }
    }

    /// The desktop's calendars (or address books) as collections; none where there is no EDS
    /// client (switched off, or not Linux), `service_unavailable` when EDS does not answer.
    pub(crate) async fn desktop_collections(&self, kind: Kind) -> Result<Vec<Collection>> {
        #[cfg(target_os = "linux")]
        if let Some(eds) = &self.eds
            && self.desktop_wanted().await
        {
            let mut out = Vec::new();
            for source in eds.sources(kind).await? {
                let mut url = Url::parse("eds:///").map_err(|e| Error::Failed(e.to_string()))?;
                url.path_segments_mut()
                    .map_err(|()| Error::Failed("eds: is not a base URL".into()))?
                    .clear()
                    .push(kind.collection_word())
                    .push(&source.uid)
                    .push("");
                out.push(Collection {
                    account: source.account,
                    url,
                    name: source.name,
                    store: Store::Eds(source.uid),
                    writable: source.writable,
                });
            }
            return Ok(out);
        }
        let _ = kind;
        Ok(Vec::new())
    }

    /// What the desktop's stores have, or why they do not answer; `None` where they are not
    /// looked for.
    pub(crate) async fn desktop_probe(&self, kind: Kind) -> Option<Result<String>> {
        #[cfg(target_os = "linux")]
        if let Some(eds) = &self.eds
            && self.desktop_wanted().await
        {
            return Some(eds.probe(kind).await);
        }
        let _ = kind;
        None
    }
}

#[cfg(target_os = "linux")]
impl Dav {
    /// Whether the settings (read now, off the async threads) leave the desktop's stores on.
    async fn desktop_wanted(&self) -> bool {
        let Some(settings) = self.config.settings.clone() else {
            return true;
        };
        tokio::task::spawn_blocking(move || settings.desktop())
            .await
            .unwrap_or(true)
    }

    fn eds(&self) -> Result<&crate::linux::eds::Eds> {
        self.eds
            .as_ref()
            .ok_or_else(|| Error::NotConfigured("the desktop's own stores are switched off".into()))
    }

    /// EDS's answers as stored objects: cards as they are; events grouped by UID (a series with
    /// its changed occurrences) into one VCALENDAR with the calendar's VTIMEZONEs for them.
    async fn eds_objects(
        &self,
        collection: &Collection,
        kind: Kind,
        source: &str,
        texts: Vec<String>,
    ) -> Result<Vec<StoredObject>> {
        let mut out = Vec::new();
        if kind == Kind::Contacts {
            for text in texts {
                let Ok((uid, _, _)) = components(kind, &text) else {
                    continue;
                };
                out.push(StoredObject {
                    url: collection.object_url(&uid, kind)?,
                    etag: Some(version_of(&text)),
                    text,
                });
            }
            return Ok(out);
        }
        let mut groups: Vec<(String, Vec<super::lines::Block>)> = Vec::new();
        for text in &texts {
            let Ok(document) = Document::parse(text) else {
                tracing::debug!(%source, "skipping an unreadable EDS object");
                continue;
            };
            for block in document
                .blocks
                .iter()
                .flat_map(|b| std::iter::once(b).chain(b.children.iter()))
                .filter(|b| b.name == "VEVENT")
            {
                let uid = block.value("UID").unwrap_or_default();
                match groups.iter_mut().find(|(u, _)| *u == uid) {
                    Some((_, events)) => events.push(block.clone()),
                    None => groups.push((uid, vec![block.clone()])),
                }
            }
        }
        let eds = self.eds()?;
        let mut zones: Vec<(String, Option<super::lines::Block>)> = Vec::new();
        for (uid, events) in groups {
            let mut calendar = ics::object_block();
            let mut tzids = ics::zones_named(&events);
            tzids.sort();
            tzids.dedup();
            for tzid in tzids {
                if !zones.iter().any(|(t, _)| *t == tzid) {
                    let zone = eds
                        .timezone(source, &tzid)
                        .await
                        .and_then(|text| Document::parse(&text).ok())
                        .and_then(|d| d.blocks.into_iter().find(|b| b.name == "VTIMEZONE"));
                    zones.push((tzid.clone(), zone));
                }
                if let Some((_, Some(zone))) = zones.iter().find(|(t, _)| *t == tzid) {
                    calendar.children.push(zone.clone());
                }
            }
            let version: String = events.iter().map(|e| e.to_text()).collect();
            calendar.children.extend(events);
            out.push(StoredObject {
                url: collection.object_url(&uid, kind)?,
                etag: Some(version_of(&version)),
                text: calendar.to_text(),
            });
        }
        Ok(out)
    }

    /// Whether the EDS object `uid` is still at `version` (the hash the model was shown):
    /// false when it is gone, a conflict error when it changed.
    async fn eds_unchanged(
        &self,
        collection: &Collection,
        kind: Kind,
        source: &str,
        uid: &str,
        version: &str,
    ) -> Result<bool> {
        let Some(now) = self.find_in(kind, collection, uid).await? else {
            return Ok(false);
        };
        let _ = source;
        if version != "*" && now.etag.as_deref() != Some(version) {
            return Err(Error::invalid(format!(
                "conflict: the {} {uid} in {} was changed (by someone else, or another app) \
                 since you last listed it, so nothing was changed. List it again, then repeat \
                 the change.",
                kind.object_word(),
                collection.name
            )));
        }
        Ok(true)
    }
}

/// The version of an EDS object: a hash of its unfolded lines in order, since EDS gives the
/// same card with its properties in another order depending on how it was asked for.
#[cfg(target_os = "linux")]
fn version_of(text: &str) -> String {
    let unfolded = text
        .replace("\r\n", "\n")
        .replace("\n ", "")
        .replace("\n\t", "");
    let mut lines: Vec<&str> = unfolded
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.is_empty())
        .collect();
    lines.sort_unstable();
    super::short_hash(&lines.join("\n"))
}

/// The UID of an object Osprey built (a VCARD, or a VCALENDAR with VTIMEZONEs and events) and
/// its parts as EDS takes them: the VTIMEZONEs and the events (or the card) as separate texts.
#[cfg(target_os = "linux")]
fn components(kind: Kind, text: &str) -> Result<(String, Vec<String>, Vec<String>)> {
    if kind == Kind::Contacts {
        let uid = Document::parse(text)?
            .blocks
            .iter()
            .find_map(|b| b.value("UID"))
            .ok_or_else(|| Error::invalid("the card has no UID"))?;
        return Ok((uid, Vec::new(), vec![text.to_string()]));
    }
    let document = Document::parse(text)?;
    let blocks = document
        .blocks
        .iter()
        .flat_map(|b| std::iter::once(b).chain(b.children.iter()));
    let (mut uid, mut zones, mut events) = (None, Vec::new(), Vec::new());
    for block in blocks {
        match block.name.as_str() {
            "VTIMEZONE" => zones.push(block.to_text()),
            "VEVENT" => {
                uid = uid.or_else(|| block.value("UID"));
                events.push((block.has("RECURRENCE-ID"), block.to_text()));
            }
            _ => {}
        }
    }
    // The series' master first: it must exist before a changed occurrence refers to it.
    events.sort_by_key(|(exception, _)| *exception);
    let uid = uid.ok_or_else(|| Error::invalid("the calendar object has no event with a UID"))?;
    Ok((uid, zones, events.into_iter().map(|(_, e)| e).collect()))
}
