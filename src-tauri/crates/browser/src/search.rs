//! Web search with providers tried in order: a SearXNG instance (when its URL is set), the Brave
//! Search API and Tavily (when their keys are set), then DuckDuckGo's HTML endpoint, which needs
//! no key. The first provider that answers with results wins; the result says which one and how
//! long it took, and which ones failed before it. When none gives results, the last resort is a
//! search engine's own page opened in the browser profile (`browser_url`; see
//! `WebBrowsing::query`): a real browser gets answers where a bare HTTP request is refused.

use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use serde_json::{Value, json};

use crate::error::{BrowserError, Result};

/// One search hit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hit {
    pub title: String,
    pub url: String,
    pub snippet: String,
}

/// A search backend.
pub trait Provider: Send + Sync + 'static {
    /// `searxng`, `brave`, `tavily`, `duckduckgo`: what `engine` names.
    fn name(&self) -> &str;
    fn search<'a>(
        &'a self,
        client: &'a reqwest::Client,
        query: &'a str,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<Hit>>>;
}

/// Settings of the search resource. Endpoints can be changed (tests point them at loopback
/// fakes; a person may use a Brave or Tavily proxy).
#[derive(Clone, Debug)]
pub struct SearchConfig {
    /// A SearXNG instance, `https://searx.example/`; its JSON format must be enabled.
    pub searxng_url: Option<String>,
    pub brave_key: Option<String>,
    pub brave_url: String,
    pub tavily_key: Option<String>,
    pub tavily_url: String,
    /// DuckDuckGo's HTML endpoint; `None` turns it off.
    pub duckduckgo_url: Option<String>,
    /// The search page the browser profile opens as the last resort, `{query}` standing for the
    /// query; `None` turns it off.
    pub browser_url: Option<String>,
    /// Per provider.
    pub timeout: Duration,
}

impl Default for SearchConfig {
    fn default() -> Self {
        SearchConfig {
            searxng_url: None,
            brave_key: None,
            brave_url: "https://api.search.brave.com/res/v1/web/search".into(),
            tavily_key: None,
            tavily_url: "https://api.tavily.com/search".into(),
            duckduckgo_url: Some("https://html.duckduckgo.com/html/".into()),
            browser_url: Some("https://html.duckduckgo.com/html/?q={query}".into()),
            timeout: Duration::from_secs(10),
        }
    }
}

fn failed(provider: &str, e: impl std::fmt::Display) -> BrowserError {
    BrowserError::Page(format!("{provider}: {e}"))
}

async fn json_of(provider: &str, response: reqwest::Result<reqwest::Response>) -> Result<Value> {
    let response = response.map_err(|e| failed(provider, e))?;
    let status = response.status();
    if !status.is_success() {
        return Err(failed(provider, format!("HTTP {status}")));
    }
    response
        .json()
        .await
        .map_err(|e| failed(provider, format!("bad JSON: {e}")))
}

fn hits(items: Option<&Value>, snippet_key: &str, limit: usize) -> Vec<Hit> {
    items
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|item| {
                    Some(Hit {
                        title: item["title"].as_str()?.trim().to_string(),
                        url: item["url"].as_str()?.to_string(),
                        snippet: strip_tags(item[snippet_key].as_str().unwrap_or_default()),
                    })
                })
                .take(limit)
                .collect()
        })
        .unwrap_or_default()
}

struct SearxNg(String);
struct Brave(String, String);
struct Tavily(String, String);
struct DuckDuckGo(String);

impl Provider for SearxNg {
    fn name(&self) -> &str {
        "searxng"
    }
    fn search<'a>(
        &'a self,
        client: &'a reqwest::Client,
        query: &'a str,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<Hit>>> {
        Box::pin(async move {
            let url = format!("{}/search", self.0.trim_end_matches('/'));
            let body = json_of(
                "searxng",
                client
                    .get(url)
                    .query(&[("q", query), ("format", "json")])
                    .send()
                    .await,
            )
            .await?;
            Ok(hits(body.get("results"), "content", limit))
        })
    }
}

impl Provider for Brave {
    fn name(&self) -> &str {
        "brave"
    }
    fn search<'a>(
        &'a self,
        client: &'a reqwest::Client,
        query: &'a str,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<Hit>>> {
        Box::pin(async move {
            let body = json_of(
                "brave",
                client
                    .get(&self.1)
                    .query(&[("q", query), ("count", &limit.min(20).to_string())])
                    .header("Accept", "application/json")
                    .header("X-Subscription-Token", &self.0)
                    .send()
                    .await,
            )
            .await?;
            Ok(hits(body.pointer("/web/results"), "description", limit))
        })
    }
}

impl Provider for Tavily {
    fn name(&self) -> &str {
        "tavily"
    }
    fn search<'a>(
        &'a self,
        client: &'a reqwest::Client,
        query: &'a str,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<Hit>>> {
        Box::pin(async move {
            let body = json_of(
                "tavily",
                client
                    .post(&self.1)
                    .bearer_auth(&self.0)
                    .json(&json!({"query": query, "max_results": limit.min(20)}))
                    .send()
                    .await,
            )
            .await?;
            Ok(hits(body.get("results"), "content", limit))
        })
    }
}

