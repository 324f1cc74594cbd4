//! How a test side fails ([`TestError`]) and how a request is refused
//! ([`Refusal`]): the floor every engine file stands on.

use meshperf_protocol::msg::ErrorCode;

/// A test failure: the code the page matches on and a one-line message
/// saying what happened (what the controller shows).
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct TestError {
    /// The `code` of the `error` event.
    pub code: ErrorCode,
    /// What happened, in one line.
    pub message: String,
}

impl TestError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        TestError {
            code,
            message: message.into(),
        }
    }

    /// The side was cancelled (by its controller, or because it went away).
    pub fn cancelled() -> Self {
        TestError::new(ErrorCode::Cancelled, "test cancelled")
    }
}

/// A refused request: an error code for the page and a one-line message.
pub type Refusal = (ErrorCode, String);
