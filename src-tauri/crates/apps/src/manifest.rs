//! `manifest.json`: parsed from its exact bytes and validated field by field. Every refusal is
//! [`Error::ManifestInvalid`] naming the field (`permissions[2]`, `oauth.provider`) and the
//! reason. Unknown fields are refused too: a manifest is a security statement, and a field
//! Osprey does not understand is one it cannot enforce.

use std::fmt;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::permissions;
use crate::{Error, Result};

/// The manifest format and protocol this Osprey speaks.
pub const PROTOCOL: &str = "v1";
/// The one runtime there is: a native executable speaking the protocol on its socket.
pub const RUNTIME_NATIVE: &str = "native";
pub const DEFAULT_STARTUP_TIMEOUT_SECS: u64 = 10;
pub const MAX_STARTUP_TIMEOUT_SECS: u64 = 120;

const FIELDS: &[&str] = &[
    "id",
    "name",
    "version",
    "description",
    "runtime",
    "protocol",
    "startup_timeout",
    "provides",
    "permissions",
    "overrides",
    "oauth",
    "build",
    "packs",
];

/// A validated manifest.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Manifest {
    /// Lowercase, `[a-z0-9][a-z0-9._-]*`, at most 64: also the app's directory name.
    pub id: String,
    pub name: String,
    /// `MAJOR.MINOR.PATCH` with an optional `-prerelease`.
    pub version: String,
    pub description: String,
    pub runtime: String,
    pub protocol: String,
    /// How long launch waits for the socket, 0-120 s.
    pub startup_timeout_secs: u64,
    pub provides: Vec<Capability>,
    pub permissions: Vec<String>,
    /// Hook points whose built-in step this app may replace (`handled: true`).
    pub overrides: Vec<String>,
    pub oauth: Option<OAuth>,
    /// How a developer's project builds its binary: `osprey app sideload` runs it. A package
    /// carries its built binary, so installs ignore it.
    pub build: Option<Build>,
    /// Tool packs the app ships (each a pack manifest, as in `<data>/packs/*.json`), naming only
    /// the app's own tools; the agent's role catalog loads them while the app's tools are
    /// registered. Checked here for their shape and tools; the catalog checks the rest.
    pub packs: Vec<Value>,
}

/// The manifest's `build`: `{"command": ["cargo", "build", "--release"], "output":
/// "target/release/units"}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Build {
    /// The program and its arguments, run in the project directory without a shell.
    pub command: Vec<String>,
    /// The built executable, relative to the project directory; it becomes the app's `binary`.
    pub output: String,
}

/// One entry of `provides`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(into = "String")]
pub enum Capability {
    Tool(String),
    Channel(String),
    Gateway,
    Vision,
    Browser,
    Comm,
    Ui,
    Schedule,
    Hooks,
}

impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Capability::Tool(name) => write!(f, "tool:{name}"),
            Capability::Channel(name) => write!(f, "channel:{name}"),
            Capability::Gateway => f.write_str("gateway"),
            Capability::Vision => f.write_str("vision"),
            Capability::Browser => f.write_str("browser"),
            Capability::Comm => f.write_str("comm"),
            Capability::Ui => f.write_str("ui"),
            Capability::Schedule => f.write_str("schedule"),
            Capability::Hooks => f.write_str("hooks"),
        }
    }
}

impl From<Capability> for String {
    fn from(capability: Capability) -> String {
        capability.to_string()
    }
}

impl Capability {
    fn parse(value: &str) -> std::result::Result<Capability, String> {
        if let Some(name) = value.strip_prefix("tool:") {
            return tool_name(name).map(|()| Capability::Tool(name.to_owned()));
        }
        if let Some(name) = value.strip_prefix("channel:") {
            return tool_name(name).map(|()| Capability::Channel(name.to_owned()));
        }
        Ok(match value {
            "gateway" => Capability::Gateway,
            "vision" => Capability::Vision,
            "browser" => Capability::Browser,
            "comm" => Capability::Comm,
            "ui" => Capability::Ui,
            "schedule" => Capability::Schedule,
            "hooks" => Capability::Hooks,
            other => {
                return Err(format!(
                    "unknown capability `{other}` (expected tool:NAME, channel:NAME, gateway, \
                     vision, browser, comm, ui, schedule or hooks)"
                ));
            }
        })
    }

