//! The desktop's file index, Tracker 3 (GNOME's LocalSearch): its filesystem miner's SPARQL
//! endpoint on the session bus. Only a miner that already runs is used (never one started on
//! demand: that would begin indexing the person's folders), and only once it says it is idle.
//!
//! A query goes out as `org.freedesktop.Tracker3.Endpoint.Query(sparql, fd, args)`; the rows
//! come back on the pipe whose write end was passed, in the cursor format of Tracker's own bus
//! client: per row, the column count, the columns' value types, the end offset of each value,
//! then the values, each ending in a NUL, all in the host's byte order; a count of 0 (or the end
//! of the pipe) ends the rows.

use std::collections::HashMap;
use std::io::Read;
use std::path::PathBuf;

use zbus::Connection;
use zbus::zvariant::{Fd, Value};

use super::bus::dbus_error;
use super::{Buses, LinuxBackend};
use crate::error::{Error, Result, within};
use crate::search::{FileIndex, IndexQuery, IndexState};

const MINER: &str = "org.freedesktop.Tracker3.Miner.Files";
const EXTRACTOR: &str = "org.freedesktop.Tracker3.Miner.Extract";
const ENDPOINT_PATH: &str = "/org/freedesktop/Tracker3/Endpoint";
const ENDPOINT: &str = "org.freedesktop.Tracker3.Endpoint";
const MINER_INTERFACE: &str = "org.freedesktop.Tracker3.Miner";
const NAME: &str = "the desktop's file index (Tracker)";
/// A row longer than this is corrupt (Tracker's own client refuses the same).
const MAX_ROW: usize = 16 << 20;

impl FileIndex for LinuxBackend {
    async fn index_state(&self, content: bool) -> IndexState {
        match indexed_trees(&self.buses, content).await {
            Ok(state) => state,
            // No session bus: no index either.
            Err(Error::ServiceUnavailable { service, .. }) if service.contains("D-Bus") => {
                IndexState::Absent
            }
            Err(e) => IndexState::Unavailable(e.to_string()),
        }
    }

    async fn index_candidates(&self, query: &IndexQuery) -> Result<Vec<PathBuf>> {
        let connection = self.buses.session().await?;
        let rows = self::query(&connection, &self.buses, &candidates_sparql(query)?).await?;
        Ok(rows
            .iter()
            .filter_map(|row| row.first())
            .filter_map(|url| url::Url::parse(url).ok()?.to_file_path().ok())
            .collect())
    }
}

/// The folders whose whole tree the index holds, when a miner runs and has finished.
async fn indexed_trees(buses: &Buses, content: bool) -> Result<IndexState> {
    let connection = buses.session().await?;
    let dbus = zbus::fdo::DBusProxy::new(&connection)
        .await
        .map_err(|e| dbus_error(NAME, e))?;
    let owned = |name: &'static str| {
        let dbus = dbus.clone();
        async move {
            let name = zbus::names::BusName::try_from(name).expect("a valid bus name");
            dbus.name_has_owner(name).await.unwrap_or(false)
        }
    };
    if !owned(MINER).await {
        return Ok(IndexState::Absent);
    }
    let mut miners = vec![(MINER, "/org/freedesktop/Tracker3/Miner/Files")];
    if content {
        // Words inside files come from the extractor, which the miner starts when it has files
        // to read and which exits when it has none.
        if owned(EXTRACTOR).await {
            miners.push((EXTRACTOR, "/org/freedesktop/Tracker3/Miner/Extract"));
        } else if !super::bus::name_available(&connection, EXTRACTOR).await? {
            return Ok(IndexState::Unavailable(
                "the desktop index does not hold file contents (Tracker's extractor is not installed)"
                    .into(),
            ));
        }
    }
    for (name, path) in miners {
        let reply = within(NAME, buses.timeout, async {
            connection
                .call_method(Some(name), path, Some(MINER_INTERFACE), "GetStatus", &())
                .await
                .map_err(|e| dbus_error(NAME, e))
        })
        .await?;
        let status: String = reply
            .body()
            .deserialize()
            .map_err(|e| Error::unavailable(NAME, e))?;
        if status != "Idle" {
            return Ok(IndexState::Unavailable(format!(
                "the desktop index is still being built (Tracker says {status:?})"
            )));
        }
    }
    let roots = query(
        &connection,
        buses,
        "SELECT DISTINCT ?root ?url WHERE { ?root a tracker:IndexedFolder ; nie:isStoredAs ?file . \
         ?file nie:url ?url }",
    )
    .await?;
    let mut trees = Vec::new();
    for row in roots {
        let [root, url] = row.as_slice() else {
            continue;
        };
        let Some(path) = url::Url::parse(url)
            .ok()
            .and_then(|u| u.to_file_path().ok())
        else {
            continue;
        };
        if recursive(&connection, buses, root, url).await? {
            trees.push(path);
        }
    }
    Ok(IndexState::Ready {
        index: "Tracker",
        trees,
    })
}

