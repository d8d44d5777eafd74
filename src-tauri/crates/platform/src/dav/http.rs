//! WebDAV over reqwest: PROPFIND, REPORT, GET, PUT and DELETE with the account's credentials,
//! a deadline on every request, redirects followed by hand (the method kept, credentials only
//! to the account's own origin), and multistatus answers read with roxmltree. Every failure
//! becomes a coded error: unreachable servers `service_unavailable` naming the host, deadlines
//! `timeout`, 401 `permission_denied` (or `not_configured` when no password is stored), 412 a
//! conflict that tells the model to list again.

use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderValue};
use reqwest::{Method, StatusCode, Url};

use super::{Kind, Session, StoredObject};
use crate::error::{Error, Result};

pub(crate) const DAV: &str = "DAV:";
pub(crate) const CALDAV: &str = "urn:ietf:params:xml:ns:caldav";
pub(crate) const CARDDAV: &str = "urn:ietf:params:xml:ns:carddav";

/// What discovery asks the base URL and the principal.
pub(crate) const DISCOVERY_PROPS: &str = r#"<?xml version="1.0" encoding="utf-8"?>
<d:propfind xmlns:d="DAV:" xmlns:c="urn:ietf:params:xml:ns:caldav" xmlns:cr="urn:ietf:params:xml:ns:carddav">
  <d:prop><d:current-user-principal/><d:resourcetype/><c:calendar-home-set/><cr:addressbook-home-set/></d:prop>
</d:propfind>"#;

/// What a home set's listing asks of each collection.
pub(crate) const COLLECTION_PROPS: &str = r#"<?xml version="1.0" encoding="utf-8"?>
<d:propfind xmlns:d="DAV:" xmlns:c="urn:ietf:params:xml:ns:caldav">
  <d:prop><d:resourcetype/><d:displayname/><c:supported-calendar-component-set/></d:prop>
</d:propfind>"#;

/// Answers larger than this are refused (a calendar of many years is a few MiB).
const MAX_BODY: usize = 64 << 20;
/// Redirects followed before giving up.
const MAX_REDIRECTS: usize = 5;

/// A calendar-query for the events that overlap `[start, end)` (UTC, `YYYYMMDDTHHMMSSZ`), or
/// every event.
pub(crate) fn event_query(range: Option<(String, String)>) -> String {
    let filter = match range {
        Some((start, end)) => format!(
            r#"<c:comp-filter name="VEVENT"><c:time-range start="{start}" end="{end}"/></c:comp-filter>"#
        ),
        None => r#"<c:comp-filter name="VEVENT"/>"#.to_string(),
    };
    format!(
        r#"<?xml version="1.0" encoding="utf-8"?>
<c:calendar-query xmlns:d="DAV:" xmlns:c="urn:ietf:params:xml:ns:caldav">
  <d:prop><d:getetag/><c:calendar-data/></d:prop>
  <c:filter><c:comp-filter name="VCALENDAR">{filter}</c:comp-filter></c:filter>
</c:calendar-query>"#
    )
}

/// An addressbook-query for every card.
pub(crate) fn card_query() -> String {
    r#"<?xml version="1.0" encoding="utf-8"?>
<cr:addressbook-query xmlns:d="DAV:" xmlns:cr="urn:ietf:params:xml:ns:carddav">
  <d:prop><d:getetag/><cr:address-data/></d:prop>
</cr:addressbook-query>"#
        .to_string()
}

