//! Where the `web` tool may connect. Three layers use these checks: the URL before any request
//! (and every redirect target), a look-up of the host before each hop, and the DNS resolver the
//! HTTP client connects through (so a name that changes its answer between check and connect,
//! DNS rebinding, still cannot reach a private address).
//!
//! The rules fail closed: IPv6 outside global unicast (2000::/3) is refused unless it embeds a
//! public IPv4 address in a known translation form, and host names that only make sense on a
//! local network (single labels, `.internal`, `.local`, ...) are refused before any look-up.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use url::{Host, Url};

/// A refusal: what was refused and why. Carried through the HTTP client's error chain when the
/// resolver refuses at connect time, so the tool can report it as `ssrf_blocked`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Blocked {
    /// The URL or host that was refused.
    pub target: String,
    pub reason: String,
}

impl Blocked {
    pub fn new(target: impl Into<String>, reason: impl Into<String>) -> Self {
        Blocked {
            target: target.into(),
            reason: reason.into(),
        }
    }
}

impl fmt::Display for Blocked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "refused {}: {}", self.target, self.reason)
    }
}

impl std::error::Error for Blocked {}

/// Why a URL could not be used: refused for where it points, or not a URL at all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UrlError {
    Blocked(Blocked),
    Invalid(String),
}

impl fmt::Display for UrlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UrlError::Blocked(b) => b.fmt(f),
            UrlError::Invalid(m) => f.write_str(m),
        }
    }
}

/// Parses `raw` the way a browser would (the `url` crate follows the WHATWG URL standard, which
/// turns `http://0x7f.1/`, `http://2130706433/`, `http://127。0。0。1/`, percent-encoded and IDN
/// hosts into their canonical form) and checks the result. A missing scheme means `https://`.
/// The fragment is dropped: it is never sent.
pub fn parse_url(raw: &str, allow_loopback: bool) -> Result<Url, UrlError> {
    let raw = raw.trim();
    let mut url = match Url::parse(raw) {
        Ok(url) => url,
        Err(url::ParseError::RelativeUrlWithoutBase) if !raw.contains("://") => {
            Url::parse(&format!("https://{raw}"))
                .map_err(|e| UrlError::Invalid(format!("`{raw}` is not a valid URL: {e}")))?
        }
        Err(e) => {
            return Err(UrlError::Invalid(format!(
                "`{raw}` is not a valid URL: {e}"
            )));
        }
    };
    url.set_fragment(None);
    check_url(&url, allow_loopback).map_err(UrlError::Blocked)?;
    Ok(url)
}

/// Checks an already parsed URL: scheme, credentials, and host (by name or address).
pub fn check_url(url: &Url, allow_loopback: bool) -> Result<(), Blocked> {
    let refuse = |reason: String| Blocked::new(url.as_str(), reason);
    match url.scheme() {
        "http" | "https" => {}
        other => {
            return Err(refuse(format!(
                "only http and https URLs can be fetched, not `{other}:`"
            )));
        }
    }
    // `http://trusted.example@evil.example/` reads as the first host to a person approving it.
    if !url.username().is_empty() || url.password().is_some() {
        return Err(refuse(
            "URLs with credentials (user@host) are refused: the real host is easy to misread"
                .into(),
        ));
    }
    match url.host() {
        None => Err(refuse("the URL has no host".into())),
        Some(Host::Ipv4(ip)) => match ip_refusal(IpAddr::V4(ip), allow_loopback) {
            Some(reason) => Err(refuse(format!("{ip} is {reason}"))),
            None => Ok(()),
        },
        Some(Host::Ipv6(ip)) => match ip_refusal(IpAddr::V6(ip), allow_loopback) {
            Some(reason) => Err(refuse(format!("{ip} is {reason}"))),
            None => Ok(()),
        },
        Some(Host::Domain(name)) => {
            host_name_refusal(name, allow_loopback).map_or(Ok(()), |r| Err(refuse(r)))
        }
    }
}

