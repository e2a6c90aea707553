//! The classifier and scope rules as tables: no address here is ever connected to.

use super::*;

/// (host as written in a URL, class of what it normalises to)
const TABLE: &[(&str, AddrClass)] = &[
    // loopback, in every numeric form a URL parser accepts
    ("127.0.0.1", AddrClass::Loopback),
    ("127.255.255.254", AddrClass::Loopback),
    ("2130706433", AddrClass::Loopback),
    ("0x7f000001", AddrClass::Loopback),
    ("0177.0.0.1", AddrClass::Loopback),
    ("127.1", AddrClass::Loopback),
    ("0x7f.1", AddrClass::Loopback),
    ("[::1]", AddrClass::Loopback),
    ("[0:0:0:0:0:0:0:1]", AddrClass::Loopback),
    // unspecified
    ("0.0.0.0", AddrClass::Unspecified),
    ("0", AddrClass::Unspecified),
    ("0.1.2.3", AddrClass::Unspecified),
    ("[::]", AddrClass::Unspecified),
    // private
    ("10.0.0.1", AddrClass::Private),
    ("10.255.255.255", AddrClass::Private),
    ("172.16.0.1", AddrClass::Private),
    ("172.31.255.254", AddrClass::Private),
    ("192.168.1.1", AddrClass::Private),
    ("167772161", AddrClass::Private),
    ("[fc00::1]", AddrClass::Private),
    ("[fd12:3456::1]", AddrClass::Private),
    ("[fec0::1]", AddrClass::Private),
    // link-local, cloud metadata included
    ("169.254.169.254", AddrClass::LinkLocal),
    ("0xa9fea9fe", AddrClass::LinkLocal),
    ("169.254.0.1", AddrClass::LinkLocal),
    ("[fe80::1]", AddrClass::LinkLocal),
    ("[febf::1]", AddrClass::LinkLocal),
    // shared (CGNAT)
    ("100.64.0.1", AddrClass::Shared),
    ("100.127.255.254", AddrClass::Shared),
    // multicast and broadcast
    ("224.0.0.1", AddrClass::Multicast),
    ("239.255.255.250", AddrClass::Multicast),
    ("[ff02::1]", AddrClass::Multicast),
    ("255.255.255.255", AddrClass::Broadcast),
    // reserved
    ("240.0.0.1", AddrClass::Reserved),
    ("192.0.2.1", AddrClass::Reserved),
    ("198.18.0.1", AddrClass::Reserved),
    ("[2001:db8::1]", AddrClass::Reserved),
    ("[100::1]", AddrClass::Reserved),
    // IPv6 forms carrying an IPv4 address
    ("[::ffff:127.0.0.1]", AddrClass::Loopback),
    ("[::ffff:7f00:1]", AddrClass::Loopback),
    ("[::ffff:10.1.2.3]", AddrClass::Private),
    ("[::ffff:169.254.169.254]", AddrClass::LinkLocal),
    ("[::127.0.0.1]", AddrClass::Loopback),
    ("[::192.168.0.1]", AddrClass::Private),
    ("[64:ff9b::127.0.0.1]", AddrClass::Loopback),
    ("[64:ff9b::a9fe:a9fe]", AddrClass::LinkLocal),
    ("[64:ff9b::8.8.8.8]", AddrClass::Public),
    ("[2002:7f00:1::]", AddrClass::Loopback),
    ("[::ffff:8.8.8.8]", AddrClass::Public),
    // public
    ("8.8.8.8", AddrClass::Public),
    ("1.1.1.1", AddrClass::Public),
    ("172.15.255.255", AddrClass::Public),
    ("172.32.0.1", AddrClass::Public),
    ("100.63.255.255", AddrClass::Public),
    ("100.128.0.1", AddrClass::Public),
    ("192.169.0.1", AddrClass::Public),
    ("134744072", AddrClass::Public),
    ("[2606:4700:4700::1111]", AddrClass::Public),
    ("[2a00:1450::1]", AddrClass::Public),
];

fn ip_of(host: &str) -> IpAddr {
    match NetHost::parse(host) {
        Some(NetHost::Ip(ip)) => ip,
        other => panic!("{host} parsed as {other:?}"),
    }
}