/// A query for the object whose UID is exactly `uid` (RFC 4791 9.7.5, RFC 6352 10.5.4).
pub(crate) fn uid_query(kind: Kind, uid: &str) -> String {
    let uid = xml_escape(uid);
    match kind {
        Kind::Calendar => format!(
            r#"<?xml version="1.0" encoding="utf-8"?>
<c:calendar-query xmlns:d="DAV:" xmlns:c="urn:ietf:params:xml:ns:caldav">
  <d:prop><d:getetag/><c:calendar-data/></d:prop>
  <c:filter><c:comp-filter name="VCALENDAR"><c:comp-filter name="VEVENT">
    <c:prop-filter name="UID"><c:text-match collation="i;octet">{uid}</c:text-match></c:prop-filter>
  </c:comp-filter></c:comp-filter></c:filter>
</c:calendar-query>"#
        ),
        Kind::Contacts => format!(
            r#"<?xml version="1.0" encoding="utf-8"?>
<cr:addressbook-query xmlns:d="DAV:" xmlns:cr="urn:ietf:params:xml:ns:carddav">
  <d:prop><d:getetag/><cr:address-data/></d:prop>
  <cr:filter><cr:prop-filter name="UID"><cr:text-match collation="i;octet" match-type="equals">{uid}</cr:text-match></cr:prop-filter></cr:filter>
</cr:addressbook-query>"#
        ),
    }
}

fn xml_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// One `<response>` of a multistatus answer.
#[derive(Clone, Debug, Default)]
pub(crate) struct Resource {
    pub href: String,
    /// The properties the server found (propstat 2xx).
    pub props: Vec<Prop>,
}

impl Resource {
    pub(crate) fn prop(&self, ns: &str, name: &str) -> Option<&Prop> {
        self.props.iter().find(|p| p.ns == ns && p.name == name)
    }
}

/// One property's content, flattened to what the clients here read.
#[derive(Clone, Debug, Default)]
pub(crate) struct Prop {
    pub ns: String,
    pub name: String,
    /// The text inside it (calendar-data, address-data, displayname, getetag).
    pub text: String,
    /// The `<href>`s inside it (principal, home sets).
    pub hrefs: Vec<String>,
    /// Its child elements as (namespace, name) (resourcetype).
    pub children: Vec<(String, String)>,
    /// The `name` attributes of `<comp>` children (supported-calendar-component-set).
    pub components: Vec<String>,
}

impl Prop {
    pub(crate) fn has_child(&self, ns: &str, name: &str) -> bool {
        self.children.iter().any(|(n, l)| n == ns && l == name)
    }
}

/// An answer: status, ETag, body.
struct Reply {
    status: StatusCode,
    etag: Option<String>,
    body: String,
}

/// The HTTP side: one reqwest client for all accounts, made at the first request (reading the
/// system's trust store is not worth doing for a tool that never reaches a server).
pub(crate) struct DavHttp {
    client: OnceLock<Result<reqwest::Client>>,
    ca_file: Option<PathBuf>,
    timeout: Duration,
}

impl DavHttp {
    pub(crate) fn new(timeout: Duration, ca_file: Option<PathBuf>) -> DavHttp {
        DavHttp {
            client: OnceLock::new(),
            ca_file,
            timeout,
        }
    }

    /// The client: TLS with the system's trust store plus the `ca_file` (see [`crate::tls`]),
    /// redirects left to [`Self::send`], the deadline on every request.
    fn client(&self) -> Result<&reqwest::Client> {
        let built = self.client.get_or_init(|| {
            let roots = crate::tls::ca_file_roots(
                self.ca_file.as_deref(),
                "the calendar and contacts accounts",
            )?;
            let tls = crate::tls::client_config(roots).map_err(|e| {
                Error::Failed(format!(
                    "{e}; the system's certificate authorities are needed for https servers \
                     (install the ca-certificates package), or a `ca_file` for a private one"
                ))
            })?;
            reqwest::Client::builder()
                .use_preconfigured_tls(tls)
                .redirect(reqwest::redirect::Policy::none())
                .connect_timeout(self.timeout)
                .timeout(self.timeout)
                .user_agent(concat!("Osprey/", env!("CARGO_PKG_VERSION")))
                .build()
                .map_err(|e| Error::Failed(format!("setting up the HTTP client failed: {e}")))
        });
        built.as_ref().map_err(|error| match error {
            // The same answer at every call: a `ca_file` to fix, or a failure.
            Error::InvalidInput(why) => Error::InvalidInput(why.clone()),
            other => Error::Failed(other.to_string()),
        })
    }

    /// `href` (absolute, or a path on the server) against `base`.
    pub(crate) fn resolve(&self, base: &Url, href: &str) -> Result<Url> {
        base.join(href.trim()).map_err(|e| {
            Error::Failed(format!(
                "the server named an unusable address {href:?}: {e}"
            ))
        })
    }

