//! A small arithmetic evaluator for the calculator's `expression` form (never `eval`).

/// Evaluates `+ - * / % ^`, parentheses, unary minus, `pi`, `e` and common functions.
pub fn eval(expr: &str) -> Result<f64, String> {
    if expr.len() > 10_000 {
        return Err("expression is too long (limit 10000 characters)".into());
    }
    let mut p = Parser {
        s: expr.as_bytes(),
        i: 0,
        depth: 0,
    };
    let v = p.sum()?;
    p.ws();
    if p.i < p.s.len() {
        return Err(format!(
            "unexpected `{}` at position {}",
            p.s[p.i] as char,
            p.i + 1
        ));
    }
    if !v.is_finite() {
        return Err("result is not a finite number".into());
    }
    Ok(v)
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
    depth: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.s.get(self.i).copied()
    }

    fn sum(&mut self) -> Result<f64, String> {
        let mut v = self.product()?;
        while let Some(op @ (b'+' | b'-')) = self.peek() {
            self.i += 1;
            let r = self.product()?;
            v = if op == b'+' { v + r } else { v - r };
        }
        Ok(v)
    }

    fn product(&mut self) -> Result<f64, String> {
        let mut v = self.power()?;
        while let Some(op @ (b'*' | b'/' | b'%')) = self.peek() {
            self.i += 1;
            let r = self.power()?;
            if op != b'*' && r == 0.0 {
                return Err("division by zero".into());
            }
            v = match op {
                b'*' => v * r,
                b'/' => v / r,
                _ => v % r,
            };
        }
        Ok(v)
    }

    fn power(&mut self) -> Result<f64, String> {
        let base = self.unary()?;
        if self.peek() == Some(b'^') {
            self.i += 1;
            let exp = self.power()?;
            return Ok(base.powf(exp));
        }
        Ok(base)
    }

    fn unary(&mut self) -> Result<f64, String> {
        match self.peek() {
            Some(b'-') => {
                self.i += 1;
                self.nest(|p| p.unary()).map(|v| -v)
            }
            Some(b'+') => {
                self.i += 1;
                self.nest(|p| p.unary())
            }
            _ => self.atom(),
        }
    }

    fn nest(&mut self, f: impl FnOnce(&mut Self) -> Result<f64, String>) -> Result<f64, String> {
        self.depth += 1;
        if self.depth > 200 {
            return Err("expression is nested too deeply".into());
        }
        let v = f(self);
        self.depth -= 1;
        v
    }

    fn atom(&mut self) -> Result<f64, String> {
        match self.peek() {
            Some(b'(') => {
                self.i += 1;
                let v = self.nest(|p| p.sum())?;
                self.expect(b')')?;
                Ok(v)
            }
            Some(c) if c.is_ascii_digit() || c == b'.' => self.number(),
            Some(c) if c.is_ascii_alphabetic() => self.name(),
            Some(c) => Err(format!(
                "unexpected `{}` at position {}",
                c as char,
                self.i + 1
            )),
            None => Err("unexpected end of expression".into()),
        }
    }

    fn expect(&mut self, c: u8) -> Result<(), String> {
        if self.peek() == Some(c) {
            self.i += 1;
            Ok(())
        } else {
            Err(format!(
                "expected `{}` at position {}",
                c as char,
                self.i + 1
            ))
        }
    }

    fn number(&mut self) -> Result<f64, String> {
        let start = self.i;
        while self.i < self.s.len()
            && (self.s[self.i].is_ascii_digit() || matches!(self.s[self.i], b'.' | b'e' | b'E'))
        {
            let was_exp = matches!(self.s[self.i], b'e' | b'E');
            self.i += 1;
            if was_exp && matches!(self.s.get(self.i), Some(b'+' | b'-')) {
                self.i += 1;
            }
        }
        let text = std::str::from_utf8(&self.s[start..self.i]).map_err(|e| e.to_string())?;
        text.parse()
            .map_err(|_| format!("bad number `{text}` at position {}", start + 1))
    }

    fn name(&mut self) -> Result<f64, String> {
        let start = self.i;
        while self.i < self.s.len()
            && (self.s[self.i].is_ascii_alphanumeric() || self.s[self.i] == b'_')
        {
            self.i += 1;
        }
        let name = std::str::from_utf8(&self.s[start..self.i])
            .map_err(|e| e.to_string())?
            .to_ascii_lowercase();
        match name.as_str() {
            "pi" => return Ok(std::f64::consts::PI),
            "e" => return Ok(std::f64::consts::E),
            _ => {}
        }
        self.expect(b'(')?;
        let mut args = vec![self.nest(|p| p.sum())?];
        while self.peek() == Some(b',') {
            self.i += 1;
            args.push(self.nest(|p| p.sum())?);
        }
        self.expect(b')')?;
        let one = |f: fn(f64) -> f64| {
            if args.len() == 1 {
                Ok(f(args[0]))
            } else {
                Err(format!("{name}() takes 1 argument"))
            }
        };
        match name.as_str() {
            "sqrt" if args[0] < 0.0 => Err("sqrt of a negative number".into()),
            "sqrt" => one(f64::sqrt),
            "abs" => one(f64::abs),
            "sin" => one(f64::sin),
            "cos" => one(f64::cos),
            "tan" => one(f64::tan),
            "ln" => one(f64::ln),
            "log" | "log10" => one(f64::log10),
            "exp" => one(f64::exp),
            "floor" => one(f64::floor),
            "ceil" => one(f64::ceil),
            "round" => one(f64::round),
            "min" => Ok(args.iter().copied().fold(f64::INFINITY, f64::min)),
            "max" => Ok(args.iter().copied().fold(f64::NEG_INFINITY, f64::max)),
            "pow" if args.len() == 2 => Ok(args[0].powf(args[1])),
            _ => Err(format!("unknown function `{name}`")),
        }
    }
}

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
    use super::{eval, iso_from_secs};

    #[test]
    fn formats_known_moments() {
        assert_eq!(iso_from_secs(0), "1970-01-01T00:00:00Z");
        assert_eq!(iso_from_secs(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(iso_from_secs(1_798_761_599), "2026-12-31T23:59:59Z");
        assert_eq!(iso_from_secs(-1), "1969-12-31T23:59:59Z");
    }

    #[test]
    fn evaluates_precedence_and_functions() {
        assert_eq!(eval("2 + 3 * 4").ok(), Some(14.0));
        assert_eq!(eval("(2 + 3) * 4").ok(), Some(20.0));
        assert_eq!(eval("2 ^ 3 ^ 2").ok(), Some(512.0));
        assert_eq!(eval("-sqrt(16) + max(1, 7, 3)").ok(), Some(3.0));
        assert_eq!(eval("1e3 / 4").ok(), Some(250.0));
    }

    #[test]
    fn rejects_bad_input_clearly() {
        assert_eq!(eval("1 / 0").err().as_deref(), Some("division by zero"));
        assert!(eval("2 +").is_err());
        assert!(
            eval("system(1)")
                .err()
                .is_some_and(|e| e.contains("unknown function"))
        );
        assert!(eval(&"(".repeat(5000)).is_err());
    }
}
