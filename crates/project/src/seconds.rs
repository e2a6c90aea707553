//! [`Seconds`]: a duration as flags and the project file write it (`30s`, `500ms`, `2m`, or a
//! bare number of seconds).

use kiln_core::duration::{BareUnit, DurationError, parse_duration};
use serde::{Deserialize, Deserializer};
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// A duration written with its unit (`30s`, `500ms`, `2m`, `1.5h`, `7d`) or as a bare number
/// of seconds; shown back with a unit (`300s`, `250ms`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Seconds(pub Duration);

impl Seconds {
    /// The duration, or `None` when it is zero (where zero means "no limit").
    pub fn nonzero(self) -> Option<Duration> {
        (!self.0.is_zero()).then_some(self.0)
    }
}

impl From<Duration> for Seconds {
    fn from(d: Duration) -> Self {
        Seconds(d)
    }
}

impl From<Seconds> for Duration {
    fn from(s: Seconds) -> Self {
        s.0
    }
}

impl FromStr for Seconds {
    type Err = DurationError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        parse_duration(text, BareUnit::Seconds).map(Seconds)
    }
}

impl fmt::Display for Seconds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = self.0.as_millis();
        if !self.0.subsec_nanos().is_multiple_of(1_000_000) {
            write!(f, "{}s", self.0.as_secs_f64())
        } else if !ms.is_multiple_of(1000) {
            write!(f, "{ms}ms")
        } else {
            write!(f, "{}s", self.0.as_secs())
        }
    }
}

impl<'de> Deserialize<'de> for Seconds {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Written {
            Number(f64),
            Text(String),
        }
        let text = match Written::deserialize(d)? {
            Written::Number(n) => n.to_string(),
            Written::Text(t) => t,
        };
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_and_bare_seconds() {
        assert_eq!(
            "30".parse::<Seconds>(),
            Ok(Seconds(Duration::from_secs(30)))
        );
        assert_eq!(
            "500ms".parse::<Seconds>(),
            Ok(Seconds(Duration::from_millis(500)))
        );
        assert_eq!(
            "2m".parse::<Seconds>(),
            Ok(Seconds(Duration::from_secs(120)))
        );
        assert!("2 weeks".parse::<Seconds>().is_err());
        assert!("-1".parse::<Seconds>().is_err());
    }

    #[test]
    fn shown_with_a_unit_that_reads_back() {
        for d in [0, 250, 1000, 300_000] {
            let s = Seconds(Duration::from_millis(d));
            assert_eq!(s.to_string().parse::<Seconds>(), Ok(s), "{s}");
        }
        assert_eq!(Seconds(Duration::from_secs(300)).to_string(), "300s");
        assert_eq!(Seconds(Duration::from_millis(250)).to_string(), "250ms");
    }
}