/// Names refused before any look-up: they point at this machine, a cloud metadata service or a
/// local network by convention, whatever DNS says. (`metadata.google.com` is public DNS: refusing
/// only what it resolves to would let it through wherever it answers with a public address.)
pub const METADATA_NAMES: &[&str] = &[
    "metadata",
    "metadata.google.internal",
    "metadata.google.com",
    "metadata.goog",
    "metadata.packet.net",
    "metadata.platformequinix.com",
    "instance-data",
    "instance-data.ec2.internal",
    "metadata.tencentyun.com",
    "kubernetes.default",
    "kubernetes.default.svc",
];

/// Suffixes (and whole names) reserved for local networks or this host.
const LOCAL_SUFFIXES: &[&str] = &[
    "localhost",
    "localdomain",
    "local",
    "internal",
    "intranet",
    "lan",
    "home",
    "corp",
    "home.arpa",
    "arpa",
];

/// Why a host name is refused, if it is. Also used by the resolver on the names it is asked for.
pub fn host_name_refusal(name: &str, allow_loopback: bool) -> Option<String> {
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    if name.is_empty() {
        return Some("the host is empty".into());
    }
    // A name that is really an address literal (the URL parser normally converts these; the
    // resolver may be handed one directly).
    let bare = name.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = bare.parse::<IpAddr>() {
        return ip_refusal(ip, allow_loopback).map(|r| format!("{ip} is {r}"));
    }
    if METADATA_NAMES.contains(&name.as_str()) {
        return Some(format!("`{name}` is a cloud metadata host"));
    }
    for suffix in LOCAL_SUFFIXES {
        if name == *suffix || name.ends_with(&format!(".{suffix}")) {
            return Some(format!(
                "`{name}` is a local-network or loopback name (.{suffix})"
            ));
        }
    }
    if !name.contains('.') {
        return Some(format!(
            "`{name}` is a single-label name, which resolves through local search domains"
        ));
    }
    None
}

/// Why an address may not be connected to, or `None` for a public address. With
/// `allow_loopback`, exactly 127.0.0.0/8 and ::1 are let through (for tests against loopback
/// servers); embedded forms of loopback (`::ffff:127.0.0.1`, NAT64, ...) stay refused.
pub fn ip_refusal(ip: IpAddr, allow_loopback: bool) -> Option<String> {
    match ip {
        IpAddr::V4(v4) => {
            if allow_loopback && v4.octets()[0] == 127 {
                return None;
            }
            v4_refusal(v4).map(str::to_string)
        }
        IpAddr::V6(v6) => {
            if allow_loopback && v6 == Ipv6Addr::LOCALHOST {
                return None;
            }
            v6_refusal(v6)
        }
    }
}

/// `(network, prefix length, description)`, most specific first where ranges nest.
const V4_RANGES: &[([u8; 4], u8, &str)] = &[
    (
        [169, 254, 169, 254],
        32,
        "the cloud metadata service (169.254.169.254)",
    ),
    (
        [100, 100, 100, 200],
        32,
        "the Alibaba Cloud metadata service (100.100.100.200)",
    ),
    (
        [192, 0, 0, 192],
        32,
        "the Oracle Cloud metadata service (192.0.0.192)",
    ),
    ([255, 255, 255, 255], 32, "the broadcast address"),
    (
        [0, 0, 0, 0],
        8,
        "\"this network\" / unspecified (0.0.0.0/8)",
    ),
    ([10, 0, 0, 0], 8, "a private address (10.0.0.0/8)"),
    (
        [100, 64, 0, 0],
        10,
        "carrier-grade NAT shared space (100.64.0.0/10)",
    ),
    ([127, 0, 0, 0], 8, "loopback (127.0.0.0/8)"),
    ([169, 254, 0, 0], 16, "link-local (169.254.0.0/16)"),
    ([172, 16, 0, 0], 12, "a private address (172.16.0.0/12)"),
    (
        [192, 0, 0, 0],
        24,
        "IETF protocol assignments (192.0.0.0/24)",
    ),
    (
        [192, 0, 2, 0],
        24,
        "documentation TEST-NET-1 (192.0.2.0/24)",
    ),
    (
        [192, 88, 99, 0],
        24,
        "the deprecated 6to4 relay anycast range (192.88.99.0/24)",
    ),
    ([192, 168, 0, 0], 16, "a private address (192.168.0.0/16)"),
    ([198, 18, 0, 0], 15, "benchmarking (198.18.0.0/15)"),
    (
        [198, 51, 100, 0],
        24,
        "documentation TEST-NET-2 (198.51.100.0/24)",
    ),
    (
        [203, 0, 113, 0],
        24,
        "documentation TEST-NET-3 (203.0.113.0/24)",
    ),
    ([224, 0, 0, 0], 4, "multicast (224.0.0.0/4)"),
    ([240, 0, 0, 0], 4, "reserved (240.0.0.0/4)"),
];

