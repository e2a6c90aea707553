//! Property tests of the meet: over random grant sets of every kind of scope, the effective
//! grants allow only what every side allows, allow all that every side allows, and ask
//! wherever any side asks. The model of "allows" is the gates' own rule per capability.

use kiln_core::capability::{GrantMode, Grants, fs_scope_allows, is_secret_var};
use kiln_egress::{NetHost, Target, scope_allows};
use proptest::prelude::*;
use std::net::IpAddr;

/// One call a gate decides: the capability and what it touches.
#[derive(Debug, Clone)]
enum Call {
    Net(Target, IpAddr),
    Named(&'static str, String),
}

const NET_SCOPES: &[&str] = &[
    "127.0.0.1",
    "127.0.0.1:8080",
    "10.0.0.0/8",
    "private",
    "169.254.169.254",
    "api.example.com",
    "api.example.com:443",
    "db.internal",
    "*.example.com",
    "93.184.216.34",
    "93.184.216.0/24",
    "0.0.0.0/0",
];
const ENV_SCOPES: &[&str] = &["HOME", "OPENAI_API_KEY", "KILN_TOKENS", "DB_PASSWORD"];
const FS_SCOPES: &[&str] = &["docs", "docs/a", "out", "."];
const STORE_SCOPES: &[&str] = &["cache", "notes"];

fn grant_text() -> impl Strategy<Value = String> {
    let scoped = |name: &'static str, scopes: &'static [&'static str]| {
        prop::sample::select(scopes).prop_map(move |s| format!("{name}:{s}"))
    };
    prop_oneof![
        prop::sample::select(&["net", "env", "fs.read", "store", "db"][..]).prop_map(String::from),
        scoped("net", NET_SCOPES),
        scoped("env", ENV_SCOPES),
        scoped("fs.read", FS_SCOPES),
        scoped("store", STORE_SCOPES),
        scoped("db", &["x", "y"]),
    ]
}

fn grants() -> impl Strategy<Value = Grants> {
    (
        prop::collection::vec(grant_text(), 0..5),
        prop::collection::vec(
            prop::sample::select(&["net", "env", "fs.read", "store", "db"][..]),
            0..2,
        ),
    )
        .prop_map(|(caps, ask)| {
            let mut g = Grants::parse(&caps).expect("valid caps");
            g.mark_ask(&ask);
            g
        })
}

fn calls() -> Vec<Call> {
    let ip = |s: &str| s.parse::<IpAddr>().expect("ip");
    let mut calls = Vec::new();
    let addrs = ["127.0.0.1", "10.1.2.3", "93.184.216.34", "169.254.169.254"];
    for port in [443, 8080] {
        for a in addrs {
            let t = Target {
                host: NetHost::Ip(ip(a)),
                port,
            };
            calls.push(Call::Net(t, ip(a)));
        }
        for name in [
            "api.example.com",
            "db.internal",
            "x.example.com",
            "evil.test",
        ] {
            for a in addrs {
                let t = Target {
                    host: NetHost::Name(name.into()),
                    port,
                };
                calls.push(Call::Net(t, ip(a)));
            }
        }
    }
    for v in [
        "HOME",
        "OPENAI_API_KEY",
        "KILN_TOKENS",
        "DB_PASSWORD",
        "PATH",
    ] {
        calls.push(Call::Named("env", v.into()));
    }
    for p in ["docs/x.md", "docs/a/y.md", "out/z", "secret/key.txt"] {
        calls.push(Call::Named("fs.read", p.into()));
    }
    for ns in ["cache", "notes", "other"] {
        calls.push(Call::Named("store", ns.into()));
    }
    for s in ["x", "y", "z"] {
        calls.push(Call::Named("db", s.into()));
    }
    calls
}

/// Whether one scope (`None`: unscoped) lets the call through, as the gates decide it.
fn scope_lets(name: &str, scope: Option<&str>, call: &Call) -> bool {
    match (call, scope) {
        (Call::Net(t, ip), s) => scope_allows(s, t, *ip),
        (Call::Named("env", v), None) => !is_secret_var(v),
        (Call::Named(_, _), None) => true,
        (Call::Named(_, t), Some(s)) if name.starts_with("fs.") => fs_scope_allows(s, t),
        (Call::Named(_, t), Some(s)) => s == t,
    }
}

/// The gate's decision: no grant, allowed, or allowed after asking.
fn decide(g: &Grants, call: &Call) -> Option<GrantMode> {
    let name = match call {
        Call::Net(..) => "net",
        Call::Named(n, _) => n,
    };
    g.grant_covering(name, |s| scope_lets(name, s, call))
        .map(|g| g.mode)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, .. ProptestConfig::default() })]

    #[test]
    fn the_meet_allows_exactly_what_every_side_allows_and_keeps_every_ask(
        agent in grants(), ceiling in grants(), asked in grants()
    ) {
        let sides = [&agent, &ceiling, &asked];
        let effective = Grants::effective(&[Some(&agent), Some(&ceiling), Some(&asked)]);
        for call in calls() {
            let each: Vec<Option<GrantMode>> = sides.iter().map(|g| decide(g, &call)).collect();
            let got = decide(&effective, &call);
            let all_allow = each.iter().all(Option::is_some);
            prop_assert_eq!(got.is_some(), all_allow,
                "{:?}: sides {:?} effective {} ({:?})", call, each, effective.list(), got);
            if all_allow {
                let ask = each.contains(&Some(GrantMode::NeedsApproval));
                prop_assert_eq!(got == Some(GrantMode::NeedsApproval), ask,
                    "{:?}: sides {:?} effective {}", call, each, effective.list());
            }
        }
    }

    #[test]
    fn a_request_within_its_ceiling_only_narrows(ceiling in grants(), asked in grants()) {
        if asked.beyond(&ceiling).is_none() {
            let effective = Grants::effective(&[Some(&ceiling), Some(&asked)]);
            for call in calls() {
                if decide(&effective, &call).is_some() {
                    prop_assert!(decide(&ceiling, &call).is_some(), "{:?}", call);
                }
            }
        }
    }
}
