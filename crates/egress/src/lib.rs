//! Egress: what `net` reaches. One classifier for every address a gated function is about to
//! connect to, the `net` scopes that name destinations, and the rule deciding whether a grant
//! covers an address. Connections are checked twice: before the call (to refuse or ask early)
//! and again by [`resolver::CheckedResolver`] at connect time, on the addresses actually dialled.
//!
//! May depend on: nothing of kiln.

#![warn(missing_docs)]

mod describe;
pub mod resolver;
pub mod tls;
pub use describe::describe;

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The kind of destination an address is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddrClass {
    /// Routable on the internet: what an unscoped `net` grant reaches.
    Public,
    /// 127.0.0.0/8, ::1: this machine.
    Loopback,
    /// 0.0.0.0/8, ::: "this host" (Linux connects 0.0.0.0 to itself).
    Unspecified,
    /// 10/8, 172.16/12, 192.168/16, fc00::/7 (and the retired fec0::/10).
    Private,
    /// 169.254/16, fe80::/10: where cloud metadata services live.
    LinkLocal,
    /// 100.64/10, carrier-grade NAT.
    Shared,
    /// 224/4, ff00::/8.
    Multicast,
    /// 255.255.255.255.
    Broadcast,
    /// Other special-purpose ranges: documentation, benchmarking, 240/4, outside 2000::/3.
    Reserved,
}

impl AddrClass {
    /// The name used in refusals (`loopback`, `link-local`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            AddrClass::Public => "public",
            AddrClass::Loopback => "loopback",
            AddrClass::Unspecified => "unspecified",
            AddrClass::Private => "private",
            AddrClass::LinkLocal => "link-local",
            AddrClass::Shared => "shared (CGNAT)",
            AddrClass::Multicast => "multicast",
            AddrClass::Broadcast => "broadcast",
            AddrClass::Reserved => "reserved",
        }
    }
}

impl fmt::Display for AddrClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Classifies an address; IPv6 forms carrying an IPv4 address are classified by what they carry.
pub fn classify(ip: IpAddr) -> AddrClass {
    match ip {
        IpAddr::V4(a) => classify_v4(a),
        IpAddr::V6(a) => classify_v6(a),
    }
}

fn classify_v4(a: Ipv4Addr) -> AddrClass {
    use AddrClass::*;
    match a.octets() {
        [0, ..] => Unspecified,
        [127, ..] => Loopback,
        [10, ..] | [192, 168, ..] => Private,
        [172, b, ..] if (16..=31).contains(&b) => Private,
        [169, 254, ..] => LinkLocal,
        [100, b, ..] if (64..=127).contains(&b) => Shared,
        [255, 255, 255, 255] => Broadcast,
        [224..=239, ..] => Multicast,
        [240..=255, ..]
        | [192, 0, 0, _]
        | [192, 0, 2, _]
        | [198, 18..=19, ..]
        | [198, 51, 100, _]
        | [203, 0, 113, _] => Reserved,
        _ => Public,
    }
}

fn classify_v6(a: Ipv6Addr) -> AddrClass {
    use AddrClass::*;
    if a.is_unspecified() {
        return Unspecified;
    }
    if a.is_loopback() {
        return Loopback;
    }
    if let Some(v4) = embedded_v4(a) {
        return classify_v4(v4);
    }
    let s = a.segments();
    match s[0] {
        x if x & 0xff00 == 0xff00 => Multicast,
        x if x & 0xffc0 == 0xfe80 => LinkLocal,
        x if x & 0xfe00 == 0xfc00 || x & 0xffc0 == 0xfec0 => Private,
        0x2001 if s[1] == 0x0db8 || s[1] == 0 => Reserved,
        x if x & 0xe000 != 0x2000 => Reserved,
        _ => Public,
    }
}

/// The IPv4 address an IPv6 form carries: IPv4-mapped, IPv4-compatible, NAT64 (64:ff9b::/96)
/// and 6to4 (2002::/16).
fn embedded_v4(a: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = a.segments();
    let tail = |hi: u16, lo: u16| Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
    match s {
        [0, 0, 0, 0, 0, 0xffff, hi, lo] | [0, 0, 0, 0, 0, 0, hi, lo] => Some(tail(hi, lo)),
        [0x64, 0xff9b, 0, 0, 0, 0, hi, lo] => Some(tail(hi, lo)),
        [0x2002, hi, lo, ..] => Some(tail(hi, lo)),
        _ => None,
    }
}