impl Provider for DuckDuckGo {
    fn name(&self) -> &str {
        "duckduckgo"
    }
    fn search<'a>(
        &'a self,
        client: &'a reqwest::Client,
        query: &'a str,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<Hit>>> {
        Box::pin(async move {
            let response = client
                .post(&self.0)
                .form(&[("q", query)])
                .send()
                .await
                .map_err(|e| failed("duckduckgo", e))?;
            let status = response.status();
            if !status.is_success() {
                return Err(failed("duckduckgo", format!("HTTP {status}")));
            }
            let html = response.text().await.map_err(|e| failed("duckduckgo", e))?;
            Ok(parse_duckduckgo(&html, limit))
        })
    }
}

/// The text of `html` with tags removed and the common entities decoded.
fn strip_tags(html: &str) -> String {
    let mut out = String::with_capacity(html.len());
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    let decoded = out
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#x27;", "'")
        .replace("&#39;", "'")
        .replace("&nbsp;", " ")
        .replace("&amp;", "&");
    decoded.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The value of attribute `name` in the tag text `tag`.
fn attribute<'t>(tag: &'t str, name: &str) -> Option<&'t str> {
    let at = tag.find(&format!("{name}=\""))? + name.len() + 2;
    let rest = &tag[at..];
    Some(&rest[..rest.find('"')?])
}

/// DuckDuckGo's HTML results: `a.result__a` (title, a redirect link carrying the target in
/// `uddg`) and `.result__snippet`.
pub fn parse_duckduckgo(html: &str, limit: usize) -> Vec<Hit> {
    let mut out = Vec::new();
    let mut rest = html;
    while out.len() < limit {
        let Some(at) = rest.find("class=\"result__a\"") else {
            break;
        };
        let tag_start = rest[..at].rfind('<').unwrap_or(at);
        let after = &rest[tag_start..];
        let Some(tag_end) = after.find('>') else {
            break;
        };
        let tag = &after[..tag_end];
        let Some(close) = after.find("</a>") else {
            break;
        };
        let title = strip_tags(&after[tag_end + 1..close]);
        let href = attribute(tag, "href")
            .unwrap_or_default()
            .replace("&amp;", "&");
        let next_result = after[close..]
            .find("class=\"result__a\"")
            .map(|n| close + n)
            .unwrap_or(after.len());
        let snippet = after[close..next_result]
            .find("class=\"result__snippet\"")
            .and_then(|s| {
                let s = close + s;
                let open = after[s..].find('>')? + s + 1;
                let end = after[open..]
                    .find("</a>")
                    .or_else(|| after[open..].find("</div>"))?
                    + open;
                Some(strip_tags(&after[open..end]))
            })
            .unwrap_or_default();
        let url = url::Url::parse(&if href.starts_with("//") {
            format!("https:{href}")
        } else {
            href.clone()
        })
        .ok()
        .and_then(|u| {
            u.query_pairs()
                .find(|(k, _)| k == "uddg")
                .map(|(_, v)| v.into_owned())
        })
        .unwrap_or(href);
        if !title.is_empty() && !url.is_empty() {
            out.push(Hit {
                title,
                url,
                snippet,
            });
        }
        rest = &after[close..];
    }
    out
}

/// The search resource: providers in order, with fallback.
pub struct Search {
    providers: Vec<Box<dyn Provider>>,
    client: reqwest::Client,
    browser_url: Option<String>,
}

impl std::fmt::Debug for Search {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Search")
            .field("providers", &self.names())
            .finish_non_exhaustive()
    }
}

/// What a search found and who answered.
#[derive(Debug)]
pub struct Answer {
    pub provider: String,
    pub elapsed: Duration,
    pub hits: Vec<Hit>,
    /// Providers tried before, with why they gave nothing.
    pub failures: Vec<String>,
}

impl Search {
    pub fn new(config: &SearchConfig) -> Search {
        let mut providers: Vec<Box<dyn Provider>> = Vec::new();
        if let Some(url) = &config.searxng_url {
            providers.push(Box::new(SearxNg(url.clone())));
        }
        if let Some(key) = &config.brave_key {
            providers.push(Box::new(Brave(key.clone(), config.brave_url.clone())));
        }
        if let Some(key) = &config.tavily_key {
            providers.push(Box::new(Tavily(key.clone(), config.tavily_url.clone())));
        }
        if let Some(url) = &config.duckduckgo_url {
            providers.push(Box::new(DuckDuckGo(url.clone())));
        }
        let client = reqwest::Client::builder()
            .timeout(config.timeout)
            .user_agent(format!(
                "Mozilla/5.0 (compatible; Osprey/{})",
                env!("CARGO_PKG_VERSION")
            ))
            .build()
            .unwrap_or_default();
        Search {
            providers,
            client,
            browser_url: config.browser_url.clone(),
        }
    }

