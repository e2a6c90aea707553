//! Statements both databases run: SQL written once in the dialect SQLite and PostgreSQL share
//! (upserts with `ON CONFLICT`, `IS NOT DISTINCT FROM`, `CAST`), with SQLite's `?N`
//! placeholders (PostgreSQL's `$N` are derived), the values bound to them ([`Arg`]) and the
//! cells read back ([`Row`]).

use std::borrow::Cow;

/// A value bound to a statement's placeholder.
#[derive(Debug, Clone, PartialEq)]
pub enum Arg<'a> {
    /// SQL NULL.
    Null,
    /// An integer (also a boolean: 0 or 1).
    Int(i64),
    /// A floating-point number (times are seconds since the epoch).
    Real(f64),
    /// Text.
    Text(Cow<'a, str>),
}

impl Arg<'_> {
    /// The same value, owning its text (a job kept to run later).
    pub fn into_owned(self) -> Arg<'static> {
        match self {
            Arg::Null => Arg::Null,
            Arg::Int(i) => Arg::Int(i),
            Arg::Real(f) => Arg::Real(f),
            Arg::Text(t) => Arg::Text(Cow::Owned(t.into_owned())),
        }
    }
}

impl From<i64> for Arg<'_> {
    fn from(v: i64) -> Self {
        Arg::Int(v)
    }
}

impl From<u32> for Arg<'_> {
    fn from(v: u32) -> Self {
        Arg::Int(i64::from(v))
    }
}

impl From<bool> for Arg<'_> {
    fn from(v: bool) -> Self {
        Arg::Int(i64::from(v))
    }
}

impl From<f64> for Arg<'_> {
    fn from(v: f64) -> Self {
        Arg::Real(v)
    }
}

impl<'a> From<&'a str> for Arg<'a> {
    fn from(v: &'a str) -> Self {
        Arg::Text(Cow::Borrowed(v))
    }
}

impl<'a> From<&'a String> for Arg<'a> {
    fn from(v: &'a String) -> Self {
        Arg::Text(Cow::Borrowed(v))
    }
}

impl From<String> for Arg<'_> {
    fn from(v: String) -> Self {
        Arg::Text(Cow::Owned(v))
    }
}

impl<'a, T> From<Option<T>> for Arg<'a>
where
    T: Into<Arg<'a>>,
{
    fn from(v: Option<T>) -> Self {
        v.map_or(Arg::Null, Into::into)
    }
}

impl<'a> From<&'a Option<String>> for Arg<'a> {
    fn from(v: &'a Option<String>) -> Self {
        v.as_deref().map_or(Arg::Null, Arg::from)
    }
}

/// The values of a statement's placeholders, in order: `args![a, b, c]`.
#[macro_export]
macro_rules! args {
    ($($v:expr),* $(,)?) => { [$($crate::sql::Arg::from($v)),*] };
}

impl rusqlite::ToSql for Arg<'_> {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        use rusqlite::types::{ToSqlOutput, ValueRef};
        Ok(ToSqlOutput::Borrowed(match self {
            Arg::Null => ValueRef::Null,
            Arg::Int(i) => ValueRef::Integer(*i),
            Arg::Real(f) => ValueRef::Real(*f),
            Arg::Text(t) => ValueRef::Text(t.as_bytes()),
        }))
    }
}

impl tokio_postgres::types::ToSql for Arg<'_> {
    fn to_sql(
        &self,
        ty: &tokio_postgres::types::Type,
        out: &mut tokio_postgres::types::private::BytesMut,
    ) -> Result<tokio_postgres::types::IsNull, Box<dyn std::error::Error + Sync + Send>> {
        use tokio_postgres::types::{IsNull, Type};
        // The column decides the wire type: an integer bound where the server expects a
        // float (or a narrower integer) is converted, as SQLite's affinity would.
        match (self, ty) {
            (Arg::Null, _) => Ok(IsNull::Yes),
            (Arg::Int(i), &Type::INT8) => i.to_sql(ty, out),
            (Arg::Int(i), &Type::INT4) => i32::try_from(*i)?.to_sql(ty, out),
            (Arg::Int(i), &Type::INT2) => i16::try_from(*i)?.to_sql(ty, out),
            (Arg::Int(i), &Type::BOOL) => (*i != 0).to_sql(ty, out),
            (Arg::Int(i), &Type::FLOAT8) => (*i as f64).to_sql(ty, out),
            (Arg::Real(f), &Type::FLOAT8) => f.to_sql(ty, out),
            (Arg::Real(f), &Type::INT8) => (*f as i64).to_sql(ty, out),
            (Arg::Real(f), &Type::FLOAT4) => (*f as f32).to_sql(ty, out),
            (Arg::Int(i), _) => i.to_string().as_str().to_sql(&Type::TEXT, out),
            (Arg::Real(f), _) => f.to_string().as_str().to_sql(&Type::TEXT, out),
            (Arg::Text(t), _) => t.as_ref().to_sql(&Type::TEXT, out),
        }
    }

    fn accepts(_: &tokio_postgres::types::Type) -> bool {
        true
    }

    tokio_postgres::types::to_sql_checked!();
}