fn v4_refusal(ip: Ipv4Addr) -> Option<&'static str> {
    let n = u32::from(ip);
    V4_RANGES.iter().find_map(|(net, len, what)| {
        let mask = if *len == 0 { 0 } else { u32::MAX << (32 - len) };
        (n & mask == u32::from_be_bytes(*net) & mask).then_some(*what)
    })
}

const V6_RANGES: &[(u128, u8, &str)] = &[
    (
        0xfd00_0ec2_0000_0000_0000_0000_0000_0254,
        128,
        "the AWS IPv6 metadata service (fd00:ec2::254)",
    ),
    (
        0x0064_ff9b_0001_0000_0000_0000_0000_0000,
        48,
        "the local-use NAT64 prefix (64:ff9b:1::/48)",
    ),
    (
        0x0100_0000_0000_0000_0000_0000_0000_0000,
        64,
        "discard-only (100::/64)",
    ),
    (
        0x2001_0db8_0000_0000_0000_0000_0000_0000,
        32,
        "documentation (2001:db8::/32)",
    ),
    (
        0x3fff_0000_0000_0000_0000_0000_0000_0000,
        20,
        "documentation (3fff::/20)",
    ),
    (
        0x2001_0002_0000_0000_0000_0000_0000_0000,
        48,
        "benchmarking (2001:2::/48)",
    ),
    (
        0x2001_0000_0000_0000_0000_0000_0000_0000,
        23,
        "IETF protocol assignments (2001::/23)",
    ),
    (
        0x5f00_0000_0000_0000_0000_0000_0000_0000,
        16,
        "SRv6 segment identifiers (5f00::/16)",
    ),
    (
        0xfc00_0000_0000_0000_0000_0000_0000_0000,
        7,
        "a unique local address (fc00::/7)",
    ),
    (
        0xfe80_0000_0000_0000_0000_0000_0000_0000,
        10,
        "link-local (fe80::/10)",
    ),
    (
        0xfec0_0000_0000_0000_0000_0000_0000_0000,
        10,
        "site-local (fec0::/10)",
    ),
    (
        0xff00_0000_0000_0000_0000_0000_0000_0000,
        8,
        "multicast (ff00::/8)",
    ),
];

fn in_v6(n: u128, net: u128, len: u8) -> bool {
    let mask = if len == 0 {
        0
    } else {
        u128::MAX << (128 - len)
    };
    n & mask == net & mask
}

fn v4_from(hi: u16, lo: u16) -> Ipv4Addr {
    Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo))
}

/// The refusal for an IPv6 address that carries an IPv4 address, judged by the embedded one.
fn embedded(form: &str, v4: Ipv4Addr) -> Option<String> {
    v4_refusal(v4).map(|why| format!("{form} embedding {v4}, which is {why}"))
}