#[test]
fn every_row_of_the_address_table_is_classified() {
    assert!(TABLE.len() >= 40, "the table has {} rows", TABLE.len());
    let wrong: Vec<String> = TABLE
        .iter()
        .filter(|(host, class)| classify(ip_of(host)) != *class)
        .map(|(host, class)| format!("{host}: {} != {class}", classify(ip_of(host))))
        .collect();
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
fn numeric_forms_normalise_to_the_address_they_mean() {
    for form in [
        "2130706433",
        "0x7f000001",
        "0177.0.0.1",
        "127.1",
        "127.0.0.1",
    ] {
        assert_eq!(ip_of(form), IpAddr::V4(Ipv4Addr::LOCALHOST), "{form}");
    }
    assert_eq!(
        NetHost::parse("LocalHost"),
        Some(NetHost::Name("localhost".into()))
    );
    assert_eq!(NetHost::parse("a b"), None);
}

fn target(url: &str) -> Target {
    Target::of_url(&reqwest::Url::parse(url).expect("url")).expect("target")
}

fn ip(text: &str) -> IpAddr {
    text.parse().expect("ip")
}

#[test]
fn scopes_allow_what_they_name_and_nothing_else() {
    let local = target("http://127.0.0.1:8080/");
    let lo = ip("127.0.0.1");
    // (scope, target, address, allowed)
    let rows: &[(Option<&str>, &Target, IpAddr, bool)] = &[
        (None, &local, lo, false),
        (Some("127.0.0.1"), &local, lo, true),
        (Some("127.0.0.1:8080"), &local, lo, true),
        (Some("127.0.0.1:8081"), &local, lo, false),
        (Some("private"), &local, lo, true),
        (Some("127.0.0.0/8"), &local, lo, true),
        (Some("10.0.0.0/8"), &local, lo, false),
        (Some("localhost:8080"), &local, lo, false),
        (
            Some("localhost:8080"),
            &target("http://localhost:8080/"),
            lo,
            true,
        ),
        (
            Some("localhost"),
            &target("http://localhost:9/"),
            ip("::1"),
            true,
        ),
        (
            Some("*.example.com"),
            &target("http://a.example.com/"),
            lo,
            false,
        ),
        (
            Some("*.example.com"),
            &target("http://a.example.com/"),
            ip("8.8.8.8"),
            true,
        ),
        (None, &target("http://x.test/"), ip("8.8.8.8"), true),
        (
            Some("private"),
            &target("http://x.test/"),
            ip("8.8.8.8"),
            false,
        ),
        (
            Some("private"),
            &target("http://x.test/"),
            ip("169.254.169.254"),
            false,
        ),
        (
            Some("private"),
            &target("http://x.test/"),
            ip("100.100.100.200"),
            false,
        ),
        (
            Some("db.internal"),
            &target("http://db.internal/"),
            ip("169.254.169.254"),
            false,
        ),
        (
            Some("169.254.169.254"),
            &target("http://169.254.169.254/"),
            ip("169.254.169.254"),
            true,
        ),
        (
            Some("10.0.0.0/8"),
            &target("http://db.internal/"),
            ip("10.1.2.3"),
            true,
        ),
        (
            Some("[::1]:8080"),
            &target("http://[::1]:8080/"),
            ip("::1"),
            true,
        ),
    ];
    for (i, (scope, t, addr, want)) in rows.iter().enumerate() {
        assert_eq!(
            scope_allows(*scope, t, *addr),
            *want,
            "row {i}: {scope:?} {t} {addr}"
        );
    }
}

#[test]
fn bad_scopes_say_what_is_wrong() {
    for (scope, says) in [
        ("10.0.0.0/33", "prefix length"),
        ("10.0.0/8", "not an IP address"),
        ("localhost:http", "not a port"),
        ("[::1", "unclosed"),
        ("a b", "not a host"),
    ] {
        let err = NetScope::parse(scope).expect_err(scope);
        assert!(err.contains(says), "{scope}: {err}");
    }
}

#[test]
fn refusals_name_the_address_the_class_and_the_grant() {
    let t = target("http://127.0.0.1:8080/");
    let text = Refusal::new(&t, ip("127.0.0.1")).to_string();
    assert!(text.contains("127.0.0.1 is a loopback address"), "{text}");
    assert!(text.contains("net:127.0.0.1:8080 or net:private"), "{text}");
    let meta = Refusal::new(&target("http://meta.test/"), ip("169.254.169.254")).to_string();
    assert!(meta.contains("link-local"), "{meta}");
    assert!(meta.contains("net:169.254.169.254"), "{meta}");
}