/// A cell read back from either database.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    /// SQL NULL.
    Null,
    /// An integer or a boolean.
    Int(i64),
    /// A floating-point number.
    Real(f64),
    /// Text.
    Text(String),
}

/// A row read back: its cells in the order the statement selected them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Row(pub Vec<Cell>);

impl Row {
    fn cell(&self, i: usize) -> &Cell {
        self.0.get(i).unwrap_or(&Cell::Null)
    }

    /// Column `i` as text (`None`: NULL; a number is shown as text).
    pub fn text(&self, i: usize) -> Option<String> {
        match self.cell(i) {
            Cell::Null => None,
            Cell::Int(n) => Some(n.to_string()),
            Cell::Real(f) => Some(f.to_string()),
            Cell::Text(t) => Some(t.clone()),
        }
    }

    /// Column `i` as text, empty when NULL.
    pub fn str(&self, i: usize) -> String {
        self.text(i).unwrap_or_default()
    }

    /// Column `i` as an integer (`None`: NULL or not a number).
    pub fn int(&self, i: usize) -> Option<i64> {
        match self.cell(i) {
            Cell::Int(n) => Some(*n),
            Cell::Real(f) => Some(*f as i64),
            Cell::Text(t) => t.parse().ok(),
            Cell::Null => None,
        }
    }

    /// Column `i` as a float (`None`: NULL or not a number).
    pub fn real(&self, i: usize) -> Option<f64> {
        match self.cell(i) {
            Cell::Int(n) => Some(*n as f64),
            Cell::Real(f) => Some(*f),
            Cell::Text(t) => t.parse().ok(),
            Cell::Null => None,
        }
    }
}

/// Where a job's statements go: an SQLite transaction, or a PostgreSQL transaction's batch.
pub trait Writer {
    /// Runs one statement (written with `?N` placeholders) with `args`.
    fn exec(&mut self, sql: &'static str, args: &[Arg<'_>]) -> Result<(), SqlError>;
}

/// A unit of work for one transaction: the statements it gives its [`Writer`]. It may run
/// twice (again alone, after its batch rolled back), so it writes only what it owns.
pub type Job = Box<dyn Fn(&mut dyn Writer) -> Result<(), SqlError> + Send>;

/// Jobs committed together at most: bounds how long one holder commits for others.
pub(crate) const MAX_BATCH: usize = 128;