    /// The permission prefix this capability cannot work without, if any.
    pub fn required_prefix(&self) -> Option<&'static str> {
        match self {
            Capability::Gateway => Some("network"),
            Capability::Comm => Some("comm"),
            Capability::Channel(_) => Some("channel"),
            Capability::Schedule => Some("schedule"),
            Capability::Hooks => Some("hook"),
            _ => None,
        }
    }
}

/// The OAuth client an app needs Osprey to run for it: a public client (RFC 8252: no secret,
/// PKCE instead) registered with the provider by the app's author, whose tokens Osprey obtains,
/// keeps and refreshes, and passes to the app through `Configure`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OAuth {
    pub provider: String,
    pub client_id: String,
    pub authorize_url: String,
    pub token_url: String,
    /// The provider's RFC 7009 revocation endpoint, when it has one: disconnecting the account
    /// (or removing the app) asks the provider to revoke the grant there.
    pub revocation_url: Option<String>,
    pub scopes: Vec<String>,
}

impl OAuth {
    /// Whether an endpoint is plain `http://` on this machine (127.0.0.1, [::1], localhost):
    /// an authorization server a developer runs, which only a sideloaded app may use.
    pub fn uses_loopback_http(&self) -> bool {
        [&self.authorize_url, &self.token_url]
            .into_iter()
            .chain(&self.revocation_url)
            .any(|url| url.starts_with("http://"))
    }
}

/// An OAuth endpoint: `https://`, or `http://` to a loopback host (a developer's own
/// authorization server; refused at connect time for apps that are not sideloaded).
fn endpoint_url(url: &str) -> std::result::Result<(), &'static str> {
    const EXPECTED: &str = "must be an https:// URL (or http:// to 127.0.0.1, [::1] or localhost)";
    if url.len() > 2048 || url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(EXPECTED);
    }
    let parsed = url::Url::parse(url).map_err(|_| EXPECTED)?;
    if !parsed.username().is_empty() || parsed.password().is_some() || parsed.fragment().is_some() {
        return Err("must not carry credentials or a #fragment");
    }
    let loopback = match parsed.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        None => false,
    };
    match parsed.scheme() {
        "https" if parsed.host().is_some() => Ok(()),
        "http" if loopback => Ok(()),
        _ => Err(EXPECTED),
    }
}

