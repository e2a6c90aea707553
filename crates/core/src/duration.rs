//! Durations written with their unit (`"30s"`, `"500ms"`, `"2m"`), read the same way by
//! scripts, flags and the project file. A bare number means seconds, except where a script
//! wrote milliseconds before (a `.timeout(n)`, `within_duration(n)`, a `timeout` option):
//! there it still does, deprecated (kiln-script's renames warn and `kiln check --fix` writes
//! the unit).

use std::time::Duration;

/// Why a duration could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    /// The text is not a number followed by a known unit.
    #[error("`{text}` is not a duration: write a number and a unit, like 30s, 500ms or 2m")]
    Malformed {
        /// The text as written.
        text: String,
    },
    /// The unit is not one kiln reads.
    #[error("`{text}`: unknown unit `{unit}` (use ms, s, m, h or d)")]
    UnknownUnit {
        /// The text as written.
        text: String,
        /// The unit as written.
        unit: String,
    },
    /// Negative, not finite, or too large to represent.
    #[error("`{text}` is out of range (0 or more, finite)")]
    OutOfRange {
        /// The text as written.
        text: String,
    },
}

/// The unit a bare number means where no unit is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BareUnit {
    /// Milliseconds (a script's `.timeout(n)`).
    Millis,
    /// Seconds (a `--...-timeout` flag).
    Seconds,
}

impl BareUnit {
    fn seconds(self) -> f64 {
        match self {
            BareUnit::Millis => 0.001,
            BareUnit::Seconds => 1.0,
        }
    }
}

/// Reads `"30s"`, `"500ms"`, `"1.5m"`, `"2h"`, `"7d"`, or a bare number in `bare`'s unit.
pub fn parse_duration(text: &str, bare: BareUnit) -> Result<Duration, DurationError> {
    let trimmed = text.trim();
    let split = trimmed
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(split);
    let malformed = || DurationError::Malformed {
        text: text.to_string(),
    };
    if number.is_empty() {
        return Err(malformed());
    }
    let n: f64 = number.parse().map_err(|_| malformed())?;
    let per = match unit.trim() {
        "" => bare.seconds(),
        "ms" => 0.001,
        "s" => 1.0,
        "m" => 60.0,
        "h" => 3600.0,
        "d" => 86400.0,
        other => {
            return Err(DurationError::UnknownUnit {
                text: text.to_string(),
                unit: other.to_string(),
            });
        }
    };
    seconds(n * per).ok_or_else(|| DurationError::OutOfRange {
        text: text.to_string(),
    })
}

/// A number of seconds as a `Duration`, if it is finite, at least 0 and representable.
pub fn seconds(secs: f64) -> Option<Duration> {
    Duration::try_from_secs_f64(secs).ok()
}