fn v6_refusal(ip: Ipv6Addr) -> Option<String> {
    let n = u128::from(ip);
    let s = ip.segments();
    if ip == Ipv6Addr::UNSPECIFIED {
        return Some("the unspecified address (::)".into());
    }
    if ip == Ipv6Addr::LOCALHOST {
        return Some("loopback (::1)".into());
    }
    // ::ffff:a.b.c.d, IPv4-mapped: the OS connects to the IPv4 address.
    if in_v6(n, 0xffff_0000_0000, 96) {
        return embedded("an IPv4-mapped address", v4_from(s[6], s[7]));
    }
    // ::ffff:0:a.b.c.d, IPv4-translated (SIIT).
    if in_v6(n, 0xffff_0000_0000_0000, 96) {
        return embedded("an IPv4-translated address", v4_from(s[6], s[7]));
    }
    // ::a.b.c.d, IPv4-compatible: deprecated and never routable, refused whatever it embeds.
    if in_v6(n, 0, 96) {
        let v4 = v4_from(s[6], s[7]);
        return Some(
            embedded("a deprecated IPv4-compatible address", v4)
                .unwrap_or_else(|| format!("a deprecated IPv4-compatible address (embeds {v4})")),
        );
    }
    // 64:ff9b::/96, well-known NAT64 prefix: a translator connects to the embedded address.
    if in_v6(n, 0x0064_ff9b_0000_0000_0000_0000_0000_0000, 96) {
        return embedded("a NAT64 address (64:ff9b::/96)", v4_from(s[6], s[7]));
    }
    // 2002:AABB:CCDD::/48, 6to4.
    if in_v6(n, 0x2002_0000_0000_0000_0000_0000_0000_0000, 16) {
        return embedded("a 6to4 address (2002::/16)", v4_from(s[1], s[2]));
    }
    // 2001:0:SSSS:SSSS:...:CCCC:CCCC, Teredo: server address, and client address inverted.
    if in_v6(n, 0x2001_0000_0000_0000_0000_0000_0000_0000, 32) {
        return embedded("a Teredo address (2001::/32, server)", v4_from(s[2], s[3])).or_else(
            || {
                embedded(
                    "a Teredo address (2001::/32, client)",
                    v4_from(!s[6], !s[7]),
                )
            },
        );
    }
    if let Some((_, _, what)) = V6_RANGES.iter().find(|(net, len, _)| in_v6(n, *net, *len)) {
        return Some((*what).to_string());
    }
    if !in_v6(n, 0x2000_0000_0000_0000_0000_0000_0000_0000, 3) {
        return Some("not a global unicast address (outside 2000::/3)".into());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_representative_addresses() {
        let refused = |s: &str| ip_refusal(s.parse().unwrap(), false);
        assert!(refused("10.1.2.3").unwrap().contains("10.0.0.0/8"));
        assert!(refused("169.254.169.254").unwrap().contains("metadata"));
        assert!(refused("::ffff:10.0.0.1").unwrap().contains("IPv4-mapped"));
        assert!(refused("2002:7f00:1::").unwrap().contains("6to4"));
        assert!(refused("64:ff9b::a9fe:a9fe").unwrap().contains("NAT64"));
        // Teredo client 127.0.0.1 is stored inverted: 80ff:fffe.
        assert!(
            refused("2001:0:4136:e378:8000:63bf:80ff:fffe")
                .unwrap()
                .contains("client")
        );
        assert_eq!(refused("93.184.215.14"), None);
        assert_eq!(refused("2606:4700::1111"), None);
        assert_eq!(refused("::ffff:93.184.215.14"), None);
        assert_eq!(refused("64:ff9b::5db8:d70e"), None);
    }

    #[test]
    fn loopback_allowance_is_exactly_loopback() {
        let allowed = |s: &str| ip_refusal(s.parse().unwrap(), true).is_none();
        assert!(allowed("127.0.0.1") && allowed("127.9.9.9") && allowed("::1"));
        for s in [
            "10.0.0.1",
            "169.254.169.254",
            "::ffff:127.0.0.1",
            "0.0.0.0",
            "::",
        ] {
            assert!(!allowed(s), "{s}");
        }
    }
}