/// Whether the miner indexes the root folder's whole tree, not only its own files. Tracker's
/// configuration (GSettings) is not on the bus, so the index says it: a recursive root has
/// entries deeper than its own files; a root with subfolders but nothing inside them is indexed
/// one level deep (the home folder by default), and is walked instead.
async fn recursive(connection: &Connection, buses: &Buses, root: &str, url: &str) -> Result<bool> {
    let iri = iri(root)?;
    let prefix = format!("{}/", url.trim_end_matches('/'));
    let deeper = format!(
        "SELECT ?u WHERE {{ ?f nie:dataSource {iri} ; nie:url ?u . \
         FILTER (STRSTARTS(?u, {p}) && CONTAINS(SUBSTR(?u, STRLEN({p}) + 1), \"/\")) }} LIMIT 1",
        p = literal(&prefix)
    );
    if !query(connection, buses, &deeper).await?.is_empty() {
        return Ok(true);
    }
    let subfolder = format!(
        "SELECT ?u WHERE {{ ?f nie:dataSource {iri} ; nie:url ?u ; nie:interpretedAs ?i . \
         ?i a nfo:Folder . FILTER (STRSTARTS(?u, {})) }} LIMIT 1",
        literal(&prefix)
    );
    Ok(query(connection, buses, &subfolder).await?.is_empty())
}

/// The files under `query.under` whose name may match (a part or a glob, made a regular
/// expression) and, when words are given, whose text has the longest of them as a word start.
fn candidates_sparql(query: &IndexQuery) -> Result<String> {
    let under = url::Url::from_directory_path(&query.under)
        .map_err(|()| Error::invalid(format!("{} is not a folder", query.under.display())))?;
    let mut patterns = vec![format!(
        "?f a nfo:FileDataObject ; nie:url ?u ; nfo:fileName ?n . ?f nie:interpretedAs ?ie . \
         FILTER NOT EXISTS {{ ?ie a nfo:Folder }} FILTER (STRSTARTS(?u, {}))",
        literal(under.as_str())
    )];
    if let Some(regex) = &query.name_regex {
        patterns.push(format!("FILTER (REGEX(?n, {}, \"i\"))", literal(regex)));
    }
    if let Some(word) = &query.word {
        patterns.push(format!(
            "?text fts:match {} ; nie:isStoredAs ?f .",
            literal(&format!("{word}*"))
        ));
    }
    Ok(format!(
        "SELECT DISTINCT ?u WHERE {{ {} }} LIMIT {}",
        patterns.join(" "),
        query.limit
    ))
}

