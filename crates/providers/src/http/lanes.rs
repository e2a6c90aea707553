//! Lanes: a few HTTP clients, each carrying at most [`STREAMS_PER_LANE`] requests at once.
//!
//! Over HTTP/2 a client keeps one connection per origin and multiplexes every request on it;
//! hyper does not open a second connection when the server's stream limit is reached, it
//! queues the request behind the others. A run waiting for a stream would then wait on other
//! runs' replies. So requests are spread over lanes, each a client of its own (and so a
//! connection of its own per origin): a request takes the first lane with room, and a new lane
//! is made when all are full. Over HTTP/1.1 a lane pools its connections as one client would.

use reqwest::Client;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Requests one lane carries at once: at most this many streams share one HTTP/2 connection.
/// RFC 9113 asks servers to allow at least 100 streams at once; the large providers allow 100
/// to 256.
pub const STREAMS_PER_LANE: usize = 100;

/// The lanes of one kind of client (TLS, or plain `http://`).
pub struct Lanes {
    make: fn() -> Client,
    lanes: Mutex<Vec<Lane>>,
}

struct Lane {
    client: Client,
    in_flight: Arc<AtomicUsize>,
}

/// A lane's place held by one request: given back when the request's response (and so its
/// stream) is dropped. Cloned into the response's extensions, so it lives as long as the body
/// is being read.
#[derive(Clone)]
pub struct Place {
    _held: Arc<Held>,
}

struct Held(Arc<AtomicUsize>);

impl Drop for Held {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Lanes {
    /// Lanes whose clients `make` builds (the first one at the first request).
    pub const fn new(make: fn() -> Client) -> Self {
        Lanes {
            make,
            lanes: Mutex::new(Vec::new()),
        }
    }

    /// A client with room for one more request, and the place taken in it.
    pub fn take(&self) -> (Client, Place) {
        let mut lanes = self.lanes.lock().unwrap_or_else(|e| e.into_inner());
        let free = lanes
            .iter()
            .position(|l| l.in_flight.load(Ordering::Relaxed) < STREAMS_PER_LANE);
        let index = match free {
            Some(i) => i,
            None => {
                lanes.push(Lane {
                    client: (self.make)(),
                    in_flight: Arc::new(AtomicUsize::new(0)),
                });
                lanes.len() - 1
            }
        };
        let lane = &lanes[index];
        lane.in_flight.fetch_add(1, Ordering::Relaxed);
        let place = Place {
            _held: Arc::new(Held(lane.in_flight.clone())),
        };
        (lane.client.clone(), place)
    }

    /// How many lanes have been made (each at most one connection per origin over HTTP/2).
    #[cfg(test)]
    fn count(&self) -> usize {
        self.lanes.lock().map(|l| l.len()).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client() -> Client {
        super::super::plain_client()
    }

    #[test]
    fn a_lane_carries_at_most_its_streams_and_its_places_come_back() {
        let lanes = Lanes::new(client);
        let held: Vec<_> = (0..STREAMS_PER_LANE).map(|_| lanes.take().1).collect();
        assert_eq!(lanes.count(), 1);
        let (_, extra) = lanes.take();
        assert_eq!(lanes.count(), 2, "the 101st request opens a second lane");
        drop(held);
        drop(extra);
        let again: Vec<_> = (0..STREAMS_PER_LANE).map(|_| lanes.take().1).collect();
        assert_eq!(
            lanes.count(),
            2,
            "freed places are taken again, no new lane"
        );
        drop(again);
    }

    #[test]
    fn a_place_cloned_into_a_response_is_held_until_the_last_clone_goes() {
        let lanes = Lanes::new(client);
        let (_, place) = lanes.take();
        let copy = place.clone();
        drop(place);
        let filled: Vec<_> = (1..STREAMS_PER_LANE).map(|_| lanes.take().1).collect();
        assert_eq!(lanes.count(), 1);
        let _ = lanes.take();
        assert_eq!(lanes.count(), 2, "the clone still holds its place");
        drop((copy, filled));
    }
}