    /// PROPFIND with `depth` and `body`; the multistatus responses.
    pub(crate) async fn propfind(
        &self,
        session: &Session,
        kind: Kind,
        url: &Url,
        depth: &str,
        body: &str,
    ) -> Result<Vec<Resource>> {
        let reply = self
            .send(
                session,
                kind,
                Method::from_bytes(b"PROPFIND").expect("a valid method"),
                url,
                &[("Depth", depth)],
                Some(body.to_string()),
            )
            .await?;
        if reply.status != StatusCode::MULTI_STATUS {
            return Err(status_error(session, kind, url, &reply, "listing"));
        }
        parse_multistatus(&reply.body)
    }

    /// REPORT `body` on a collection; the objects (address, ETag, text) it answers with.
    pub(crate) async fn query(
        &self,
        session: &Session,
        kind: Kind,
        url: &Url,
        body: &str,
    ) -> Result<Vec<StoredObject>> {
        let reply = self
            .send(
                session,
                kind,
                Method::from_bytes(b"REPORT").expect("a valid method"),
                url,
                &[("Depth", "1")],
                Some(body.to_string()),
            )
            .await?;
        if reply.status != StatusCode::MULTI_STATUS {
            return Err(status_error(session, kind, url, &reply, "querying"));
        }
        let (data_ns, data_name) = match kind {
            Kind::Calendar => (CALDAV, "calendar-data"),
            Kind::Contacts => (CARDDAV, "address-data"),
        };
        let mut out = Vec::new();
        for resource in parse_multistatus(&reply.body)? {
            let Some(data) = resource.prop(data_ns, data_name) else {
                continue;
            };
            out.push(StoredObject {
                url: self.resolve(url, &resource.href)?,
                etag: resource
                    .prop(DAV, "getetag")
                    .map(|p| p.text.trim().to_string())
                    .filter(|e| !e.is_empty()),
                text: data.text.clone(),
            });
        }
        Ok(out)
    }

    /// GET one object; `None` when it is not there.
    pub(crate) async fn get(
        &self,
        session: &Session,
        kind: Kind,
        url: &Url,
    ) -> Result<Option<StoredObject>> {
        let reply = self
            .send(session, kind, Method::GET, url, &[], None)
            .await?;
        match reply.status {
            StatusCode::NOT_FOUND | StatusCode::GONE => Ok(None),
            s if s.is_success() => Ok(Some(StoredObject {
                url: url.clone(),
                etag: reply.etag,
                text: reply.body,
            })),
            _ => Err(status_error(session, kind, url, &reply, "reading")),
        }
    }

    /// PUT `text` at `url`: only if nothing is there (`if_match` `None`), or only if it is
    /// still at version `if_match`. The outcome and the new ETag if the server gave one.
    pub(crate) async fn put(
        &self,
        session: &Session,
        kind: Kind,
        url: &Url,
        text: String,
        if_match: Option<&str>,
    ) -> Result<Put> {
        let condition = match if_match {
            Some(etag) => ("If-Match", etag),
            None => ("If-None-Match", "*"),
        };
        let content_type = match kind {
            Kind::Calendar => "text/calendar; charset=utf-8",
            Kind::Contacts => "text/vcard; charset=utf-8",
        };
        let reply = self
            .send(
                session,
                kind,
                Method::PUT,
                url,
                &[condition, ("Content-Type", content_type)],
                Some(text),
            )
            .await?;
        match reply.status {
            s if s.is_success() => Ok(Put::Stored(reply.etag)),
            StatusCode::PRECONDITION_FAILED if if_match.is_none() => Ok(Put::AlreadyThere),
            // The UID is already used by another object of the collection (RFC 4791 5.3.2.1).
            StatusCode::CONFLICT | StatusCode::FORBIDDEN
                if if_match.is_none() && reply.body.contains("no-uid-conflict") =>
            {
                Ok(Put::AlreadyThere)
            }
            _ => Err(status_error(session, kind, url, &reply, "saving")),
        }
    }