/// Cloud metadata addresses outside the link-local ranges (Alibaba, AWS over IPv6).
const METADATA: &[IpAddr] = &[
    IpAddr::V4(Ipv4Addr::new(100, 100, 100, 200)),
    IpAddr::V6(Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254)),
    IpAddr::V6(Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x23)),
];

/// True for addresses only an explicit IP or CIDR grant reaches: link-local (which holds the
/// cloud metadata services) and the known metadata addresses elsewhere.
pub fn needs_explicit_grant(ip: IpAddr) -> bool {
    let carried = match ip {
        IpAddr::V6(a) => embedded_v4(a).map_or(ip, IpAddr::V4),
        v4 => v4,
    };
    classify(ip) == AddrClass::LinkLocal || METADATA.contains(&ip) || METADATA.contains(&carried)
}

/// A host as a URL names it, after normalisation (`2130706433` is `127.0.0.1`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NetHost {
    /// An address literal.
    Ip(IpAddr),
    /// A domain name, lowercase.
    Name(String),
}

impl fmt::Display for NetHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NetHost::Ip(IpAddr::V6(a)) => write!(f, "[{a}]"),
            NetHost::Ip(a) => write!(f, "{a}"),
            NetHost::Name(n) => f.write_str(n),
        }
    }
}

impl NetHost {
    /// Parses a host the way a URL parser does (numeric IPv4 forms, brackets, case).
    pub fn parse(text: &str) -> Option<NetHost> {
        let url = reqwest::Url::parse(&format!("http://{text}/")).ok()?;
        if url.port().is_some() || url.path() != "/" || !url.username().is_empty() {
            return None;
        }
        Self::of_url(&url)
    }

    /// The normalised host of a URL.
    pub fn of_url(url: &reqwest::Url) -> Option<NetHost> {
        let host = url.host_str()?;
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        Some(match bare.parse::<IpAddr>() {
            Ok(ip) => NetHost::Ip(ip),
            Err(_) => NetHost::Name(host.to_ascii_lowercase()),
        })
    }
}

/// Where a request goes: the normalised host and the port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The host.
    pub host: NetHost,
    /// The port (the scheme's default when the URL gives none).
    pub port: u16,
}

impl Target {
    /// The target of an http(s) URL.
    pub fn of_url(url: &reqwest::Url) -> Option<Target> {
        Some(Target {
            host: NetHost::of_url(url)?,
            port: url.port_or_known_default()?,
        })
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.host, self.port)
    }
}

/// The scope of a `net:SCOPE` grant or declaration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NetScope {
    /// `net:private`: every non-public address but link-local and metadata ones, any host.
    Private,
    /// `net:10.0.0.0/8`: addresses inside the block, any host.
    Cidr {
        /// The block's first address.
        base: IpAddr,
        /// The prefix length.
        prefix: u8,
    },
    /// `net:127.0.0.1`, `net:[::1]:8080`: that address literal, whatever its class.
    Ip {
        /// The address.
        ip: IpAddr,
        /// Only this port, if given.
        port: Option<u16>,
    },
    /// `net:db.internal`, `net:localhost:8080`: that name, whatever it resolves to except
    /// link-local and metadata addresses.
    Host {
        /// The name, lowercase.
        name: String,
        /// Only this port, if given.
        port: Option<u16>,
    },
    /// `net:*.example.com`: the domain and its subdomains, public addresses only (a wildcard
    /// does not name a host, so it does not open local ones).
    Wildcard {
        /// The domain, lowercase.
        domain: String,
        /// Only this port, if given.
        port: Option<u16>,
    },
}