/// A SPARQL string literal.
fn literal(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// An IRI the index gave, written back into a query.
fn iri(text: &str) -> Result<String> {
    if text
        .chars()
        .any(|c| matches!(c, '<' | '>' | '"' | ' ' | '{' | '}' | '\\'))
    {
        return Err(Error::unavailable(
            NAME,
            format!("an odd resource name {text:?}"),
        ));
    }
    Ok(format!("<{text}>"))
}

/// Runs a query and reads its rows from the pipe, within the bus timeout.
async fn query(connection: &Connection, buses: &Buses, sparql: &str) -> Result<Vec<Vec<String>>> {
    let (mut reader, writer) = std::io::pipe().map_err(|e| Error::Failed(e.to_string()))?;
    // Read while Tracker writes: a result bigger than the pipe would otherwise stall both.
    let read = tokio::task::spawn_blocking(move || {
        let mut bytes = Vec::new();
        reader.read_to_end(&mut bytes).map(|_| bytes)
    });
    let writer = std::os::fd::OwnedFd::from(writer);
    let call = within(NAME, buses.timeout, async {
        connection
            .call_method(
                Some(MINER),
                ENDPOINT_PATH,
                Some(ENDPOINT),
                "Query",
                &(sparql, Fd::from(&writer), HashMap::<&str, Value>::new()),
            )
            .await
            .map_err(|e| dbus_error(NAME, e))
    })
    .await;
    // Tracker holds its own copy: the pipe ends when it has written everything.
    drop(writer);
    call?;
    let bytes = within(NAME, buses.timeout, async {
        read.await
            .map_err(|e| Error::Failed(e.to_string()))?
            .map_err(|e| Error::unavailable(NAME, e))
    })
    .await?;
    parse_rows(&bytes)
}

/// The rows of Tracker's cursor format (see the module's comment).
fn parse_rows(mut bytes: &[u8]) -> Result<Vec<Vec<String>>> {
    let corrupt = || Error::unavailable(NAME, "its answer was cut short or corrupt");
    let int = |bytes: &mut &[u8]| -> Result<i32> {
        let (head, rest) = bytes.split_first_chunk::<4>().ok_or_else(corrupt)?;
        *bytes = rest;
        Ok(i32::from_ne_bytes(*head))
    };
    let mut rows = Vec::new();
    while !bytes.is_empty() {
        let columns = int(&mut bytes)?;
        if columns == 0 {
            break;
        }
        let columns = usize::try_from(columns).map_err(|_| corrupt())?;
        if columns > 1024 {
            return Err(corrupt());
        }
        for _ in 0..columns {
            int(&mut bytes)?; // the value's type: every value is read as text
        }
        let mut ends = Vec::with_capacity(columns);
        for _ in 0..columns {
            let end = usize::try_from(int(&mut bytes)?).map_err(|_| corrupt())?;
            if end > MAX_ROW || ends.last().is_some_and(|last| end <= *last) {
                return Err(corrupt());
            }
            ends.push(end);
        }
        let size = ends.last().map_or(0, |end| end + 1);
        if bytes.len() < size {
            return Err(corrupt());
        }
        let (data, rest) = bytes.split_at(size);
        bytes = rest;
        let mut start = 0;
        let mut row = Vec::with_capacity(columns);
        for end in ends {
            row.push(String::from_utf8_lossy(&data[start..end]).into_owned());
            start = end + 1;
        }
        rows.push(row);
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(values: &[&str]) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend((values.len() as i32).to_ne_bytes());
        for _ in values {
            out.extend(2i32.to_ne_bytes());
        }
        let mut end = 0usize;
        let mut data = Vec::new();
        for (i, value) in values.iter().enumerate() {
            if i > 0 {
                end += 1;
            }
            end += value.len();
            out.extend((end as i32).to_ne_bytes());
            data.extend(value.as_bytes());
            data.push(0);
        }
        out.extend(data);
        out
    }

    #[test]
    fn reads_the_cursor_format_and_refuses_corrupt_rows() {
        let mut bytes = row(&["urn:a", "file:///home/a/Budget%202026.txt"]);
        bytes.extend(row(&["", "x"]));
        bytes.extend(0i32.to_ne_bytes());
        let rows = parse_rows(&bytes).unwrap();
        assert_eq!(
            rows,
            vec![
                vec![
                    "urn:a".to_string(),
                    "file:///home/a/Budget%202026.txt".into()
                ],
                vec![String::new(), "x".into()],
            ]
        );
        // The pipe's end also ends the rows.
        assert_eq!(parse_rows(&row(&["only"])).unwrap(), vec![vec!["only"]]);
        // Cut short, and offsets that go backwards.
        let whole = row(&["abc", "def"]);
        assert!(parse_rows(&whole[..whole.len() - 2]).is_err());
        let mut backwards = whole.clone();
        backwards[12..16].copy_from_slice(&9i32.to_ne_bytes());
        assert!(parse_rows(&backwards).is_err());
    }

    #[test]
    fn queries_quote_what_the_person_typed() {
        assert_eq!(literal(r#"a"b\c"#), r#""a\"b\\c""#);
        let sparql = candidates_sparql(&IndexQuery {
            under: "/home/a b/Documents".into(),
            name_regex: Some("^bud.*\\.txt$".into()),
            word: Some("groceries".into()),
            limit: 50,
        })
        .unwrap();
        assert!(
            sparql.contains("\"file:///home/a%20b/Documents/\""),
            "{sparql}"
        );
        assert!(
            sparql.contains("REGEX(?n, \"^bud.*\\\\.txt$\", \"i\")"),
            "{sparql}"
        );
        assert!(sparql.contains("fts:match \"groceries*\""), "{sparql}");
        assert!(sparql.ends_with("LIMIT 50"));
        assert!(iri("urn:fileid:/dev/vda:1").is_ok());
        assert!(iri("urn:x> } DROP").is_err());
    }
}