    /// DELETE `url` if it is still at version `if_match`; false when it was already gone.
    pub(crate) async fn delete(
        &self,
        session: &Session,
        kind: Kind,
        url: &Url,
        if_match: Option<&str>,
    ) -> Result<bool> {
        let headers: Vec<(&str, &str)> = if_match.map(|e| ("If-Match", e)).into_iter().collect();
        let reply = self
            .send(session, kind, Method::DELETE, url, &headers, None)
            .await?;
        match reply.status {
            s if s.is_success() => Ok(true),
            StatusCode::NOT_FOUND | StatusCode::GONE => Ok(false),
            _ => Err(status_error(session, kind, url, &reply, "deleting")),
        }
    }

    /// One request with its redirects, within the deadline; network failures are coded here,
    /// HTTP statuses by the caller.
    async fn send(
        &self,
        session: &Session,
        kind: Kind,
        method: Method,
        url: &Url,
        headers: &[(&str, &str)],
        body: Option<String>,
    ) -> Result<Reply> {
        let mut url = url.clone();
        for _ in 0..=MAX_REDIRECTS {
            let mut request = self.client()?.request(method.clone(), url.clone());
            let mut map = HeaderMap::new();
            for (name, value) in headers {
                let value = HeaderValue::from_str(value).map_err(|_| {
                    Error::invalid(format!("a header value is not valid: {value:?}"))
                })?;
                map.insert(
                    reqwest::header::HeaderName::from_bytes(name.as_bytes())
                        .expect("header names here are constants"),
                    value,
                );
            }
            if body.is_some() && !map.contains_key(CONTENT_TYPE) {
                map.insert(
                    CONTENT_TYPE,
                    HeaderValue::from_static("application/xml; charset=utf-8"),
                );
            }
            request = request.headers(map);
            // Credentials go only to the account's own server, never to where it redirects.
            if url.origin() == session.base.origin() {
                request = request.basic_auth(&session.account.username, session.password.as_ref());
            }
            if let Some(body) = &body {
                request = request.body(body.clone());
            }
            let response = request
                .send()
                .await
                .map_err(|e| network_error(&e, &url, kind, self.timeout))?;
            let status = response.status();
            if status.is_redirection()
                && let Some(location) = response
                    .headers()
                    .get(reqwest::header::LOCATION)
                    .and_then(|l| l.to_str().ok())
            {
                url = url.join(location).map_err(|e| {
                    Error::Failed(format!(
                        "{} redirected to an unusable {location:?}: {e}",
                        host(&url)
                    ))
                })?;
                continue;
            }
            let etag = response
                .headers()
                .get(reqwest::header::ETAG)
                .and_then(|e| e.to_str().ok())
                .map(str::to_string);
            let body = read_body(response, &url, kind, self.timeout).await?;
            return Ok(Reply { status, etag, body });
        }
        Err(Error::unavailable(
            format!("the {} server {}", kind.protocol(), host(&url)),
            format!("more than {MAX_REDIRECTS} redirects"),
        ))
    }
}

/// The outcome of a PUT.
#[derive(Debug)]
pub(crate) enum Put {
    /// Stored; the new version when the server said it.
    Stored(Option<String>),
    /// A create found the object (or its UID) already there.
    AlreadyThere,
}

async fn read_body(
    mut response: reqwest::Response,
    url: &Url,
    kind: Kind,
    timeout: Duration,
) -> Result<String> {
    let mut bytes = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| network_error(&e, url, kind, timeout))?
    {
        bytes.extend_from_slice(&chunk);
        if bytes.len() > MAX_BODY {
            return Err(Error::Failed(format!(
                "{} answered with more than {} MiB",
                host(url),
                MAX_BODY >> 20
            )));
        }
    }
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// `host:port` of a URL, for messages.
pub(crate) fn host(url: &Url) -> String {
    match (url.host_str(), url.port_or_known_default()) {
        (Some(host), Some(port)) => format!("{host}:{port}"),
        (Some(host), None) => host.to_string(),
        _ => url.to_string(),
    }
}