impl NetScope {
    /// Parses a scope; the error says what is wrong with it.
    pub fn parse(text: &str) -> Result<NetScope, String> {
        if text == "private" {
            return Ok(NetScope::Private);
        }
        if let Some((addr, prefix)) = text.split_once('/') {
            let base: IpAddr = addr
                .parse()
                .map_err(|_| format!("`{addr}` is not an IP address (in CIDR `{text}`)"))?;
            let max = if base.is_ipv4() { 32 } else { 128 };
            let prefix: u8 = prefix
                .parse()
                .ok()
                .filter(|p| *p <= max)
                .ok_or_else(|| format!("`/{prefix}` is not a prefix length 0..={max}"))?;
            return Ok(NetScope::Cidr { base, prefix });
        }
        let (host, port) = split_port(text)?;
        if let Some(domain) = host.strip_prefix("*.") {
            return match NetHost::parse(domain) {
                Some(NetHost::Name(domain)) => Ok(NetScope::Wildcard { domain, port }),
                _ => Err(format!("`{text}` is not a domain wildcard")),
            };
        }
        match NetHost::parse(host) {
            Some(NetHost::Ip(ip)) => Ok(NetScope::Ip { ip, port }),
            Some(NetHost::Name(name)) => Ok(NetScope::Host { name, port }),
            None => Err(format!(
                "`{text}` is not a host, address, CIDR block or `private`"
            )),
        }
    }

    /// Whether the scope names the target's host and port (before any address is known).
    pub fn names(&self, t: &Target) -> bool {
        let port_ok = |p: &Option<u16>| p.is_none_or(|p| p == t.port);
        match (self, &t.host) {
            (NetScope::Private | NetScope::Cidr { .. }, _) => true,
            (NetScope::Ip { ip, port }, NetHost::Ip(h)) => ip == h && port_ok(port),
            (NetScope::Host { name, port }, NetHost::Name(h)) => name == h && port_ok(port),
            (NetScope::Wildcard { domain, port }, NetHost::Name(h)) => {
                (h == domain || h.ends_with(&format!(".{domain}"))) && port_ok(port)
            }
            _ => false,
        }
    }

    /// Whether the scope lets a request for `t` connect to `ip`.
    pub fn allows(&self, t: &Target, ip: IpAddr) -> bool {
        self.names(t)
            && match self {
                NetScope::Private => classify(ip) != AddrClass::Public && !needs_explicit_grant(ip),
                NetScope::Cidr { base, prefix } => in_block(ip, *base, *prefix),
                NetScope::Ip { ip: want, .. } => ip == *want,
                NetScope::Host { .. } => !needs_explicit_grant(ip),
                NetScope::Wildcard { .. } => classify(ip) == AddrClass::Public,
            }
    }
}

impl NetScope {
    /// Whether a grant of this scope can serve a tool declaring `required`: the same scope, or
    /// an address scope (`private`, a CIDR) that takes in the declared address, or any host
    /// (whose addresses are checked at each call).
    pub fn covers(&self, required: &NetScope) -> bool {
        if self == required {
            return true;
        }
        match (self, required) {
            (NetScope::Private, NetScope::Ip { ip, .. }) => {
                classify(*ip) != AddrClass::Public && !needs_explicit_grant(*ip)
            }
            (NetScope::Cidr { base, prefix }, NetScope::Ip { ip, .. }) => {
                in_block(*ip, *base, *prefix)
            }
            (NetScope::Cidr { base, prefix }, NetScope::Cidr { base: b, prefix: p }) => {
                p >= prefix && in_block(*b, *base, *prefix)
            }
            (
                NetScope::Private | NetScope::Cidr { .. },
                NetScope::Host { .. } | NetScope::Wildcard { .. },
            ) => true,
            _ => false,
        }
    }
}

/// Splits `host:port` / `[v6]:port`; a bare IPv6 address has no port.
fn split_port(text: &str) -> Result<(&str, Option<u16>), String> {
    let port_of = |p: &str| {
        p.parse::<u16>()
            .map(Some)
            .map_err(|_| format!("`{p}` is not a port (in `{text}`)"))
    };
    if let Some(rest) = text.strip_prefix('[') {
        let (inner, after) = rest
            .split_once(']')
            .ok_or_else(|| format!("`{text}` has an unclosed `[`"))?;
        return match after.strip_prefix(':') {
            Some(p) => Ok((&text[..inner.len() + 2], port_of(p)?)),
            None if after.is_empty() => Ok((text, None)),
            None => Err(format!("`{text}` is not a host")),
        };
    }
    match text.matches(':').count() {
        0 => Ok((text, None)),
        1 => {
            let (h, p) = text.split_once(':').unwrap_or((text, ""));
            Ok((h, port_of(p)?))
        }
        _ => Ok((text, None)),
    }
}

