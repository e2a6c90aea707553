//! The host's admission refusals as HTTP answers: no run slot (`429` when the queue is full,
//! `503` with `Retry-After` after a wait too long or while shutting down) and grants beyond a
//! token's ceiling (`403`). The slots and the ceiling themselves are kiln-host's
//! (`kiln_host::admission`), shared with the Restate worker.

use crate::error::ApiError;
use kiln_host::admission::{BeyondCeiling, SlotRefused};

impl From<SlotRefused> for ApiError {
    fn from(refused: SlotRefused) -> Self {
        match refused {
            SlotRefused::Busy { retry_after } => ApiError::busy(retry_after),
            SlotRefused::Waited { retry_after, .. } => {
                let mut e = ApiError::unavailable(refused.to_string());
                e.retry_after = Some(retry_after);
                e
            }
            SlotRefused::ShuttingDown => ApiError::unavailable(refused.to_string()),
        }
    }
}

impl From<BeyondCeiling> for ApiError {
    fn from(beyond: BeyondCeiling) -> Self {
        ApiError::forbidden(&beyond.param, beyond.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::StatusCode;

    #[test]
    fn each_refusal_is_its_http_answer() {
        let busy = ApiError::from(SlotRefused::Busy { retry_after: 3 });
        assert_eq!(
            (busy.status, busy.retry_after),
            (StatusCode::TOO_MANY_REQUESTS, Some(3))
        );
        let waited = ApiError::from(SlotRefused::Waited {
            what: "the session".into(),
            waited_secs: 0.05,
            retry_after: 2,
        });
        assert_eq!(waited.status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(waited.retry_after, Some(2));
        assert!(waited.message.contains("the session"), "{}", waited.message);
        let down = ApiError::from(SlotRefused::ShuttingDown);
        assert_eq!(down.status, StatusCode::SERVICE_UNAVAILABLE);
        let beyond = ApiError::from(BeyondCeiling {
            param: "caps".into(),
            cap: "net".into(),
            ceiling: "[store]".into(),
            hint: "",
        });
        assert_eq!(beyond.status, StatusCode::FORBIDDEN);
        assert_eq!(beyond.param.as_deref(), Some("caps"));
        assert!(beyond.message.contains("\"net\""), "{}", beyond.message);
    }
}