/// A request that never got an answer: timeout, or the server out of reach (and why).
fn network_error(error: &reqwest::Error, url: &Url, kind: Kind, after: Duration) -> Error {
    let service = format!("the {} server {}", kind.protocol(), host(url));
    if error.is_timeout() {
        return Error::Timeout {
            what: format!("a request to {service}"),
            after,
        };
    }
    // The innermost cause says it best: "Connection refused", "failed to lookup address".
    let mut cause: &dyn std::error::Error = error;
    while let Some(next) = cause.source() {
        cause = next;
    }
    Error::unavailable(
        service,
        format!(
            "{cause}; check that the server runs and that the account's URL ({}) is right",
            url.origin().ascii_serialization()
        ),
    )
}

/// An HTTP status that is not what the request wanted, as the error the model can act on.
fn status_error(session: &Session, kind: Kind, url: &Url, reply: &Reply, doing: &str) -> Error {
    let name = &session.account.name;
    let server = host(url);
    match reply.status {
        StatusCode::UNAUTHORIZED if session.password.is_none() => Error::NotConfigured(format!(
            "the {} server {server} wants a password for `{}` and none is stored for the account \
             `{name}`: store it in the keyring with `osprey config set dav.{name}.password -` \
             (read from standard input)",
            kind.protocol(),
            session.account.username
        )),
        StatusCode::UNAUTHORIZED => Error::PermissionDenied {
            what: format!(
                "signing in to {server} as `{}` (account `{name}`)",
                session.account.username
            ),
            steps: format!(
                "check the username with `osprey config get {}` and store the right password with \
                 `osprey config set dav.{name}.password -`",
                super::ACCOUNTS_SETTING
            ),
        },
        StatusCode::FORBIDDEN => Error::PermissionDenied {
            what: format!("{doing} {url}"),
            steps: format!(
                "the server does not let `{}` do this; check the account's rights on {server}",
                session.account.username
            ),
        },
        StatusCode::PRECONDITION_FAILED => Error::invalid(format!(
            "conflict: {url} was changed on the server (by someone else, or another app) since \
             you last listed it (HTTP 412), so nothing was changed. List it again, then repeat \
             the change on the current version if it is still wanted"
        )),
        StatusCode::BAD_REQUEST | StatusCode::UNSUPPORTED_MEDIA_TYPE => Error::invalid(format!(
            "the server refused {doing} {url} as not valid (HTTP {}){}",
            reply.status,
            snippet(&reply.body)
        )),
        StatusCode::NOT_FOUND => Error::invalid(format!(
            "{url} does not exist on the server (HTTP 404): if that is the account's URL, fix it \
             with `osprey config set dav.{name}.url <the server's DAV address>`; else list the {} \
             again",
            match kind {
                Kind::Calendar => "calendars",
                Kind::Contacts => "address books",
            }
        )),
        s if s.is_server_error() => Error::unavailable(
            format!("the {} server {server}", kind.protocol()),
            format!(
                "it answered HTTP {s} while {doing} {url}{}",
                snippet(&reply.body)
            ),
        ),
        s => Error::Failed(format!(
            "{} {url}: the server answered HTTP {s}{}",
            doing,
            snippet(&reply.body)
        )),
    }
}

fn snippet(body: &str) -> String {
    let text: String = body.trim().chars().take(300).collect();
    if text.is_empty() {
        String::new()
    } else {
        format!(": {text}")
    }
}

/// The responses of a 207 Multi-Status body.
pub(crate) fn parse_multistatus(body: &str) -> Result<Vec<Resource>> {
    let document = roxmltree::Document::parse(body).map_err(|e| {
        Error::Failed(format!(
            "the server's WebDAV answer is not XML ({e}){}",
            snippet(body)
        ))
    })?;
    let is = |node: &roxmltree::Node, name: &str| {
        node.is_element()
            && node.tag_name().name() == name
            && node.tag_name().namespace() == Some(DAV)
    };
    let mut out = Vec::new();
    for response in document.descendants().filter(|n| is(n, "response")) {
        let mut resource = Resource {
            href: response
                .children()
                .find(|n| is(n, "href"))
                .and_then(|n| n.text())
                .unwrap_or_default()
                .trim()
                .to_string(),
            props: Vec::new(),
        };
        for propstat in response.children().filter(|n| is(n, "propstat")) {
            let ok = propstat
                .children()
                .find(|n| is(n, "status"))
                .and_then(|n| n.text())
                .is_none_or(|s| {
                    s.split_whitespace()
                        .nth(1)
                        .is_some_and(|c| c.starts_with('2'))
                });
            if !ok {
                continue;
            }
            for prop in propstat.children().filter(|n| is(n, "prop")) {
                for element in prop.children().filter(roxmltree::Node::is_element) {
                    resource.props.push(read_prop(element));
                }
            }
        }
        out.push(resource);
    }
    Ok(out)
}

