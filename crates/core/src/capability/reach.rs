//! What one scope of a capability reaches compared with another's: the rules the meet of grant
//! sets is built on. The gates in `script/` apply the same rules to each call's target, so a
//! grant the meet keeps never reaches more than every side it came from.
//!
//! Everything here works on a capability name and its scope text (`None`: unscoped), so it
//! depends on nothing of [`super::Grants`].

use super::host_cap::HostCap;
use kiln_egress::{AddrClass, NetScope, classify, needs_explicit_grant};
use std::collections::HashSet;
use std::net::IpAddr;
use std::sync::{OnceLock, RwLock};

/// How two scopes of one capability relate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Overlap {
    /// The first reaches all the second does (the second is the narrower).
    Holds,
    /// Each reaches something the other does not, and they share something: a call must fall
    /// inside both (only `net`, where a host name's addresses are known at each call).
    Partial,
    /// They share nothing (as far as can be decided before a call).
    Disjoint,
}

/// Whether a call inside scope `inner` is always inside `outer` (both of capability `name`).
///
/// An unscoped grant reaches exactly what it reaches at the gate: `net` public addresses only,
/// `env` no secret, every other capability everything. A scoped grant reaches what its scope
/// names: for `net` the hosts, addresses or blocks; for `fs.read`/`fs.write` a folder and what
/// is under it; for anything else that one scope.
pub fn holds(name: &str, outer: Option<&str>, inner: Option<&str>) -> bool {
    match (outer, inner) {
        (None, None) => true,
        (None, Some(i)) => match HostCap::of(name) {
            Some(HostCap::Net) => NetScope::parse(i).is_ok_and(|s| only_public(&s)),
            Some(HostCap::Env) => !is_secret_var(i),
            _ => true,
        },
        (Some(o), None) => is_fs(name) && fs_scope_is_everything(o),
        (Some(o), Some(i)) if o == i => true,
        (Some(o), Some(i)) => match HostCap::of(name) {
            Some(HostCap::Net) => match (NetScope::parse(o), NetScope::parse(i)) {
                (Ok(o), Ok(i)) => net_holds(&o, &i),
                _ => false,
            },
            _ if is_fs(name) => fs_scope_allows(o, i.trim_matches('/')),
            _ => false,
        },
    }
}

/// How scopes `a` and `b` of capability `name` relate (see [`Overlap`]).
pub fn overlap(name: &str, a: Option<&str>, b: Option<&str>) -> Overlap {
    if holds(name, a, b) {
        return Overlap::Holds;
    }
    if HostCap::Net.is(name) && !net_disjoint(a, b) {
        return Overlap::Partial;
    }
    Overlap::Disjoint
}

fn is_fs(name: &str) -> bool {
    matches!(HostCap::of(name), Some(HostCap::FsRead | HostCap::FsWrite))
}

/// Whether an `fs.read`/`fs.write` scope lets a call touch `inside` (a path relative to the
/// workspace, `/`-separated): the folder itself or anything under it; `.` is the whole workspace.
pub fn fs_scope_allows(scope: &str, inside: &str) -> bool {
    let scope = scope.trim_matches('/');
    fs_scope_is_everything(scope) || inside == scope || inside.starts_with(&format!("{scope}/"))
}

fn fs_scope_is_everything(scope: &str) -> bool {
    let scope = scope.trim_matches('/');
    scope.is_empty() || scope == "."
}

/// Whether every address a scope can reach is public (what an unscoped `net` reaches).
fn only_public(s: &NetScope) -> bool {
    match s {
        NetScope::Wildcard { .. } => true,
        NetScope::Ip { ip, .. } => classify(*ip) == AddrClass::Public,
        // A block with public ends may still hold private ranges inside: only a block of one
        // address is certain.
        NetScope::Cidr { base, prefix } => {
            let (first, last) = block_ends(*base, *prefix);
            first == last && classify(first) == AddrClass::Public
        }
        NetScope::Private | NetScope::Host { .. } => false,
    }
}

/// Whether a scope reaches no public address at all.
fn never_public(s: &NetScope) -> bool {
    match s {
        NetScope::Private => true,
        NetScope::Ip { ip, .. } => classify(*ip) != AddrClass::Public,
        NetScope::Cidr { base, prefix } => {
            let (first, last) = block_ends(*base, *prefix);
            classify(first) != AddrClass::Public && classify(first) == classify(last)
        }
        NetScope::Host { .. } | NetScope::Wildcard { .. } => false,
    }
}

