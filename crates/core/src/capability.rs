//! Capabilities: what a tool requires and what an agent (or `--caps`) grants.
//!
//! A capability is `NAME` or `NAME:SCOPE`. Application capabilities are plain names
//! (`database_read`); host capabilities (`net`, `fs.read`, `fs.write`, `env`, `store`) gate host
//! functions, and a scoped grant narrows the targets a call may touch.

use crate::error::HostError;
use std::fmt;

mod host_cap;
mod reach;
pub use host_cap::HostCap;
pub use reach::{Overlap, declare_secret_var, fs_scope_allows, is_secret_var};

/// How a grant is used: silently, or after asking the person at the terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
pub enum GrantMode {
    /// Allowed without asking.
    Allow,
    /// Allowed once a person approves (`--needs-approval`, `.needs_approval([...])`); written
    /// `Ask` where it is serialized, as before.
    #[serde(rename = "Ask")]
    NeedsApproval,
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
        if HostCap::Net.is(name)
            && let Some(Err(why)) = scope.map(kiln_egress::NetScope::parse)
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
    /// Scopes (`None`: unscoped) a call must also fall inside: what is left of the other sides
    /// of a meet where neither scope held the other (only `net`, whose host names are resolved
    /// at each call). Empty for every grant that was parsed or added.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub also: Vec<Option<String>>,
}

impl Grant {
    /// Every scope a call must fall inside: the grant's own, then [`Grant::also`].
    pub fn scopes(&self) -> impl Iterator<Item = Option<&str>> {
        std::iter::once(self.cap.scope.as_deref()).chain(self.also.iter().map(Option::as_deref))
    }

    /// Whether every call this grant allows, `other` allows too (same capability, its scope
    /// holding each of this grant's).
    fn within(&self, other: &Grant) -> bool {
        let name = self.cap.name.as_str();
        other.cap.name == name
            && other
                .scopes()
                .all(|o| self.scopes().any(|s| reach::holds(name, o, s)))
    }
}