fn in_block(ip: IpAddr, base: IpAddr, prefix: u8) -> bool {
    match (ip, base) {
        (IpAddr::V4(a), IpAddr::V4(b)) => {
            let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
            u32::from(a) & mask == u32::from(b) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(b)) => {
            let mask = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
            u128::from(a) & mask == u128::from(b) & mask
        }
        _ => false,
    }
}

/// Whether a grant or declaration of `net` with this scope (`None`: unscoped) lets a request
/// for `t` connect to `ip`. Unscoped means public addresses only.
pub fn scope_allows(scope: Option<&str>, t: &Target, ip: IpAddr) -> bool {
    match scope {
        None => classify(ip) == AddrClass::Public,
        Some(s) => NetScope::parse(s).is_ok_and(|s| s.allows(t, ip)),
    }
}

/// Whether a scope (`None`: unscoped) names the target's host, so resolving it is allowed.
pub fn scope_names(scope: Option<&str>, t: &Target) -> bool {
    scope.is_none_or(|s| NetScope::parse(s).is_ok_and(|s| s.names(t)))
}

/// The grants that would allow a request for `t` to reach `ip`, for a refusal to suggest.
pub fn suggested_grants(t: &Target, ip: IpAddr) -> String {
    if classify(ip) == AddrClass::Public {
        return format!("net or net:{}", t.host);
    }
    let exact = match &t.host {
        NetHost::Ip(_) => format!("net:{t}"),
        NetHost::Name(_) if needs_explicit_grant(ip) => format!("net:{}", NetHost::Ip(ip)),
        NetHost::Name(_) => format!("net:{t}"),
    };
    if needs_explicit_grant(ip) {
        format!("{exact} (link-local and cloud metadata addresses need an explicit IP grant)")
    } else {
        format!("{exact} or net:private")
    }
}

/// Why an address was refused: the address, its class and what would allow it.
#[derive(Debug, Clone)]
pub struct Refusal {
    /// The host and port asked for.
    pub target: Target,
    /// The refused address.
    pub ip: IpAddr,
    /// Its class.
    pub class: AddrClass,
    /// The grants that would allow it.
    pub hint: String,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (ip, class, hint) = (self.ip, self.class, &self.hint);
        match &self.target.host {
            NetHost::Ip(_) => write!(f, "{ip} is a {class} address outside the grant; {hint}"),
            NetHost::Name(_) => write!(
                f,
                "{} resolved to {ip}, a {class} address outside the grant; {hint}",
                self.target
            ),
        }
    }
}

impl std::error::Error for Refusal {}

impl Refusal {
    /// The refusal of `ip` for `t`.
    pub fn new(t: &Target, ip: IpAddr) -> Refusal {
        Refusal {
            target: t.clone(),
            ip,
            class: classify(ip),
            hint: format!("it needs a grant of {}", suggested_grants(t, ip)),
        }
    }
}

/// The scopes a request must satisfy at every hop: the tool's own `net` declarations (one
/// must allow) and the caller's grant used for the request.
#[derive(Debug, Clone)]
pub struct NetRule {
    /// Scopes of the tool's `net` declarations (`None`: unscoped, which sets no ceiling).
    pub declared: Vec<Option<String>>,
    /// Scopes of the caller's grant used for the request (`None`: unscoped, public addresses
    /// only); every one must allow each address (a grant a meet bounded has several).
    pub granted: Vec<Option<String>>,
}

impl NetRule {
    /// Checks every address; the first refused one is the error.
    pub fn check(&self, t: &Target, addrs: &[IpAddr]) -> Result<(), Refusal> {
        for &ip in addrs {
            let declared = self
                .declared
                .iter()
                .any(|d| d.is_none() || scope_allows(d.as_deref(), t, ip));
            if !declared {
                let scopes: Vec<String> = self
                    .declared
                    .iter()
                    .flatten()
                    .map(|s| format!("net:{s}"))
                    .collect();
                return Err(Refusal {
                    hint: format!("the tool declares only {}", scopes.join(", ")),
                    ..Refusal::new(t, ip)
                });
            }
            if !self
                .granted
                .iter()
                .all(|g| scope_allows(g.as_deref(), t, ip))
            {
                return Err(Refusal::new(t, ip));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
