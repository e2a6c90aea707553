//! Name resolution for gated functions: a replaceable resolver (tests and `--resolve` map names
//! to loopback), and the HTTP client's resolver that checks every address at connect time, so
//! the connection goes only to addresses that passed the check (no DNS rebinding).

use super::{NetRule, Target};
use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;

/// A pending lookup.
pub type Lookup = Pin<Box<dyn Future<Output = io::Result<Vec<IpAddr>>> + Send>>;

/// Turns a host name into addresses.
pub trait NameResolver: Send + Sync {
    /// The addresses of `name`.
    fn lookup(&self, name: &str) -> Lookup;
}

/// The operating system's resolver.
pub struct SystemResolver;

impl NameResolver for SystemResolver {
    fn lookup(&self, name: &str) -> Lookup {
        let name = name.to_string();
        Box::pin(async move {
            let addrs = tokio::net::lookup_host((name.as_str(), 0)).await?;
            Ok(addrs.map(|a| a.ip()).collect())
        })
    }
}

/// Fixed answers for some names (`--resolve NAME:ADDR`, like curl's), the rest from `fallback`.
pub struct Overrides {
    map: HashMap<String, Vec<IpAddr>>,
    fallback: Arc<dyn NameResolver>,
}

impl Overrides {
    /// Parses `NAME:ADDR` entries (`ADDR` may be a bracketed IPv6 address); repeated names
    /// collect several addresses.
    pub fn parse<S: AsRef<str>>(
        entries: &[S],
        fallback: Arc<dyn NameResolver>,
    ) -> Result<Overrides, String> {
        let mut map: HashMap<String, Vec<IpAddr>> = HashMap::new();
        for e in entries {
            let (name, ip) = parse_entry(e.as_ref()).map_err(|why| format!("--resolve {why}"))?;
            map.entry(name).or_default().push(ip);
        }
        Ok(Overrides { map, fallback })
    }
}

/// One `NAME:ADDR` entry: the name in lower case and the address (`ADDR` may be a bracketed
/// IPv6 address). The error quotes the entry and says what is wrong with it.
pub fn parse_entry(entry: &str) -> Result<(String, IpAddr), String> {
    let (name, addr) = entry
        .split_once(':')
        .filter(|(name, _)| !name.is_empty())
        .ok_or_else(|| format!("`{entry}`: expected NAME:ADDR"))?;
    let ip: IpAddr = addr
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse()
        .map_err(|_| format!("`{entry}`: `{addr}` is not an IP address"))?;
    Ok((name.to_ascii_lowercase(), ip))
}

impl Overrides {
    /// These names (lower case) answered with their addresses, the rest from `fallback`.
    pub fn new(map: HashMap<String, Vec<IpAddr>>, fallback: Arc<dyn NameResolver>) -> Overrides {
        Overrides { map, fallback }
    }
}

impl NameResolver for Overrides {
    fn lookup(&self, name: &str) -> Lookup {
        match self.map.get(&name.to_ascii_lowercase()) {
            Some(addrs) => {
                let addrs = addrs.clone();
                Box::pin(async move { Ok(addrs) })
            }
            None => self.fallback.lookup(name),
        }
    }
}

/// The HTTP client's resolver for one request hop: resolves the hop's host only, checks every
/// address against the rule, and hands the client nothing else.
pub struct CheckedResolver {
    /// The hop's host and port.
    pub target: Target,
    /// What the addresses must satisfy.
    pub rule: NetRule,
    /// Where names are looked up.
    pub resolver: Arc<dyn NameResolver>,
}

impl reqwest::dns::Resolve for CheckedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let asked = name.as_str().to_ascii_lowercase();
        let target = self.target.clone();
        let rule = self.rule.clone();
        let lookup = self.resolver.lookup(&asked);
        Box::pin(async move {
            if target.host != super::NetHost::Name(asked.clone()) {
                let msg = format!("refused to resolve `{asked}`: the request is for {target}");
                return Err(io::Error::new(io::ErrorKind::PermissionDenied, msg).into());
            }
            let addrs = lookup.await?;
            if addrs.is_empty() {
                return Err(io::Error::new(io::ErrorKind::NotFound, "no addresses").into());
            }
            rule.check(&target, &addrs)?;
            let checked: Vec<SocketAddr> =
                addrs.into_iter().map(|ip| SocketAddr::new(ip, 0)).collect();
            Ok(Box::new(checked.into_iter()) as reqwest::dns::Addrs)
        })
    }
}
