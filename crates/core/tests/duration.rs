//! Durations as scripts and flags write them: units, bare numbers, and bad text named.

use kiln_core::duration::*;
use std::time::Duration;

#[test]
fn units_and_bare_numbers() {
    let ms = |t| parse_duration(t, BareUnit::Millis);
    let s = |t| parse_duration(t, BareUnit::Seconds);
    assert_eq!(ms("500"), Ok(Duration::from_millis(500)));
    assert_eq!(s("30"), Ok(Duration::from_secs(30)));
    assert_eq!(ms("30s"), Ok(Duration::from_secs(30)));
    assert_eq!(s("500ms"), Ok(Duration::from_millis(500)));
    assert_eq!(s("1.5m"), Ok(Duration::from_secs(90)));
    assert_eq!(s(" 2h "), Ok(Duration::from_secs(7200)));
    assert_eq!(s("7d"), Ok(Duration::from_secs(7 * 86400)));
    assert_eq!(s("0"), Ok(Duration::ZERO));
}

#[test]
fn bad_text_is_named() {
    let s = |t| parse_duration(t, BareUnit::Seconds);
    assert!(matches!(s("fast"), Err(DurationError::Malformed { .. })));
    assert!(matches!(s(""), Err(DurationError::Malformed { .. })));
    assert!(matches!(s("1.2.3s"), Err(DurationError::Malformed { .. })));
    assert!(
        matches!(s("3 weeks"), Err(DurationError::UnknownUnit { unit, .. }) if unit == "weeks")
    );
    assert!(s("1e400").is_err());
    assert!(matches!(s("-1s"), Err(DurationError::Malformed { .. })));
    assert!(s("99999999999999999999d").is_err());
}