fn read_prop(element: roxmltree::Node) -> Prop {
    let mut prop = Prop {
        ns: element
            .tag_name()
            .namespace()
            .unwrap_or_default()
            .to_string(),
        name: element.tag_name().name().to_string(),
        ..Prop::default()
    };
    for child in element.children() {
        if child.is_text() {
            prop.text.push_str(child.text().unwrap_or_default());
        } else if child.is_element() {
            let ns = child.tag_name().namespace().unwrap_or_default();
            let name = child.tag_name().name();
            if ns == DAV && name == "href" {
                prop.hrefs
                    .push(child.text().unwrap_or_default().trim().to_string());
            } else if name == "comp"
                && let Some(component) = child.attribute("name")
            {
                prop.components.push(component.to_string());
            }
            prop.children.push((ns.to_string(), name.to_string()));
        }
    }
    prop
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multistatus_keeps_found_properties_and_drops_missing_ones() {
        let body = r#"<?xml version="1.0"?>
<multistatus xmlns="DAV:" xmlns:C="urn:ietf:params:xml:ns:caldav">
 <response><href>/alice/work/</href>
  <propstat><prop><resourcetype><collection/><C:calendar/></resourcetype>
   <displayname>Work</displayname>
   <C:supported-calendar-component-set><C:comp name="VEVENT"/></C:supported-calendar-component-set>
  </prop><status>HTTP/1.1 200 OK</status></propstat>
  <propstat><prop><getctag/></prop><status>HTTP/1.1 404 Not Found</status></propstat>
 </response>
 <response><href>/alice/</href><propstat><prop>
  <current-user-principal><href>/alice/</href></current-user-principal>
 </prop><status>HTTP/1.1 200 OK</status></propstat></response>
</multistatus>"#;
        let found = parse_multistatus(body).unwrap();
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].href, "/alice/work/");
        assert!(
            found[0]
                .prop(DAV, "resourcetype")
                .unwrap()
                .has_child(CALDAV, "calendar")
        );
        assert_eq!(found[0].prop(DAV, "displayname").unwrap().text, "Work");
        assert_eq!(
            found[0]
                .prop(CALDAV, "supported-calendar-component-set")
                .unwrap()
                .components,
            ["VEVENT"]
        );
        assert!(found[0].prop(DAV, "getctag").is_none());
        assert_eq!(
            found[1].prop(DAV, "current-user-principal").unwrap().hrefs,
            ["/alice/"]
        );
        assert!(parse_multistatus("not xml").is_err());
    }

    #[test]
    fn the_client_is_built_with_an_extra_root_or_says_what_is_wrong_with_it() {
        let dir = tempfile::tempdir().unwrap();
        let ca = dir.path().join("ca.pem");
        std::fs::write(&ca, crate::tls::tests::TEST_CA).unwrap();
        let http = DavHttp::new(Duration::from_secs(5), Some(ca));
        http.client().unwrap();
        let http = DavHttp::new(Duration::from_secs(5), Some(dir.path().join("none.pem")));
        let err = http.client().unwrap_err().to_string();
        assert!(
            err.contains("`ca_file`") && err.contains("of the calendar and contacts accounts"),
            "{err}"
        );
    }

    #[test]
    fn uid_queries_escape_the_uid() {
        assert!(uid_query(Kind::Calendar, "a<b&c").contains("a&lt;b&amp;c"));
        assert!(uid_query(Kind::Contacts, "x").contains("match-type=\"equals\""));
    }
}