impl fmt::Display for Grant {
    /// `net:api.example.com`, or `net:api.example.com within net` for a grant a meet bounded.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.cap)?;
        for (i, s) in self.also.iter().enumerate() {
            let sep = if i == 0 { " within " } else { " and " };
            match s {
                Some(s) => write!(f, "{sep}{}:{s}", self.cap.name)?,
                None => write!(f, "{sep}{}", self.cap.name)?,
            }
        }
        Ok(())
    }
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
        if let Some(existing) = self
            .grants
            .iter_mut()
            .find(|g| g.cap == cap && g.also.is_empty())
        {
            existing.mode = mode;
        } else {
            self.grants.push(Grant {
                cap,
                mode,
                also: Vec::new(),
            });
        }
    }

    /// The grants that reach only what both `self` and `other` reach: for each pair of grants
    /// of one capability, the narrower scope where one holds the other, both where they only
    /// overlap (`net`), nothing where they share nothing. `ask` wins over `allow`.
    ///
    /// This is the one rule for narrowing: an unscoped grant on one side reaches exactly what it
    /// reaches at the gate (`net` public addresses, `env` no secrets), so it never lets a
    /// narrower-looking scope on the other side reach more.
    pub fn meet(&self, other: &Grants) -> Grants {
        let mut out = Grants::default();
        for a in &self.grants {
            for b in other.grants.iter().filter(|b| b.cap.name == a.cap.name) {
                let mode = a.mode.max(b.mode);
                let met = if a.within(b) {
                    Some(Grant { mode, ..a.clone() })
                } else if b.within(a) {
                    Some(Grant { mode, ..b.clone() })
                } else if a.scopes().all(|x| {
                    b.scopes()
                        .all(|y| reach::overlap(&a.cap.name, x, y) != Overlap::Disjoint)
                }) {
                    // The scoped side leads, so the grant reads as what it names.
                    let (lead, rest) = if a.cap.scope.is_none() {
                        (b, a)
                    } else {
                        (a, b)
                    };
                    let mut g = Grant {
                        mode,
                        ..lead.clone()
                    };
                    for s in rest.scopes() {
                        if !g.scopes().any(|have| have == s) {
                            g.also.push(s.map(str::to_string));
                        }
                    }
                    Some(g)
                } else {
                    None
                };
                if let Some(g) = met {
                    out.push_meet(g);
                }
            }
        }
        out
    }

    /// Adds a grant of a meet: one already there that holds the same calls keeps the stricter
    /// mode instead of a second copy.
    fn push_meet(&mut self, g: Grant) {
        match self
            .grants
            .iter_mut()
            .find(|e| e.cap == g.cap && e.also == g.also)
        {
            Some(e) => e.mode = e.mode.max(g.mode),
            None => self.grants.push(g),
        }
    }

    /// The grants a run or call gets from every side that has a say: the agent's own (if the
    /// call is an agent's), each door's ceiling (`--caps`, a token's caps) and what the request
    /// asks. Their [`Grants::meet`]; `None` sides have no say. Every door computes a call's
    /// grants with this one function, so a request can only narrow.
    pub fn effective(sides: &[Option<&Grants>]) -> Grants {
        let mut present = sides.iter().flatten();
        let Some(first) = present.next() else {
            return Grants::default();
        };
        present.fold((*first).clone(), |acc, side| acc.meet(side))
    }

    /// The first grant of `self` that asks for more than `ceiling` holds, if any: what a door
    /// refuses a request for (a request's caps beyond its token's). A grant some ceiling grant
    /// holds is within; so is a scoped one that shares calls with the ceiling (the meet then
    /// cuts it, as a `net` host name under an unscoped `net` is kept to public addresses); an
    /// unscoped one the ceiling only scopes, or one sharing nothing with it, is beyond.
    pub fn beyond<'a>(&'a self, ceiling: &Grants) -> Option<&'a Grant> {
        self.grants.iter().find(|g| {
            let held = ceiling.grants.iter().any(|c| g.within(c));
            let shares = || {
                !Grants {
                    grants: vec![(*g).clone()],
                }
                .meet(ceiling)
                .is_empty()
            };
            !held && (g.cap.scope.is_none() || !shares())
        })
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
                    g.mode = GrantMode::NeedsApproval;
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
        self.grants.iter().any(|g| grant_covers(g, required))
    }

    /// The needs-approval grants a tool with requirements `required` relies on, one per
    /// capability: a requirement covered by a needs-approval grant needs a person's yes before
    /// each call (a needs-approval grant wins over an `allow` one covering the same
    /// requirement, as for a call's target).
    pub fn asking_for<'a>(&'a self, required: &[Capability]) -> Vec<&'a Grant> {
        let mut asking: Vec<&Grant> = Vec::new();
        for need in required {
            let ask = self
                .grants
                .iter()
                .find(|g| g.mode == GrantMode::NeedsApproval && grant_covers(g, need));
            if let Some(g) = ask
                && asking.iter().all(|a| a.cap.name != g.cap.name)
            {
                asking.push(g);
            }
        }
        asking
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

    /// The grant of capability `name` whose scopes (`None`: unscoped) all `cover` a call; an
    /// needs-approval grant wins over an `allow` one covering the same call.
    pub fn grant_covering(
        &self,
        name: &str,
        covers: impl Fn(Option<&str>) -> bool,
    ) -> Option<&Grant> {
        let mut covering = self
            .grants
            .iter()
            .filter(|g| g.cap.name == name && g.scopes().all(&covers));
        let first = covering.next()?;
        Some(
            std::iter::once(first)
                .chain(covering)
                .find(|g| g.mode == GrantMode::NeedsApproval)
                .unwrap_or(first),
        )
    }

    /// Renders as `[a, b:c]`.
    pub fn list(&self) -> String {
        let names: Vec<String> = self.grants.iter().map(Grant::to_string).collect();
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
    use kiln_egress::NetScope;
    HostCap::Net.is(name)
        && matches!(
            (NetScope::parse(granted), NetScope::parse(required)),
            (Ok(g), Ok(r)) if g.covers(&r)
        )
}

/// Whether grant `g` covers a tool's requirement (see [`Grants::covers`]).
fn grant_covers(g: &Grant, required: &Capability) -> bool {
    g.cap.name == required.name
        && g.scopes().all(|s| match (&required.scope, s) {
            (None, _) | (_, None) => true,
            (Some(r), Some(s)) => r == s || net_scope_covers(&required.name, s, r),
        })
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
    fn an_agents_scopes_beyond_an_unscoped_ceiling_do_not_survive_it() {
        let agent =
            Grants::parse(&["net:private", "env:OPENAI_API_KEY", "env:HOME"]).expect("agent");
        let door = Grants::parse(&["net", "env"]).expect("door");
        assert_eq!(
            Grants::effective(&[Some(&agent), Some(&door)]).list(),
            "[env:HOME]"
        );
        let mut asking = Grants::parse(&["fs.write"]).expect("door");
        asking.mark_ask(&["fs.write"]);
        let agent = Grants::parse(&["fs.write:out"]).expect("agent");
        let met = Grants::effective(&[Some(&agent), Some(&asking)]);
        assert_eq!(met.list(), "[fs.write:out]");
        assert!(met.iter().all(|g| g.mode == GrantMode::NeedsApproval));
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