    /// The last resort's page for `query`, when it is on.
    pub fn browser_page(&self, query: &str) -> Option<String> {
        let template = self.browser_url.as_ref()?;
        let encoded: String =
            url::form_urlencoded::byte_serialize(query.trim().as_bytes()).collect();
        Some(template.replace("{query}", &encoded))
    }

    pub fn names(&self) -> Vec<&str> {
        self.providers.iter().map(|p| p.name()).collect()
    }

    /// Asks the providers in order (or only `engine`) until one returns results.
    pub async fn query(&self, query: &str, limit: usize, engine: Option<&str>) -> Result<Answer> {
        let query = query.trim();
        if query.is_empty() {
            return Err(BrowserError::Invalid(
                "search needs a non-empty `query`".into(),
            ));
        }
        let limit = limit.clamp(1, 20);
        let chosen: Vec<&dyn Provider> = match engine {
            Some(name) => {
                let p = self
                    .providers
                    .iter()
                    .find(|p| p.name() == name)
                    .ok_or_else(|| {
                        BrowserError::Invalid(format!(
                            "search engine `{name}` is not set up; the configured ones are: {}",
                            self.names().join(", ")
                        ))
                    })?;
                vec![p.as_ref()]
            }
            None => self.providers.iter().map(|p| p.as_ref()).collect(),
        };
        if chosen.is_empty() {
            return Err(BrowserError::Unsupported(
                "no search provider is set up (set a SearXNG URL, a Brave or Tavily key, or turn \
                 DuckDuckGo back on)"
                    .into(),
            ));
        }
        let mut failures = Vec::new();
        for provider in chosen {
            let started = Instant::now();
            match provider.search(&self.client, query, limit).await {
                Ok(hits) if !hits.is_empty() => {
                    return Ok(Answer {
                        provider: provider.name().into(),
                        elapsed: started.elapsed(),
                        hits,
                        failures,
                    });
                }
                Ok(_) => failures.push(format!("{}: no results", provider.name())),
                Err(e) => failures.push(e.to_string()),
            }
        }
        Err(BrowserError::Page(format!(
            "no search provider gave results: {}",
            failures.join("; ")
        )))
    }
}

/// A search page's results read from its links: those leading away from the search engine's own
/// site (http and https only, with some text), in page order, each once. The fallback for pages
/// not in DuckDuckGo's HTML format.
pub fn links_as_hits(page: &str, links: &[(String, String)], limit: usize) -> Vec<Hit> {
    let engine = url::Url::parse(page)
        .ok()
        .and_then(|u| u.host_str().map(str::to_string))
        .unwrap_or_default();
    let same_site = |host: &str| {
        let strip = |h: &str| h.trim_start_matches("www.").to_string();
        let (a, b) = (strip(host), strip(&engine));
        a == b || a.ends_with(&format!(".{b}")) || b.ends_with(&format!(".{a}"))
    };
    let mut seen = std::collections::HashSet::new();
    links
        .iter()
        .filter_map(|(text, href)| {
            let url = url::Url::parse(href).ok()?;
            let host = url.host_str()?;
            let title = text.split_whitespace().collect::<Vec<_>>().join(" ");
            (matches!(url.scheme(), "http" | "https") && !same_site(host) && title.len() >= 3).then(
                || Hit {
                    title,
                    url: url.to_string(),
                    snippet: String::new(),
                },
            )
        })
        .filter(|hit| seen.insert(hit.url.clone()))
        .take(limit)
        .collect()
}

/// The `web.search` setting: `{"searxng_url": "https://searx.example/", "duckduckgo": true}`.
/// Brave and Tavily keys are secrets, not settings ([`BRAVE_KEY_SECRET`], [`TAVILY_KEY_SECRET`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SearchSettings {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub searxng_url: Option<String>,
    /// Turns DuckDuckGo's keyless endpoint off when `false`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duckduckgo: Option<bool>,
    /// The search page opened in the browser when no provider gives results (`{query}` for the
    /// query); `""` turns that last resort off.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub browser_url: Option<String>,
}

/// The secret store's names of the search keys (their environment variables win).
pub const BRAVE_KEY_SECRET: &str = "search.brave.api_key";
pub const TAVILY_KEY_SECRET: &str = "search.tavily.api_key";
pub const BRAVE_KEY_VARIABLE: &str = "BRAVE_API_KEY";
pub const TAVILY_KEY_VARIABLE: &str = "TAVILY_API_KEY";

impl SearchSettings {
    /// The search configuration with keys from `key(secret name, variable)`.
    pub fn config(&self, key: impl Fn(&str, &str) -> Option<String>) -> SearchConfig {
        let mut config = SearchConfig {
            searxng_url: self.searxng_url.clone(),
            brave_key: key(BRAVE_KEY_SECRET, BRAVE_KEY_VARIABLE),
            tavily_key: key(TAVILY_KEY_SECRET, TAVILY_KEY_VARIABLE),
            ..SearchConfig::default()
        };
        if self.duckduckgo == Some(false) {
            config.duckduckgo_url = None;
        }
        match self.browser_url.as_deref().map(str::trim) {
            Some("") => config.browser_url = None,
            Some(template) => config.browser_url = Some(template.to_string()),
            None => {}
        }
        config
    }
}
