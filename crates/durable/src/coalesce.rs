//! A quick step's start, sent with its result.
//!
//! The SDK sends a `ctx.run`'s `Run` command as soon as the step starts, and the step's result
//! once its work is done. Restate appends what it reads to its log (a write and an fsync each
//! time) and acknowledges the result only once it is appended; a result read while the
//! command's append is still in flight waits for that one first. So a step whose work is
//! quicker than an append costs two appends in a row, where a step read whole costs one
//! (measured: 15 appends for a 7-step run against 10, `benches/durable_steps.rs`).
//!
//! The response body is therefore wrapped: a chunk that is nothing but `Run` commands is held
//! for up to [`HOLD`] and sent with whatever the handler writes next, which for a quick step is
//! its result. A longer step's command goes out at [`HOLD`], its append overlapping the rest of
//! the work as before. Everything else goes out at once, and the handler keeps running while a
//! chunk is held (the SDK drives it from the body's polls). Nothing waits on a `Run` command:
//! Restate answers it with nothing, and a retry runs a step with no result again either way.

use hyper::body::{Body, Bytes, Frame, SizeHint};
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

/// The longest a `Run` command waits for its step's result.
pub const HOLD: Duration = Duration::from_millis(5);

/// The service protocol's type of a `Run` command (`RunCommandMessage`).
const RUN_COMMAND: u16 = 0x0411;

/// True when `chunk` is whole protocol messages, at least one, all `Run` commands. A message is
/// an 8-byte header (big-endian: the type in the top 16 bits, flags, the length in the low 32)
/// and its body.
pub(crate) fn only_run_commands(chunk: &[u8]) -> bool {
    let mut at = 0usize;
    while at < chunk.len() {
        let Some(header) = chunk.get(at..at.saturating_add(8)) else {
            return false;
        };
        let ty = u16::from_be_bytes([header[0], header[1]]);
        let len = u32::from_be_bytes([header[4], header[5], header[6], header[7]]) as usize;
        if ty != RUN_COMMAND {
            return false;
        }
        at = at.saturating_add(8).saturating_add(len);
    }
    at == chunk.len() && !chunk.is_empty()
}

/// A response body whose lone `Run` commands wait up to [`HOLD`] for what follows them.
pub(crate) struct Coalesce<B> {
    inner: B,
    held: Option<Bytes>,
    /// When the held chunk goes out anyway.
    timer: Option<Pin<Box<tokio::time::Sleep>>>,
    /// A frame read after a held chunk that is not data (trailers): sent right after it.
    next: Option<Frame<Bytes>>,
    ended: bool,
}

impl<B> Coalesce<B> {
    pub(crate) fn new(inner: B) -> Self {
        Coalesce {
            inner,
            held: None,
            timer: None,
            next: None,
            ended: false,
        }
    }

    fn release(&mut self) -> Option<Bytes> {
        self.timer = None;
        self.held.take()
    }

    /// What to send of `data` now: it joins a held chunk, or is held itself, or goes alone.
    fn data(&mut self, data: Bytes) -> Option<Bytes> {
        match self.release() {
            Some(held) => {
                let mut both = Vec::with_capacity(held.len() + data.len());
                both.extend_from_slice(&held);
                both.extend_from_slice(&data);
                Some(Bytes::from(both))
            }
            None if only_run_commands(&data) => {
                self.held = Some(data);
                self.timer = Some(Box::pin(tokio::time::sleep(HOLD)));
                None
            }
            None => Some(data),
        }
    }
}