/// `outer` reaches every (host, address) pair `inner` does.
fn net_holds(outer: &NetScope, inner: &NetScope) -> bool {
    let port_holds = |o: &Option<u16>, i: &Option<u16>| o.is_none() || o == i;
    match (outer, inner) {
        (NetScope::Private, NetScope::Ip { ip, .. }) => {
            classify(*ip) != AddrClass::Public && !needs_explicit_grant(*ip)
        }
        (NetScope::Private, NetScope::Cidr { .. }) => {
            never_public(inner) && {
                let (first, last) = cidr_ends(inner);
                !needs_explicit_grant(first) && !needs_explicit_grant(last)
            }
        }
        (NetScope::Cidr { base, prefix }, NetScope::Ip { ip, .. }) => in_block(*ip, *base, *prefix),
        (NetScope::Cidr { base, prefix }, NetScope::Cidr { base: b, prefix: p }) => {
            p >= prefix && in_block(*b, *base, *prefix)
        }
        (NetScope::Ip { ip, port }, NetScope::Ip { ip: i, port: p }) => {
            ip == i && port_holds(port, p)
        }
        (NetScope::Host { name, port }, NetScope::Host { name: n, port: p }) => {
            name == n && port_holds(port, p)
        }
        (NetScope::Wildcard { domain, port }, NetScope::Wildcard { domain: d, port: p }) => {
            (d == domain || d.ends_with(&format!(".{domain}"))) && port_holds(port, p)
        }
        _ => false,
    }
}

/// Scopes that can be told apart before any call: addresses outside each other, names that
/// differ, a public-only side against a never-public one.
fn net_disjoint(a: Option<&str>, b: Option<&str>) -> bool {
    let parse = |s: Option<&str>| s.map(NetScope::parse).transpose();
    let (Ok(a), Ok(b)) = (parse(a), parse(b)) else {
        return true;
    };
    match (&a, &b) {
        (None, None) => false,
        (None, Some(s)) | (Some(s), None) => never_public(s),
        (Some(a), Some(b)) => net_scopes_disjoint(a, b),
    }
}

fn net_scopes_disjoint(a: &NetScope, b: &NetScope) -> bool {
    use NetScope::*;
    let public_only = |s: &NetScope| matches!(s, Wildcard { .. }) || only_public(s);
    if (public_only(a) && never_public(b)) || (public_only(b) && never_public(a)) {
        return true;
    }
    match (a, b) {
        (Ip { ip, .. }, Ip { ip: i, .. }) => ip != i,
        (Host { name, .. }, Host { name: n, .. }) => name != n,
        // An address literal is never a host name, and a wildcard names only names.
        (Ip { .. }, Host { .. } | Wildcard { .. }) | (Host { .. } | Wildcard { .. }, Ip { .. }) => {
            true
        }
        (Cidr { base, prefix }, Ip { ip, .. }) | (Ip { ip, .. }, Cidr { base, prefix }) => {
            !in_block(*ip, *base, *prefix)
        }
        (Private, Ip { ip, .. }) | (Ip { ip, .. }, Private) => {
            classify(*ip) == AddrClass::Public || needs_explicit_grant(*ip)
        }
        (Wildcard { domain, .. }, Host { name, .. })
        | (Host { name, .. }, Wildcard { domain, .. }) => {
            name != domain && !name.ends_with(&format!(".{domain}"))
        }
        _ => false,
    }
}

fn cidr_ends(s: &NetScope) -> (IpAddr, IpAddr) {
    match s {
        NetScope::Cidr { base, prefix } => block_ends(*base, *prefix),
        _ => {
            let any = IpAddr::from([0, 0, 0, 0]);
            (any, any)
        }
    }
}

/// The first and last address of a block.
fn block_ends(base: IpAddr, prefix: u8) -> (IpAddr, IpAddr) {
    match base {
        IpAddr::V4(b) => {
            let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
            let first = u32::from(b) & mask;
            (
                IpAddr::from(first.to_be_bytes()),
                IpAddr::from((first | !mask).to_be_bytes()),
            )
        }
        IpAddr::V6(b) => {
            let mask = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
            let first = u128::from(b) & mask;
            (
                IpAddr::from(first.to_be_bytes()),
                IpAddr::from((first | !mask).to_be_bytes()),
            )
        }
    }
}