impl Manifest {
    /// Parses and validates the exact bytes of `manifest.json`.
    pub fn parse(bytes: &[u8]) -> Result<Manifest> {
        let value: Value = serde_json::from_slice(bytes)
            .map_err(|e| Error::manifest("manifest.json", format!("not valid JSON: {e}")))?;
        let Value::Object(object) = value else {
            return Err(Error::manifest("manifest.json", "must be a JSON object"));
        };
        if let Some(unknown) = object.keys().find(|key| !FIELDS.contains(&key.as_str())) {
            return Err(Error::manifest(unknown.as_str(), "unknown field"));
        }

        let id = required_string(&object, "id")?;
        check_id(&id)?;
        let name = required_string(&object, "name")?;
        check_text("name", &name, 64)?;
        let version = required_string(&object, "version")?;
        check_version(&version)?;
        let description = optional_string(&object, "description")?.unwrap_or_default();
        check_text("description", &description, 2000)?;
        let runtime =
            optional_string(&object, "runtime")?.unwrap_or_else(|| RUNTIME_NATIVE.to_owned());
        if runtime != RUNTIME_NATIVE {
            return Err(Error::manifest(
                "runtime",
                format!("unsupported runtime `{runtime}` (expected `{RUNTIME_NATIVE}`)"),
            ));
        }
        let protocol = optional_string(&object, "protocol")?.unwrap_or_else(|| PROTOCOL.to_owned());
        if protocol != PROTOCOL {
            return Err(Error::manifest(
                "protocol",
                format!("unsupported protocol `{protocol}` (this Osprey speaks `{PROTOCOL}`)"),
            ));
        }
        let startup_timeout_secs = match object.get("startup_timeout") {
            None => DEFAULT_STARTUP_TIMEOUT_SECS,
            Some(value) => value
                .as_u64()
                .filter(|secs| *secs <= MAX_STARTUP_TIMEOUT_SECS)
                .ok_or_else(|| {
                    Error::manifest(
                        "startup_timeout",
                        format!(
                            "must be a whole number of seconds from 0 to {MAX_STARTUP_TIMEOUT_SECS}"
                        ),
                    )
                })?,
        };

        let mut provides = Vec::new();
        for (index, entry) in string_list(&object, "provides")?.iter().enumerate() {
            let field = format!("provides[{index}]");
            let capability =
                Capability::parse(entry).map_err(|reason| Error::manifest(&field, reason))?;
            if provides.contains(&capability) {
                return Err(Error::manifest(field, format!("`{entry}` is listed twice")));
            }
            provides.push(capability);
        }
        if provides.is_empty() {
            return Err(Error::manifest(
                "provides",
                "an app must provide at least one capability",
            ));
        }

        let permissions = string_list(&object, "permissions")?;
        for (index, permission) in permissions.iter().enumerate() {
            let field = format!("permissions[{index}]");
            permissions::validate(permission).map_err(|reason| Error::manifest(&field, reason))?;
            if permissions[..index].contains(permission) {
                return Err(Error::manifest(
                    field,
                    format!("`{permission}` is listed twice"),
                ));
            }
        }

        for (index, capability) in provides.iter().enumerate() {
            if let Some(prefix) = capability.required_prefix()
                && !permissions::has_prefix(&permissions, prefix)
            {
                return Err(Error::manifest(
                    format!("provides[{index}]"),
                    format!("`{capability}` needs a `{prefix}:` permission"),
                ));
            }
        }

        let overrides = string_list(&object, "overrides")?;
        for (index, hook) in overrides.iter().enumerate() {
            let field = format!("overrides[{index}]");
            if let Some(why) = osprey_tools::hooks::unknown_hook(hook) {
                return Err(Error::manifest(field, why));
            }
            if !permissions::allows(&permissions, "hook", hook) {
                return Err(Error::manifest(
                    field,
                    format!("needs the `hook:{hook}` permission"),
                ));
            }
            if !provides.contains(&Capability::Hooks) {
                return Err(Error::manifest(
                    field,
                    "overrides are served by the HookService: add `hooks` to provides",
                ));
            }
        }

        let oauth = match object.get("oauth") {
            None | Some(Value::Null) => None,
            Some(Value::Object(oauth)) => Some(parse_oauth(oauth, &permissions)?),
            Some(_) => return Err(Error::manifest("oauth", "must be an object")),
        };

        let build = match object.get("build") {
            None | Some(Value::Null) => None,
            Some(Value::Object(build)) => Some(parse_build(build)?),
            Some(_) => return Err(Error::manifest("build", "must be an object")),
        };

        let packs = parse_packs(&object, &provides)?;

        Ok(Manifest {
            id,
            name,
            version,
            description,
            runtime,
            protocol,
            startup_timeout_secs,
            provides,
            permissions,
            overrides,
            oauth,
            build,
            packs,
        })
    }

    /// The tool names this app declares (`tool:NAME`).
    pub fn tools(&self) -> impl Iterator<Item = &str> {
        self.provides
            .iter()
            .filter_map(|capability| match capability {
                Capability::Tool(name) => Some(name.as_str()),
                _ => None,
            })
    }
}

