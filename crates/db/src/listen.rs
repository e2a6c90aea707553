//! Hearing the other processes that share a PostgreSQL database, at once: PostgreSQL's
//! `NOTIFY` sent, and `LISTEN` on a connection of the listener's own (outside the pool),
//! reconnected when it drops. A notice sent while no connection listened is lost, so each
//! (re)connection is announced ([`Notice::Listening`]): what the listener waits for should be
//! read again from the tables then. On SQLite nothing is sent and nobody listens.

use crate::postgres::pg_error;
use crate::postgres::tls::Link;
use crate::sql::SqlError;
use crate::{Db, DbError, Engine, args};
use futures_util::StreamExt;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_postgres::AsyncMessage;

/// What a listener hears.
#[derive(Debug, Clone, PartialEq)]
pub enum Notice {
    /// A notice on one of the channels listened to.
    Heard {
        /// The channel.
        channel: String,
        /// What was sent.
        payload: String,
    },
    /// The listening connection is (again) up: notices sent before may have been missed.
    Listening,
}

/// The longest payload PostgreSQL carries in a notice, in bytes (its limit is 8000).
pub const MAX_PAYLOAD: usize = 7900;

/// Wait before connecting again after the listening connection dropped.
const RECONNECT_AFTER: Duration = Duration::from_secs(1);

impl Db {
    /// Sends `payload` to every process listening on `channel` (PostgreSQL; nothing on
    /// SQLite). Awaitable from any runtime: the work runs on the engine's own.
    pub async fn notify(&self, channel: &str, payload: &str) -> Result<(), DbError> {
        let Engine::Postgres(db) = &self.engine else {
            return Ok(());
        };
        let Some(rt) = db.runtime() else {
            return Ok(());
        };
        let (pool, channel, payload) =
            (db.pool().clone(), channel.to_string(), payload.to_string());
        let sent = rt.spawn(async move {
            let client = pool.get().await.map_err(|e| SqlError::pool(&e))?;
            let sql = crate::sql::postgres_text("SELECT pg_notify(?1, ?2)");
            let args = args![channel, payload];
            let params: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> =
                args.iter().map(|a| a as _).collect();
            client
                .execute(&sql, &params)
                .await
                .map(drop)
                .map_err(SqlError::from)
        });
        match sent.await {
            Ok(done) => done.map_err(|e| pg_error(db.shown(), e)),
            Err(e) => Err(pg_error(db.shown(), SqlError::Pool(e.to_string()))),
        }
    }

    /// Listens on `channels` (plain identifiers) for as long as the receiver is kept, over
    /// a connection of its own that is made again whenever it drops; `None` on SQLite.
    pub fn listen(&self, channels: &[&str]) -> Option<mpsc::UnboundedReceiver<Notice>> {
        let Engine::Postgres(db) = &self.engine else {
            return None;
        };
        let rt = db.runtime()?;
        let (tx, rx) = mpsc::unbounded_channel();
        let channels: Vec<String> = channels.iter().map(|c| c.to_string()).collect();
        rt.spawn(listen_loop(
            db.config.clone(),
            db.link.clone(),
            channels,
            tx,
            db.shown().to_string(),
        ));
        Some(rx)
    }
}

/// Connects, listens and passes notices on until the receiver is gone; reconnects after a
/// drop.
async fn listen_loop(
    config: tokio_postgres::Config,
    link: Link,
    channels: Vec<String>,
    tx: mpsc::UnboundedSender<Notice>,
    shown: String,
) {
    let listen: String = channels.iter().map(|c| format!("LISTEN {c};")).collect();
    while !tx.is_closed() {
        let failed = match &link {
            Link::Plain => match config.connect(tokio_postgres::NoTls).await {
                Ok((client, conn)) => {
                    listen_on(client, conn, &listen, &tx, &shown).await;
                    None
                }
                Err(e) => Some(e),
            },
            Link::Tls(tls) => match config.connect(tls.clone()).await {
                Ok((client, conn)) => {
                    listen_on(client, conn, &listen, &tx, &shown).await;
                    None
                }
                Err(e) => Some(e),
            },
        };
        if let Some(e) = failed {
            tracing::warn!(
                "{shown}: cannot connect to listen for other servers: {}",
                SqlError::from(e)
            );
        }
        tokio::select! {
            () = tokio::time::sleep(RECONNECT_AFTER) => {}
            () = tx.closed() => return,
        }
    }
}

/// Listens on one connection until it drops or nobody listens any more.
async fn listen_on<S, T>(
    client: tokio_postgres::Client,
    mut conn: tokio_postgres::Connection<S, T>,
    listen: &str,
    tx: &mpsc::UnboundedSender<Notice>,
    shown: &str,
) where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (heard, mut notices) = mpsc::unbounded_channel();
    // The connection's messages are read by a task of their own: the client's `LISTEN`
    // needs the connection driven meanwhile.
    let driver = tokio::spawn(async move {
        let mut messages = futures_util::stream::poll_fn(|cx| conn.poll_message(cx));
        while let Some(message) = messages.next().await {
            match message {
                Ok(AsyncMessage::Notification(n)) => {
                    let _ = heard.send(Notice::Heard {
                        channel: n.channel().to_string(),
                        payload: n.payload().to_string(),
                    });
                }
                Ok(_) => {}
                Err(_) => break,
            }
        }
    });
    match client.batch_execute(listen).await {
        Ok(()) => {
            let _ = tx.send(Notice::Listening);
            pass_on(&mut notices, tx).await;
            if !tx.is_closed() {
                tracing::warn!(
                    "{shown}: the connection listening for other servers dropped; connecting again"
                );
            }
        }
        Err(e) => tracing::warn!(
            "{shown}: cannot listen for other servers: {}",
            SqlError::from(e)
        ),
    }
    driver.abort();
}

/// Passes notices on until the connection drops or nobody listens any more.
async fn pass_on(
    notices: &mut mpsc::UnboundedReceiver<Notice>,
    tx: &mpsc::UnboundedSender<Notice>,
) {
    loop {
        tokio::select! {
            notice = notices.recv() => match notice {
                Some(n) => {
                    if tx.send(n).is_err() {
                        return;
                    }
                }
                None => return,
            },
            () = tx.closed() => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::listen::Notice;

    #[test]
    fn sqlite_neither_sends_nor_listens() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = crate::Db::open(&dir.path().join("k.db")).expect("db");
        assert!(db.listen(&["kiln_feed"]).is_none());
        futures_executor::block_on(db.notify("kiln_feed", "x")).expect("nothing to send");
    }

    #[test]
    #[ignore = "needs PostgreSQL: KILN_POSTGRES (.ci/postgres start)"]
    fn postgres_notices_reach_another_connection_listening() {
        let scratch = crate::scratch::Scratch::new().expect("a PostgreSQL database");
        let (a, b) = (
            crate::Db::connect(scratch.url()).expect("a"),
            crate::Db::connect(scratch.url()).expect("b"),
        );
        let mut heard = b.listen(&["kiln_feed"]).expect("listening");
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async {
            assert_eq!(heard.recv().await, Some(Notice::Listening));
            a.notify("kiln_feed", "hello").await.expect("sent");
            let got = tokio::time::timeout(std::time::Duration::from_secs(10), heard.recv()).await;
            assert_eq!(
                got.expect("heard in time"),
                Some(Notice::Heard {
                    channel: "kiln_feed".into(),
                    payload: "hello".into()
                })
            );
        });
    }
}