impl<B> Body for Coalesce<B>
where
    B: Body<Data = Bytes> + Unpin,
{
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.get_mut();
        if let Some(frame) = this.next.take() {
            return Poll::Ready(Some(Ok(frame)));
        }
        while !this.ended {
            // Polled whether a chunk is held or not: the SDK runs the handler from here.
            match Pin::new(&mut this.inner).poll_frame(cx) {
                Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
                    Ok(data) => {
                        if let Some(out) = this.data(data) {
                            return Poll::Ready(Some(Ok(Frame::data(out))));
                        }
                    }
                    Err(frame) => {
                        let Some(held) = this.release() else {
                            return Poll::Ready(Some(Ok(frame)));
                        };
                        this.next = Some(frame);
                        return Poll::Ready(Some(Ok(Frame::data(held))));
                    }
                },
                Poll::Ready(Some(Err(e))) => return Poll::Ready(Some(Err(e))),
                Poll::Ready(None) => this.ended = true,
                Poll::Pending => {
                    let Some(timer) = this.timer.as_mut() else {
                        return Poll::Pending;
                    };
                    ready!(timer.as_mut().poll(cx));
                    if let Some(held) = this.release() {
                        return Poll::Ready(Some(Ok(Frame::data(held))));
                    }
                }
            }
        }
        Poll::Ready(this.release().map(|b| Ok(Frame::data(b))))
    }

    fn is_end_stream(&self) -> bool {
        self.ended && self.held.is_none() && self.next.is_none()
    }

    fn size_hint(&self) -> SizeHint {
        let mut hint = self.inner.size_hint();
        let held = self.held.as_ref().map_or(0, |b| b.len() as u64);
        hint.set_lower(hint.lower() + held);
        if let Some(upper) = hint.upper() {
            hint.set_upper(upper + held);
        }
        hint
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::convert::Infallible;
    use tokio::sync::mpsc;

    fn message(ty: u16, body: &[u8]) -> Vec<u8> {
        let header = (u64::from(ty) << 48) | body.len() as u64;
        let mut m = header.to_be_bytes().to_vec();
        m.extend_from_slice(body);
        m
    }

    /// A step's start (a `Run` command) and a step's result (`ProposeRunCompletion`).
    fn run() -> Vec<u8> {
        message(RUN_COMMAND, b"\x58\x01\x62\x07model-1")
    }
    fn result() -> Vec<u8> {
        message(0x0005, b"result")
    }

    #[test]
    fn only_whole_run_commands_are_held() {
        assert!(only_run_commands(&run()));
        assert!(only_run_commands(&[run(), run()].concat()));
        // A result, an output, or a run with anything else.
        assert!(!only_run_commands(&result()));
        assert!(!only_run_commands(&[run(), message(0x0401, b"")].concat()));
        // Cut short, or nothing.
        let r = run();
        assert!(!only_run_commands(&r[..r.len() - 1]));
        assert!(!only_run_commands(&r[..5]));
        assert!(!only_run_commands(&[]));
    }

    /// A body whose chunks come from a channel, as the SDK's do.
    struct Chunks(mpsc::UnboundedReceiver<Vec<u8>>);

    impl Body for Chunks {
        type Data = Bytes;
        type Error = Infallible;
        fn poll_frame(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
            self.0
                .poll_recv(cx)
                .map(|c| c.map(|c| Ok(Frame::data(Bytes::from(c)))))
        }
    }

    async fn frame(body: &mut Coalesce<Chunks>) -> Option<Vec<u8>> {
        let f = std::future::poll_fn(|cx| Pin::new(&mut *body).poll_frame(cx)).await;
        f.map(|f| {
            f.ok()
                .and_then(|f| f.into_data().ok())
                .expect("data")
                .to_vec()
        })
    }

    #[tokio::test]
    async fn a_quick_steps_start_goes_with_its_result() {
        let (tx, rx) = mpsc::unbounded_channel();
        let mut body = Coalesce::new(Chunks(rx));
        // Both written before the body is read: the step took no time.
        tx.send(run()).expect("send");
        tx.send(result()).expect("send");
        assert_eq!(frame(&mut body).await, Some([run(), result()].concat()));
        // Anything else goes at once.
        tx.send(message(0x0401, b"out")).expect("send");
        assert_eq!(frame(&mut body).await, Some(message(0x0401, b"out")));
        // A held command goes before the end.
        tx.send(run()).expect("send");
        drop(tx);
        assert_eq!(frame(&mut body).await, Some(run()));
        assert_eq!(frame(&mut body).await, None);
        assert!(body.is_end_stream());
    }

    #[tokio::test]
    async fn a_slow_steps_start_goes_after_the_hold() {
        let (tx, rx) = mpsc::unbounded_channel();
        let mut body = Coalesce::new(Chunks(rx));
        tx.send(run()).expect("send");
        let started = std::time::Instant::now();
        assert_eq!(frame(&mut body).await, Some(run()));
        assert!(started.elapsed() >= HOLD, "{:?}", started.elapsed());
        tx.send(result()).expect("send");
        assert_eq!(frame(&mut body).await, Some(result()));
    }
}