fn parse_build(object: &Map<String, Value>) -> Result<Build> {
    if let Some(unknown) = object
        .keys()
        .find(|key| !["command", "output"].contains(&key.as_str()))
    {
        return Err(Error::manifest(format!("build.{unknown}"), "unknown field"));
    }
    let command: Vec<String> = match object.get("command") {
        Some(Value::Array(items)) if !items.is_empty() && items.len() <= 64 => items
            .iter()
            .enumerate()
            .map(|(index, item)| {
                item.as_str()
                    .filter(|arg| !arg.is_empty() && !arg.contains('\0'))
                    .map(str::to_owned)
                    .ok_or_else(|| {
                        Error::manifest(
                            format!("build.command[{index}]"),
                            "must be a non-empty string",
                        )
                    })
            })
            .collect::<Result<_>>()?,
        _ => {
            return Err(Error::manifest(
                "build.command",
                "required: the program and its arguments as a list of strings, such as \
                 [\"cargo\", \"build\", \"--release\"]",
            ));
        }
    };
    let output = object
        .get("output")
        .and_then(Value::as_str)
        .filter(|output| {
            let path = std::path::Path::new(output);
            !output.is_empty()
                && path.is_relative()
                && path
                    .components()
                    .all(|c| matches!(c, std::path::Component::Normal(_)))
        })
        .ok_or_else(|| {
            Error::manifest(
                "build.output",
                "required: the built executable as a path inside the project, such as \
                 target/release/my-app",
            )
        })?
        .to_owned();
    Ok(Build { command, output })
}

fn parse_oauth(object: &Map<String, Value>, permissions: &[String]) -> Result<OAuth> {
    let field = |name: &str| format!("oauth.{name}");
    let text = |name: &str| -> Result<String> {
        object
            .get(name)
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| Error::manifest(field(name), "required string"))
    };
    if let Some(unknown) = object.keys().find(|key| {
        ![
            "provider",
            "client_id",
            "authorize_url",
            "token_url",
            "revocation_url",
            "scopes",
        ]
        .contains(&key.as_str())
    }) {
        return Err(Error::manifest(field(unknown), "unknown field"));
    }
    let provider = text("provider")?;
    permissions::validate(&format!("oauth:{provider}"))
        .map_err(|reason| Error::manifest(field("provider"), reason))?;
    if !permissions::allows(permissions, "oauth", &provider) {
        return Err(Error::manifest(
            field("provider"),
            format!("needs the `oauth:{provider}` permission"),
        ));
    }
    let client_id = text("client_id")?;
    if client_id.is_empty()
        || client_id.len() > 512
        || client_id
            .chars()
            .any(|c| c.is_whitespace() || c.is_control())
    {
        return Err(Error::manifest(
            field("client_id"),
            "must be the client id the provider issued: 1-512 characters, no spaces",
        ));
    }
    let mut urls = Vec::new();
    for name in ["authorize_url", "token_url"] {
        let url = text(name)?;
        endpoint_url(&url).map_err(|why| Error::manifest(field(name), why))?;
        urls.push(url);
    }
    let revocation_url = match object.get("revocation_url") {
        None | Some(Value::Null) => None,
        Some(Value::String(url)) => {
            endpoint_url(url).map_err(|why| Error::manifest(field("revocation_url"), why))?;
            Some(url.clone())
        }
        Some(_) => return Err(Error::manifest(field("revocation_url"), "must be a URL")),
    };
    let scopes = match object.get("scopes") {
        None => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(index, item)| {
                item.as_str()
                    .filter(|scope| !scope.is_empty() && scope.len() <= 256)
                    .map(str::to_owned)
                    .ok_or_else(|| {
                        Error::manifest(
                            format!("oauth.scopes[{index}]"),
                            "must be a non-empty string",
                        )
                    })
            })
            .collect::<Result<_>>()?,
        Some(_) => {
            return Err(Error::manifest(
                field("scopes"),
                "must be an array of strings",
            ));
        }
    };
    let token_url = urls.pop().unwrap_or_default();
    let authorize_url = urls.pop().unwrap_or_default();
    Ok(OAuth {
        provider,
        client_id,
        authorize_url,
        token_url,
        revocation_url,
        scopes,
    })
}

/// The most packs one app ships.
const MAX_PACKS: usize = 16;

