//! Moments as people read them: seconds since the epoch as RFC 3339 UTC, for the DSL's
//! `now_iso()` and the times `kiln logs` prints.

/// The current UTC time as RFC 3339 (`2026-11-29T12:00:00Z`).
pub fn now_iso() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    iso_from_secs(secs)
}

/// Seconds since the epoch as RFC 3339 UTC (`1970-01-01T00:00:00Z` for 0).
pub fn iso_from_secs(secs: i64) -> String {
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil-from-days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::iso_from_secs;

    #[test]
    fn formats_known_moments() {
        assert_eq!(iso_from_secs(0), "1970-01-01T00:00:00Z");
        assert_eq!(iso_from_secs(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(iso_from_secs(1_798_761_599), "2026-12-31T23:59:59Z");
        assert_eq!(iso_from_secs(-1), "1969-12-31T23:59:59Z");
    }
}
