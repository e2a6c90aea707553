//! Approvals as the servers sharing a database see them (`kiln serve` on PostgreSQL): each
//! approval a run waits for, asked on the server running it, and the one decision that takes
//! effect, claimed here by whichever server a person decided through. A claim is one
//! conditional update, so of two racing decisions exactly one wins; the loser reads the
//! winner's. On PostgreSQL a won claim tells every listening server at once, in the same
//! transaction ([`APPROVALS_CHANNEL`]).

use crate::sql::Row;
use crate::{Db, DbError, args};
use serde_json::Value;

/// The channel a won claim is announced on (PostgreSQL's `NOTIFY`), as `RUN/APPROVAL`.
pub const APPROVALS_CHANNEL: &str = "kiln_approvals";

/// An approval a run asked for, and whose run it is.
#[derive(Debug, Clone, PartialEq)]
pub struct AskedApproval {
    /// The run waiting.
    pub run_id: String,
    /// The actor the run acts for (`None`: the open server's one caller).
    pub actor: Option<String>,
    /// What was asked.
    pub ask: Asked,
}

/// What an approval asks: the capability, the call and when.
#[derive(Debug, Clone, PartialEq)]
pub struct Asked {
    /// The approval's id within its run.
    pub id: String,
    /// The capability, or `policy:NAME`.
    pub capability: String,
    /// What the call wants.
    pub question: String,
    /// The tool asking, when known.
    pub tool: Option<String>,
    /// The call's arguments, when known.
    pub args: Option<Value>,
    /// The model's id of the call, when known.
    pub call_id: Option<String>,
    /// When it was asked (seconds since the epoch).
    pub asked_at: f64,
    /// When nobody deciding denies it (seconds since the epoch).
    pub expires_at: f64,
}

/// How a claimed decision came out.
#[derive(Debug, Clone, PartialEq)]
pub enum Claim {
    /// This decision took effect.
    Won,
    /// Another decision took effect first: this one.
    Decided(Value),
    /// No such approval was asked (or it was never recorded).
    Unknown,
}

const COLUMNS: &str =
    "run_id, id, actor, capability, question, tool, args, call_id, asked_at, expires_at";

impl Db {
    /// Records that run `a.run_id` waits for approval `a.ask.id` (again: nothing changes).
    pub fn approval_asked(&self, a: &AskedApproval) -> Result<(), DbError> {
        let (ask, args_text) = (&a.ask, a.ask.args.as_ref().map(Value::to_string));
        self.execute(
            "INSERT INTO approvals(run_id, id, actor, capability, question, tool, args, call_id,
             asked_at, expires_at) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
             ON CONFLICT(run_id, id) DO NOTHING",
            &args![
                &a.run_id,
                &ask.id,
                &a.actor,
                &ask.capability,
                &ask.question,
                &ask.tool,
                args_text,
                &ask.call_id,
                ask.asked_at,
                ask.expires_at
            ],
        )
        .map(drop)
    }

    /// Makes `decision` (`{"decision": "approve"}` or `{"decision": "deny", "reason": ...}`)
    /// the one that takes effect on approval `id` of run `run`, unless one did already. On
    /// PostgreSQL a won claim is announced on [`APPROVALS_CHANNEL`] when it commits.
    pub fn approval_claim(&self, run: &str, id: &str, decision: &Value) -> Result<Claim, DbError> {
        let postgres = self.is_postgres();
        let text = decision.to_string();
        self.transaction(|tx| {
            // A row read undecided after the update found none was asked just then: the
            // update is tried again.
            for _ in 0..3 {
                let won = tx.execute(
                    "UPDATE approvals SET decision=?3, decided_at=?4
                     WHERE run_id=?1 AND id=?2 AND decision IS NULL",
                    &args![run, id, &text, crate::now()],
                )? == 1;
                if won {
                    if postgres {
                        let note = format!("{run}/{id}");
                        tx.execute("SELECT pg_notify(?1, ?2)", &args![APPROVALS_CHANNEL, note])?;
                    }
                    return Ok(Claim::Won);
                }
                let found = tx.query(
                    "SELECT decision FROM approvals WHERE run_id=?1 AND id=?2",
                    &args![run, id],
                )?;
                match found.first() {
                    None => return Ok(Claim::Unknown),
                    Some(row) if row.text(0).is_some() => {
                        return Ok(Claim::Decided(parse_decision(row)));
                    }
                    Some(_) => continue,
                }
            }
            Ok(Claim::Unknown)
        })
    }

    /// The decision that took effect on approval `id` of run `run`, once one did.
    pub fn approval_decision(&self, run: &str, id: &str) -> Result<Option<Value>, DbError> {
        let row = self.query_row(
            "SELECT decision FROM approvals WHERE run_id=?1 AND id=?2 AND decision IS NOT NULL",
            &args![run, id],
        )?;
        Ok(row.map(|r| parse_decision(&r)))
    }

    /// The approvals nobody decided yet whose deadline is after `now`, oldest first; only run
    /// `run`'s when given.
    pub fn approvals_waiting(
        &self,
        run: Option<&str>,
        now: f64,
    ) -> Result<Vec<AskedApproval>, DbError> {
        let rows = match run {
            Some(run) => self.query(
                &format!(
                    "SELECT {COLUMNS} FROM approvals WHERE run_id=?1 AND decision IS NULL
                     AND expires_at > ?2 ORDER BY asked_at"
                ),
                &args![run, now],
            )?,
            None => self.query(
                &format!(
                    "SELECT {COLUMNS} FROM approvals WHERE decision IS NULL AND expires_at > ?1
                     ORDER BY asked_at"
                ),
                &args![now],
            )?,
        };
        Ok(rows.iter().map(asked_of).collect())
    }

    /// The actor run `run`'s approval `id` was asked for, when it was asked: who may decide it.
    pub fn approval_actor(&self, run: &str, id: &str) -> Result<Option<Option<String>>, DbError> {
        let row = self.query_row(
            "SELECT actor FROM approvals WHERE run_id=?1 AND id=?2",
            &args![run, id],
        )?;
        Ok(row.map(|r| r.text(0)))
    }
}