/// `packs`: pack manifests (objects with a `name` and `tools`), each naming only tools the app
/// provides, so an app cannot hand a role tools that are not its own.
fn parse_packs(object: &Map<String, Value>, provides: &[Capability]) -> Result<Vec<Value>> {
    let packs = match object.get("packs") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(packs)) => packs,
        Some(_) => return Err(Error::manifest("packs", "must be a list of pack manifests")),
    };
    if packs.len() > MAX_PACKS {
        return Err(Error::manifest(
            "packs",
            format!("at most {MAX_PACKS} packs per app"),
        ));
    }
    let own: Vec<&str> = provides
        .iter()
        .filter_map(|capability| match capability {
            Capability::Tool(name) => Some(name.as_str()),
            _ => None,
        })
        .collect();
    for (index, pack) in packs.iter().enumerate() {
        let field = format!("packs[{index}]");
        let Value::Object(pack) = pack else {
            return Err(Error::manifest(
                field,
                "must be a pack manifest (an object)",
            ));
        };
        if !pack.get("name").is_some_and(Value::is_string) {
            return Err(Error::manifest(format!("{field}.name"), "must be a string"));
        }
        let Some(Value::Array(tools)) = pack.get("tools") else {
            return Err(Error::manifest(
                format!("{field}.tools"),
                "must be a list of the app's tool names",
            ));
        };
        for (t, tool) in tools.iter().enumerate() {
            let name = tool.as_str().unwrap_or_default();
            // `convert` or `convert.<resource or action>`: the tool part must be the app's.
            let base = name.split('.').next().unwrap_or_default();
            if !own.contains(&base) {
                return Err(Error::manifest(
                    format!("{field}.tools[{t}]"),
                    format!(
                        "`{name}` is not one of this app's tools ({}); an app's packs name only \
                         the tools it provides",
                        if own.is_empty() {
                            "it provides none".to_string()
                        } else {
                            own.join(", ")
                        }
                    ),
                ));
            }
        }
    }
    Ok(packs.clone())
}

/// Tool and channel names: `[a-z][a-z0-9_]*`, at most 64 (they become tool names the model sees).
fn tool_name(name: &str) -> std::result::Result<(), String> {
    let valid = (1..=64).contains(&name.len())
        && name.bytes().next().is_some_and(|b| b.is_ascii_lowercase())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    if valid {
        Ok(())
    } else {
        Err(format!(
            "`{name}` must be 1-64 characters of a-z, 0-9 and `_`, starting with a letter"
        ))
    }
}

fn required_string(object: &Map<String, Value>, field: &str) -> Result<String> {
    optional_string(object, field)?.ok_or_else(|| Error::manifest(field, "required"))
}

fn optional_string(object: &Map<String, Value>, field: &str) -> Result<Option<String>> {
    match object.get(field) {
        None => Ok(None),
        Some(Value::String(value)) => Ok(Some(value.clone())),
        Some(_) => Err(Error::manifest(field, "must be a string")),
    }
}

fn string_list(object: &Map<String, Value>, field: &str) -> Result<Vec<String>> {
    match object.get(field) {
        None => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(index, item)| {
                item.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| Error::manifest(format!("{field}[{index}]"), "must be a string"))
            })
            .collect(),
        Some(_) => Err(Error::manifest(field, "must be an array of strings")),
    }
}

fn check_id(id: &str) -> Result<()> {
    let valid = (1..=64).contains(&id.len())
        && id
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        && id.bytes().all(|b| {
            b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'.' | b'-' | b'_')
        })
        && !id.contains("..")
        && !id.ends_with('.');
    if valid {
        Ok(())
    } else {
        Err(Error::manifest(
            "id",
            format!(
                "`{id}` must be 1-64 characters of a-z, 0-9, `.`, `-`, `_`, starting with a \
                 letter or digit, without `..` or a trailing `.`"
            ),
        ))
    }
}

fn check_text(field: &str, value: &str, max_chars: usize) -> Result<()> {
    if field == "name" && value.trim().is_empty() {
        return Err(Error::manifest(field, "must not be empty"));
    }
    if value.chars().count() > max_chars {
        return Err(Error::manifest(
            field,
            format!("longer than {max_chars} characters"),
        ));
    }
    if value.chars().any(|c| c.is_control() && c != '\n') {
        return Err(Error::manifest(field, "contains control characters"));
    }
    Ok(())
}