/// A lock that a panicking holder did not poison for good.
pub(crate) fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A transaction's statements with their answers (`Db::transaction`).
pub trait Tx {
    /// Runs one statement; how many rows it changed.
    fn execute(&mut self, sql: &str, args: &[Arg<'_>]) -> Result<u64, SqlError>;
    /// The rows one statement selects.
    fn query(&mut self, sql: &str, args: &[Arg<'_>]) -> Result<Vec<Row>, SqlError>;
}

/// An error of either database, before it is given the database's name (`DbError`).
#[derive(Debug, thiserror::Error)]
pub enum SqlError {
    /// SQLite failed.
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
    /// PostgreSQL (or the connection to it) failed.
    #[error("{}", postgres_error_text(.0))]
    Postgres(#[from] tokio_postgres::Error),
    /// No connection to PostgreSQL could be had from the pool.
    #[error("{0}")]
    Pool(String),
}

impl SqlError {
    /// No connection could be had from the pool, for `e` and the causes it wraps (the pool's
    /// own text leaves them out: "error performing TLS handshake", not why).
    pub(crate) fn pool(e: &dyn std::error::Error) -> SqlError {
        let mut text = e.to_string();
        let mut cause = e.source();
        while let Some(c) = cause {
            let said = c.to_string();
            if !text.contains(&said) {
                text.push_str(": ");
                text.push_str(&said);
            }
            cause = c.source();
        }
        SqlError::Pool(text)
    }
}

/// What PostgreSQL said, with its detail and hint (the error's own text is only "db error").
fn postgres_error_text(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => {
            let mut text = format!("{} ({})", db.message(), db.code().code());
            if let Some(detail) = db.detail() {
                text.push_str(&format!(": {detail}"));
            }
            if let Some(hint) = db.hint() {
                text.push_str(&format!(" (hint: {hint})"));
            }
            text
        }
        None => {
            use std::error::Error as _;
            match e.source() {
                Some(cause) => format!("{e}: {cause}"),
                None => e.to_string(),
            }
        }
    }
}

/// A statement in PostgreSQL's dialect: `?N` placeholders become `$N`, and a `?` outside a
/// string literal with no number takes the next.
pub fn postgres_text(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 8);
    let mut in_literal = false;
    let mut next = 0usize;
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_literal = !in_literal;
                out.push(c);
            }
            '?' if !in_literal => {
                let mut digits = String::new();
                while let Some(d) = chars.peek().filter(|d| d.is_ascii_digit()) {
                    digits.push(*d);
                    chars.next();
                }
                if digits.is_empty() {
                    next += 1;
                    digits = next.to_string();
                }
                out.push('$');
                out.push_str(&digits);
            }
            _ => out.push(c),
        }
    }
    out
}

/// A schema statement of SQLite's in PostgreSQL's types: `REAL` is `DOUBLE PRECISION`,
/// `INTEGER` is `BIGINT` (kiln binds 64-bit integers), and `WITHOUT ROWID` is SQLite's alone.
pub fn postgres_schema(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 32);
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        match word.to_ascii_uppercase().as_str() {
            "REAL" => out.push_str("DOUBLE PRECISION"),
            "INTEGER" => out.push_str("BIGINT"),
            _ => out.push_str(word),
        }
        word.clear();
    };
    for c in sql.chars() {
        if c.is_ascii_alphanumeric() || c == '_' {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            out.push(c);
        }
    }
    flush(&mut word, &mut out);
    out.replace(" WITHOUT ROWID", "")
}

#[cfg(test)]
mod tests {
    use crate::sql::*;

    #[test]
    fn placeholders_become_postgres_numbers_outside_literals() {
        assert_eq!(
            postgres_text("SELECT a FROM t WHERE b = ?1 AND c = '?' AND d = ?12 OR e = ?"),
            "SELECT a FROM t WHERE b = $1 AND c = '?' AND d = $12 OR e = $1"
        );
    }

    #[test]
    fn schema_types_become_postgres_types() {
        assert_eq!(
            postgres_schema(
                "CREATE TABLE t(a REAL, b INTEGER NOT NULL, integers TEXT, PRIMARY KEY(a)) WITHOUT ROWID"
            ),
            "CREATE TABLE t(a DOUBLE PRECISION, b BIGINT NOT NULL, integers TEXT, PRIMARY KEY(a))"
        );
    }

    #[test]
    fn cells_read_as_what_the_caller_asks() {
        let row = Row(vec![
            Cell::Int(3),
            Cell::Real(1.5),
            Cell::Text("7".into()),
            Cell::Null,
        ]);
        assert_eq!(row.real(0), Some(3.0));
        assert_eq!(row.int(1), Some(1));
        assert_eq!(row.int(2), Some(7));
        assert_eq!(row.text(3), None);
        assert_eq!(row.text(9), None, "past the last column: NULL");
        assert_eq!(row.str(0), "3");
    }

    #[test]
    fn options_bind_as_null_or_their_value() {
        let none: Option<&str> = None;
        let some = Some("x".to_string());
        assert_eq!(
            args![none, &some, 2i64, true],
            [Arg::Null, Arg::Text("x".into()), Arg::Int(2), Arg::Int(1)]
        );
    }
}