fn asked_of(r: &Row) -> AskedApproval {
    AskedApproval {
        run_id: r.str(0),
        actor: r.text(2),
        ask: Asked {
            id: r.str(1),
            capability: r.str(3),
            question: r.str(4),
            tool: r.text(5),
            args: r.text(6).and_then(|t| serde_json::from_str(&t).ok()),
            call_id: r.text(7),
            asked_at: r.real(8).unwrap_or_default(),
            expires_at: r.real(9).unwrap_or_default(),
        },
    }
}

/// A stored decision; one that is not JSON (written by something else) reads as a denial
/// saying so, never as an approval.
fn parse_decision(r: &Row) -> Value {
    let text = r.str(0);
    serde_json::from_str(&text).unwrap_or_else(|_| {
        serde_json::json!({"decision": "deny", "reason": "the stored decision could not be read"})
    })
}

#[cfg(test)]
mod tests {
    use crate::Db;
    use crate::approvals::{Asked, AskedApproval, Claim};
    use serde_json::json;

    both_databases!(
        of_two_decisions_the_first_takes_effect_and_the_second_reads_it,
        super::one_winner
    );

    fn asked(run: &str, id: &str, expires_at: f64) -> AskedApproval {
        AskedApproval {
            run_id: run.into(),
            actor: Some("alice".into()),
            ask: Asked {
                id: id.into(),
                capability: "store".into(),
                question: "may it?".into(),
                tool: Some("put".into()),
                args: Some(json!({"v": "x"})),
                call_id: None,
                asked_at: 1.0,
                expires_at,
            },
        }
    }

    fn one_winner(db: &Db) {
        let later = crate::now() + 60.0;
        db.approval_asked(&asked("r1", "approval_1", later))
            .expect("asked");
        db.approval_asked(&asked("r1", "approval_1", later))
            .expect("asked twice is nothing new");
        db.approval_asked(&asked("r2", "approval_1", 2.0))
            .expect("asked");
        let waiting = db.approvals_waiting(None, crate::now()).expect("waiting");
        assert_eq!(
            waiting,
            [asked("r1", "approval_1", later)],
            "past deadlines left out"
        );
        assert_eq!(
            db.approval_actor("r1", "approval_1").expect("actor"),
            Some(Some("alice".into()))
        );

        let approve = json!({"decision": "approve"});
        let deny = json!({"decision": "deny", "reason": "no"});
        assert_eq!(
            db.approval_decision("r1", "approval_1").expect("read"),
            None
        );
        assert_eq!(
            db.approval_claim("r1", "approval_1", &approve)
                .expect("claim"),
            Claim::Won
        );
        assert_eq!(
            db.approval_claim("r1", "approval_1", &deny).expect("claim"),
            Claim::Decided(approve.clone())
        );
        assert_eq!(
            db.approval_decision("r1", "approval_1").expect("read"),
            Some(approve)
        );
        assert_eq!(
            db.approval_claim("r9", "approval_1", &deny).expect("claim"),
            Claim::Unknown
        );
        assert!(
            db.approvals_waiting(Some("r1"), crate::now())
                .expect("waiting")
                .is_empty()
        );
    }

    both_databases!(
        racing_claims_from_many_threads_have_one_winner,
        super::racing_claims
    );

    fn racing_claims(db: &Db) {
        db.approval_asked(&asked("r1", "approval_1", f64::MAX))
            .expect("asked");
        let wins: usize = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|i| {
                    s.spawn(move || {
                        let d = json!({"decision": "deny", "reason": format!("{i}")});
                        db.approval_claim("r1", "approval_1", &d).expect("claim") == Claim::Won
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().map_or(0, usize::from))
                .sum()
        });
        assert_eq!(wins, 1);
    }
}