/// Whether `version` is `MAJOR.MINOR.PATCH[-prerelease]` as a manifest's version must be (store
/// skills' versions follow the same rule).
pub fn is_version(version: &str) -> bool {
    check_version(version).is_ok()
}

fn check_version(version: &str) -> Result<()> {
    let (core, prerelease) = match version.split_once('-') {
        Some((core, prerelease)) => (core, Some(prerelease)),
        None => (version, None),
    };
    let numbers: Vec<&str> = core.split('.').collect();
    let core_ok = numbers.len() == 3
        && numbers.iter().all(|n| {
            !n.is_empty()
                && n.len() <= 9
                && n.bytes().all(|b| b.is_ascii_digit())
                && (n.len() == 1 || !n.starts_with('0'))
        });
    let prerelease_ok = prerelease.is_none_or(|p| {
        !p.is_empty()
            && p.len() <= 64
            && p.split('.').all(|part| {
                !part.is_empty() && part.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            })
    });
    if core_ok && prerelease_ok {
        Ok(())
    } else {
        Err(Error::manifest(
            "version",
            format!("`{version}` is not MAJOR.MINOR.PATCH (optionally -prerelease)"),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn base() -> Value {
        json!({
            "id": "com.example.units",
            "name": "Units",
            "version": "1.2.3",
            "description": "Converts units",
            "provides": ["tool:convert"],
        })
    }

    fn parse(value: &Value) -> Result<Manifest> {
        Manifest::parse(value.to_string().as_bytes())
    }

    fn refusal(value: &Value) -> (String, String) {
        match parse(value).unwrap_err() {
            Error::ManifestInvalid { field, reason } => (field, reason),
            other => panic!("expected manifest_invalid, got {other}"),
        }
    }

    fn with(field: &str, value: Value) -> Value {
        let mut manifest = base();
        manifest[field] = value;
        manifest
    }

    #[test]
    fn a_minimal_manifest_gets_the_defaults() {
        let manifest = parse(&base()).unwrap();
        assert_eq!(manifest.id, "com.example.units");
        assert_eq!(manifest.runtime, "native");
        assert_eq!(manifest.protocol, "v1");
        assert_eq!(manifest.startup_timeout_secs, 10);
        assert_eq!(manifest.tools().collect::<Vec<_>>(), ["convert"]);
        assert_eq!(
            serde_json::to_value(&manifest).unwrap()["provides"],
            json!(["tool:convert"])
        );
    }

    #[test]
    fn an_app_ships_packs_of_its_own_tools_only() {
        let pack = json!({"schemaVersion": 1, "name": "units", "description": "Convert units",
                          "tools": ["convert"], "riskProfile": "standard"});
        let manifest = parse(&with("packs", json!([pack.clone()]))).unwrap();
        assert_eq!(manifest.packs, [pack]);
        assert!(parse(&base()).unwrap().packs.is_empty());

        let (field, reason) = refusal(&with(
            "packs",
            json!([{"name": "grab", "tools": ["convert", "shell"]}]),
        ));
        assert_eq!(field, "packs[0].tools[1]");
        assert!(
            reason.contains("`shell` is not one of this app's tools (convert)"),
            "{reason}"
        );
        let (field, _) = refusal(&with("packs", json!([{"tools": ["convert"]}])));
        assert_eq!(field, "packs[0].name");
        let (field, _) = refusal(&with("packs", json!({"name": "x"})));
        assert_eq!(field, "packs");
    }

    #[test]
    fn a_build_step_is_a_program_with_arguments_and_an_output_inside_the_project() {
        let build =
            json!({"command": ["cargo", "build", "--release"], "output": "target/release/units"});
        let manifest = parse(&with("build", build)).unwrap();
        assert_eq!(
            manifest.build,
            Some(Build {
                command: vec!["cargo".into(), "build".into(), "--release".into()],
                output: "target/release/units".into(),
            })
        );
        for (bad, field) in [
            (json!({"command": [], "output": "x"}), "build.command"),
            (
                json!({"command": "cargo build", "output": "x"}),
                "build.command",
            ),
            (
                json!({"command": ["cargo", ""], "output": "x"}),
                "build.command[1]",
            ),
            (json!({"command": ["make"]}), "build.output"),
            (
                json!({"command": ["make"], "output": "/usr/bin/id"}),
                "build.output",
            ),
            (
                json!({"command": ["make"], "output": "../elsewhere/app"}),
                "build.output",
            ),
            (
                json!({"command": ["make"], "output": "x", "shell": true}),
                "build.shell",
            ),
            (json!("make"), "build"),
        ] {
            assert_eq!(refusal(&with("build", bad.clone())).0, field, "{bad}");
        }
    }

    #[test]
    fn startup_timeout_is_zero_to_120() {
        assert_eq!(
            parse(&with("startup_timeout", json!(0)))
                .unwrap()
                .startup_timeout_secs,
            0
        );
        assert_eq!(
            parse(&with("startup_timeout", json!(120)))
                .unwrap()
                .startup_timeout_secs,
            120
        );
        for bad in [json!(121), json!(-1), json!(2.5), json!("10")] {
            assert_eq!(refusal(&with("startup_timeout", bad)).0, "startup_timeout");
        }
    }

    #[test]
    fn each_field_is_checked_and_named() {
        let cases = [
            (with("id", json!("Com.Example")), "id"),
            (with("id", json!("../escape")), "id"),
            (with("id", json!("a..b")), "id"),
            (with("id", json!(7)), "id"),
            (with("name", json!("  ")), "name"),
            (with("name", json!("bell\u{7}")), "name"),
            (with("version", json!("1.2")), "version"),
            (with("version", json!("01.2.3")), "version"),
            (with("version", json!("1.2.3-")), "version"),
            (with("runtime", json!("python")), "runtime"),
            (with("protocol", json!("v2")), "protocol"),
            (with("provides", json!([])), "provides"),
            (with("provides", json!("tool:convert")), "provides"),
            (
                with("provides", json!(["tool:convert", "teleport"])),
                "provides[1]",
            ),
            (with("provides", json!(["tool:Convert"])), "provides[0]"),
            (
                with("provides", json!(["tool:convert", "tool:convert"])),
                "provides[1]",
            ),
            (
                with("permissions", json!(["network:ok.example.com", "bogus:x"])),
                "permissions[1]",
            ),
            (
                with("permissions", json!(["filesystem:read", "filesystem:read"])),
                "permissions[1]",
            ),
            (with("surprise", json!(true)), "surprise"),
        ];
        for (manifest, field) in cases {
            let (actual, reason) = refusal(&manifest);
            assert_eq!(actual, field, "{manifest}: {reason}");
            assert!(!reason.is_empty());
        }
        let missing = {
            let mut manifest = base();
            manifest.as_object_mut().unwrap().remove("version");
            manifest
        };
        assert_eq!(
            refusal(&missing),
            ("version".to_owned(), "required".to_owned())
        );
        assert_eq!(refusal(&json!([1])).0, "manifest.json");
        assert!(matches!(
            Manifest::parse(b"{oops"),
            Err(Error::ManifestInvalid { .. })
        ));
    }

    #[test]
    fn capabilities_that_need_a_permission_are_refused_without_it() {
        let cases = [
            ("gateway", "network:api.example.com", "network"),
            ("comm", "comm:send", "comm"),
            ("channel:feed", "channel:read", "channel"),
            ("schedule", "schedule:write", "schedule"),
            ("hooks", "hook:tool.pre_execute", "hook"),
        ];
        for (capability, permission, prefix) in cases {
            let without = with("provides", json!([capability]));
            let (field, reason) = refusal(&without);
            assert_eq!(field, "provides[0]");
            assert!(reason.contains(&format!("`{prefix}:`")), "{reason}");
            let mut granted = without.clone();
            granted["permissions"] = json!([permission]);
            assert!(parse(&granted).is_ok(), "{capability} with {permission}");
        }
        // Capabilities without a rule need nothing.
        assert!(parse(&with("provides", json!(["ui", "vision", "browser"]))).is_ok());
    }

    #[test]
    fn overrides_need_their_hook_permission_and_the_hooks_capability() {
        let mut manifest = base();
        manifest["provides"] = json!(["hooks"]);
        manifest["permissions"] = json!(["hook:tool.post_execute"]);
        manifest["overrides"] = json!(["tool.pre_execute"]);
        let (field, reason) = refusal(&manifest);
        assert_eq!(field, "overrides[0]");
        assert!(reason.contains("hook:tool.pre_execute"), "{reason}");

        manifest["permissions"] = json!(["hook:*"]);
        assert_eq!(parse(&manifest).unwrap().overrides, ["tool.pre_execute"]);

        manifest["overrides"] = json!(["tool.teleport"]);
        assert!(refusal(&manifest).1.contains("unknown hook"));

        let mut tool_only = base();
        tool_only["permissions"] = json!(["hook:tool.pre_execute"]);
        tool_only["overrides"] = json!(["tool.pre_execute"]);
        assert!(refusal(&tool_only).1.contains("add `hooks`"));
    }

    #[test]
    fn oauth_needs_its_permission_and_https_urls() {
        let uses_loopback =
            |manifest: &Value| parse(manifest).unwrap().oauth.unwrap().uses_loopback_http();
        let mut manifest = base();
        manifest["oauth"] = json!({
            "provider": "github",
            "client_id": "Iv1.0123456789",
            "authorize_url": "https://github.com/login/oauth/authorize",
            "token_url": "https://github.com/login/oauth/access_token",
            "scopes": ["repo"]
        });
        assert_eq!(refusal(&manifest).0, "oauth.provider");
        manifest["permissions"] = json!(["oauth:github"]);
        let oauth = parse(&manifest).unwrap().oauth.unwrap();
        assert_eq!(oauth.scopes, ["repo"]);
        assert_eq!(oauth.client_id, "Iv1.0123456789");
        assert!(!oauth.uses_loopback_http());
        for refused in [
            "http://github.com/token",
            "http://127.0.0.2.example.com/token",
            "https://user:pass@github.com/token",
            "https://github.com/token#x",
            "file:///etc/passwd",
        ] {
            manifest["oauth"]["token_url"] = json!(refused);
            assert_eq!(refusal(&manifest).0, "oauth.token_url", "{refused}");
        }
        // A developer's own authorization server on this machine.
        for loopback in [
            "http://127.0.0.1:8080/token",
            "http://[::1]:8080/token",
            "http://localhost/token",
        ] {
            manifest["oauth"]["token_url"] = json!(loopback);
            assert!(uses_loopback(&manifest));
        }
        manifest["oauth"]["token_url"] = json!("https://github.com/token");
        manifest["oauth"]["revocation_url"] = json!("http://github.com/revoke");
        assert_eq!(refusal(&manifest).0, "oauth.revocation_url");
        manifest["oauth"]["revocation_url"] = json!("https://github.com/revoke");
        let oauth = parse(&manifest).unwrap().oauth.unwrap();
        assert_eq!(
            oauth.revocation_url.as_deref(),
            Some("https://github.com/revoke")
        );
        manifest["oauth"]["revocation_url"] = json!("http://127.0.0.1:9/revoke");
        assert!(uses_loopback(&manifest));
        manifest["oauth"]["scopes"] = json!([""]);
        assert_eq!(refusal(&manifest).0, "oauth.scopes[0]");
        manifest["oauth"]["scopes"] = json!([]);
        manifest["oauth"]["client_id"] = json!("has space");
        assert_eq!(refusal(&manifest).0, "oauth.client_id");
        manifest["oauth"]
            .as_object_mut()
            .unwrap()
            .remove("client_id");
        assert_eq!(refusal(&manifest).0, "oauth.client_id");
    }
}
