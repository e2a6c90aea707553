//! Capabilities: what a tool requires and what an agent (or `--caps`) grants.
//!
//! A capability is `NAME` or `NAME:SCOPE`. Application capabilities are plain names
//! (`database_read`); host capabilities (`net`, `fs.read`, `fs.write`, `env`, `store`) gate host
//! functions, and a scoped grant narrows the targets a call may touch.

use crate::error::HostError;
use std::fmt;

/// How a grant is used: silently, or after asking the person at the terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum GrantMode {
    /// Allowed without asking.
    Allow,
    /// Allowed after a yes at the terminal.
    Ask,
}

/// One capability, optionally scoped.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Capability {
    /// The capability name, e.g. `net` or `database_read`.
    pub name: String,
    /// The scope, e.g. `api.github.com` for `net:api.github.com`.
    pub scope: Option<String>,
}

impl Capability {
    /// Parses `NAME` or `NAME:SCOPE`.
    pub fn parse(text: &str) -> Result<Self, HostError> {
        let text = text.trim();
        let (name, scope) = match text.split_once(':') {
            Some((n, s)) => (n, Some(s)),
            None => (text, None),
        };
        let valid_name = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
        if !valid_name || scope.is_some_and(str::is_empty) {
            return Err(HostError::BadCapability(text.to_string()));
        }
        // A `net` scope names destinations; one that names nothing would silently refuse all.
        if name == "net"
            && let Some(Err(why)) = scope.map(crate::egress::NetScope::parse)
        {
            return Err(HostError::BadNetScope {
                cap: text.to_string(),
                why,
            });
        }
        Ok(Capability {
            name: name.to_string(),
            scope: scope.map(str::to_string),
        })
    }
}

impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.scope {
            Some(s) => write!(f, "{}:{}", self.name, s),
            None => f.write_str(&self.name),
        }
    }
}

/// A granted capability with its mode.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Grant {
    /// What is granted.
    pub cap: Capability,
    /// Whether using it needs approval.
    pub mode: GrantMode,
}

/// The set of capabilities held by an agent or a CLI call.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Grants {
    grants: Vec<Grant>,
}

impl Grants {
    /// Grants from capability strings, all in `allow` mode.
    pub fn parse<S: AsRef<str>>(caps: &[S]) -> Result<Self, HostError> {
        let mut g = Grants::default();
        for c in caps {
            g.add(Capability::parse(c.as_ref())?, GrantMode::Allow);
        }
        Ok(g)
    }

    /// Adds a grant, replacing an identical capability's mode.
    pub fn add(&mut self, cap: Capability, mode: GrantMode) {
        if let Some(existing) = self.grants.iter_mut().find(|g| g.cap == cap) {
            existing.mode = mode;
        } else {
            self.grants.push(Grant { cap, mode });
        }
    }

    /// Removes every grant whose `NAME[:SCOPE]` text equals `text`.
    pub fn remove(&mut self, text: &str) {
        self.grants.retain(|g| g.cap.to_string() != text);
    }

    /// Marks grants of these capability names as `ask`.
    pub fn mark_ask<S: AsRef<str>>(&mut self, names: &[S]) {
        for n in names {
            for g in self.grants.iter_mut() {
                if g.cap.name == n.as_ref() || g.cap.to_string() == n.as_ref() {
                    g.mode = GrantMode::Ask;
                }
            }
        }
    }

    /// All grants in order.
    pub fn iter(&self) -> impl Iterator<Item = &Grant> {
        self.grants.iter()
    }

    /// True when a tool's requirement (`NAME` or `NAME:SCOPE`) is covered by some grant.
    ///
    /// An unscoped requirement is covered by any grant of that name (the scope is then checked
    /// against each call's target); a scoped one needs an unscoped grant or the same scope.
    pub fn covers(&self, required: &Capability) -> bool {
        self.grants.iter().any(|g| {
            g.cap.name == required.name
                && match (&required.scope, &g.cap.scope) {
                    (None, _) | (_, None) => true,
                    (Some(r), Some(s)) => r == s || net_scope_covers(&required.name, s, r),
                }
        })
    }

    /// The requirements of `required` that no grant covers.
    pub fn missing<'a>(&self, required: &'a [Capability]) -> Vec<&'a Capability> {
        required.iter().filter(|r| !self.covers(r)).collect()
    }

    /// The grant that lets a call of capability `name` touch `target`, if any.
    ///
    /// `within` decides whether a target falls inside a scope (host, folder, name, namespace).
    pub fn grant_for(&self, name: &str, within: impl Fn(&str) -> bool) -> Option<&Grant> {
        self.grant_covering(name, |scope| scope.is_none_or(&within))
    }

    /// The first grant of capability `name` whose scope (`None`: unscoped) `covers` a call;
    /// for capabilities where an unscoped grant does not reach everything (`net`).
    pub fn grant_covering(
        &self,
        name: &str,
        covers: impl Fn(Option<&str>) -> bool,
    ) -> Option<&Grant> {
        self.grants
            .iter()
            .filter(|g| g.cap.name == name)
            .find(|g| covers(g.cap.scope.as_deref()))
    }

    /// Renders as `[a, b:c]`.
    pub fn list(&self) -> String {
        let names: Vec<String> = self.grants.iter().map(|g| g.cap.to_string()).collect();
        format!("[{}]", names.join(", "))
    }

    /// True when nothing is granted.
    pub fn is_empty(&self) -> bool {
        self.grants.is_empty()
    }
}

/// A `net` grant of scope `granted` serving a tool that declares `required` (a CIDR holding
/// the declared address, `private` for a local host, ...).
fn net_scope_covers(name: &str, granted: &str, required: &str) -> bool {
    use crate::egress::NetScope;
    name == "net"
        && matches!(
            (NetScope::parse(granted), NetScope::parse(required)),
            (Ok(g), Ok(r)) if g.covers(&r)
        )
}

/// Renders a list of capabilities as `[a, b]`.
pub fn list(caps: &[Capability]) -> String {
    let names: Vec<String> = caps.iter().map(|c| c.to_string()).collect();
    format!("[{}]", names.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cap(s: &str) -> Capability {
        Capability::parse(s).expect("valid capability")
    }

    #[test]
    fn scoped_grant_covers_unscoped_requirement_but_not_other_scope() {
        let g = Grants::parse(&["net:api.github.com", "db"]).expect("grants");
        assert!(g.covers(&cap("net")));
        assert!(g.covers(&cap("net:api.github.com")));
        assert!(!g.covers(&cap("net:example.com")));
        assert!(!g.covers(&cap("store")));
        assert!(g.grant_for("net", |s| s == "api.github.com").is_some());
        assert!(g.grant_for("net", |s| s == "evil.com").is_none());
    }

    #[test]
    fn bad_capabilities_are_rejected() {
        assert!(Capability::parse("").is_err());
        assert!(Capability::parse("net:").is_err());
        assert!(Capability::parse("a b").is_err());
        assert!(Capability::parse("net:10.0.0.0/40").is_err());
        assert!(Capability::parse("net:private").is_ok());
        let g = Grants::parse(&["net:127.0.0.0/8"]).expect("grants");
        assert!(g.covers(&cap("net:127.0.0.1:8080")));
        assert!(!g.covers(&cap("net:10.0.0.1")));
    }
}
