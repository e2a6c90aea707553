//! What goes wrong: a JSON-RPC error answered to the client ([`RpcError`]), and what ends the
//! connection ([`AcpError`]).

use serde_json::{Value, json};

/// JSON-RPC 2.0's and ACP's error codes.
pub mod code {
    /// The line is not JSON.
    pub const PARSE_ERROR: i64 = -32700;
    /// Not a JSON-RPC 2.0 request.
    pub const INVALID_REQUEST: i64 = -32600;
    /// No such method.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// A parameter is missing or wrong.
    pub const INVALID_PARAMS: i64 = -32602;
    /// The agent failed.
    pub const INTERNAL_ERROR: i64 = -32603;
    /// ACP: no such session.
    pub const RESOURCE_NOT_FOUND: i64 = -32002;
}

/// An error answered to a request: its code, message and data.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    /// The JSON-RPC code.
    pub code: i64,
    /// What went wrong, for a person.
    pub message: String,
    /// More, for a program (the parameter's path).
    pub data: Option<Value>,
}

impl RpcError {
    /// A parameter at `path` (`sessionId`, `prompt[2].text`) is missing or wrong.
    pub fn invalid_params(path: &str, why: &str) -> RpcError {
        RpcError {
            code: code::INVALID_PARAMS,
            message: format!("Invalid params: params.{path}: {why}"),
            data: Some(json!({"path": format!("params.{path}")})),
        }
    }

    /// No session `id` here (named by the parameter at `path`).
    pub fn no_session(path: &str, id: &str) -> RpcError {
        RpcError {
            code: code::RESOURCE_NOT_FOUND,
            message: format!("Resource not found: params.{path}: no session \"{id}\""),
            data: Some(json!({"path": format!("params.{path}"), "sessionId": id})),
        }
    }

    /// An error of `code` with `message` and no data.
    pub fn new(code: i64, message: impl Into<String>) -> RpcError {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// The error object of a response.
    pub fn to_json(&self) -> Value {
        let mut e = json!({"code": self.code, "message": self.message});
        if let Some(data) = &self.data {
            e["data"] = data.clone();
        }
        e
    }
}

/// Why the connection ended with an error.
#[derive(Debug, thiserror::Error)]
pub enum AcpError {
    /// Reading stdin or writing stdout failed.
    #[error("the ACP connection failed: {0}")]
    Io(#[from] std::io::Error),
    /// The agent to serve is not defined.
    #[error("{0}")]
    Agent(String),
}