fn in_block(ip: IpAddr, base: IpAddr, prefix: u8) -> bool {
    let (first, last) = block_ends(base, prefix);
    match (ip, first, last) {
        (IpAddr::V4(a), IpAddr::V4(f), IpAddr::V4(l)) => a >= f && a <= l,
        (IpAddr::V6(a), IpAddr::V6(f), IpAddr::V6(l)) => a >= f && a <= l,
        _ => false,
    }
}

// ---------- secrets in the environment ----------

/// Provider keys and kiln's own credential variables, always secret.
pub const SECRET_VARS: &[&str] = &[
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "OPENROUTER_API_KEY",
    "OLLAMA_API_KEY",
    "KILN_TOKENS",
    "KILN_TOKEN",
    "KILN_MCP_TOKEN",
];

fn declared_secrets() -> &'static RwLock<HashSet<String>> {
    static DECLARED: OnceLock<RwLock<HashSet<String>>> = OnceLock::new();
    DECLARED.get_or_init(Default::default)
}

/// Marks an environment variable as holding a credential (a `--token-env` or `bearer_env`
/// name): from now on `env` reads it only through a grant that names it.
///
/// The set is process-wide because the environment is.
pub fn declare_secret_var(name: &str) {
    if let Ok(mut set) = declared_secrets().write() {
        set.insert(name.to_string());
    }
}

/// Whether an environment variable is a secret that an unscoped `env` grant does not reach:
/// the provider keys, kiln's credential variables and any declared with
/// [`declare_secret_var`], and the common secret names (`*_KEY`, `*_SECRET*`, `*_PASSWORD*`,
/// `*_TOKEN*`, `AWS_*`, `KILN_*`), compared without regard to case.
pub fn is_secret_var(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_VARS.contains(&upper.as_str())
        || upper.ends_with("_KEY")
        || upper == "KEY"
        || [
            "SECRET",
            "PASSWORD",
            "PASSWD",
            "TOKEN",
            "CREDENTIAL",
            "PRIVATE_KEY",
        ]
        .iter()
        .any(|w| upper.contains(w))
        || upper.starts_with("AWS_")
        || upper.starts_with("KILN_")
        || declared_secrets()
            .read()
            .is_ok_and(|set| set.contains(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unscoped_net_holds_public_scopes_only() {
        assert!(holds("net", None, Some("*.example.com")));
        assert!(holds("net", None, Some("93.184.216.34")));
        for s in [
            "127.0.0.1",
            "private",
            "169.254.169.254",
            "10.0.0.0/8",
            "db.internal",
        ] {
            assert!(!holds("net", None, Some(s)), "{s}");
        }
        assert_eq!(overlap("net", None, Some("127.0.0.1")), Overlap::Disjoint);
        assert_eq!(overlap("net", None, Some("private")), Overlap::Disjoint);
        assert_eq!(overlap("net", None, Some("10.0.0.0/8")), Overlap::Disjoint);
        assert_eq!(
            overlap("net", None, Some("api.example.com")),
            Overlap::Partial
        );
        assert_eq!(
            overlap("net", Some("private"), Some("10.1.0.0/16")),
            Overlap::Holds
        );
        assert_eq!(
            overlap("net", Some("private"), Some("169.254.0.0/16")),
            Overlap::Partial
        );
    }

    #[test]
    fn unscoped_env_holds_no_secret() {
        assert!(holds("env", None, Some("HOME")));
        for s in [
            "OPENAI_API_KEY",
            "KILN_TOKENS",
            "AWS_SECRET_ACCESS_KEY",
            "DB_PASSWORD",
            "GITHUB_TOKEN_FILE",
            "aws_region",
            "MY_CLIENT_SECRET_X",
        ] {
            assert!(is_secret_var(s), "{s}");
            assert_eq!(overlap("env", None, Some(s)), Overlap::Disjoint, "{s}");
        }
        declare_secret_var("UPSTREAM_BEARER");
        assert!(is_secret_var("UPSTREAM_BEARER"));
        assert!(!is_secret_var("HOME"));
    }

    #[test]
    fn folders_hold_what_is_under_them() {
        assert!(holds("fs.read", None, Some("docs")));
        assert!(holds("fs.read", Some("docs"), Some("docs/a")));
        assert!(!holds("fs.read", Some("docs"), Some("docsx")));
        assert!(!holds("fs.read", Some("docs"), None));
        assert!(holds("fs.read", Some("."), None));
        assert!(!holds("store", Some("a"), None));
        assert!(holds("store", None, Some("a")));
    }
}
