//! Messages, parts, tasks and the events of a stream.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Who sent a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Role {
    /// Not said (refused where a role is required).
    #[serde(rename = "ROLE_UNSPECIFIED")]
    Unspecified,
    /// The client's user.
    #[serde(rename = "ROLE_USER")]
    User,
    /// The agent.
    #[serde(rename = "ROLE_AGENT")]
    Agent,
}

/// One piece of a message or an artifact: exactly one of text, raw bytes (base64), a URL or
/// JSON data, with an optional file name and media type.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Part {
    /// Text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// A file's bytes, base64.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raw: Option<String>,
    /// A file's URL.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Structured data.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    /// Extra fields the sender attached.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    /// The file's name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
    /// The content's media type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
}

impl Part {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Part {
        Part {
            text: Some(text.into()),
            ..Part::default()
        }
    }

    /// A data part.
    pub fn data(data: Value) -> Part {
        Part {
            data: Some(data),
            media_type: Some("application/json".into()),
            ..Part::default()
        }
    }

    /// How many of the four contents the part holds (a valid part holds one).
    pub fn contents(&self) -> usize {
        [
            self.text.is_some(),
            self.raw.is_some(),
            self.url.is_some(),
            self.data.is_some(),
        ]
        .iter()
        .filter(|b| **b)
        .count()
    }
}

/// A message of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    /// The sender's id for it.
    pub message_id: String,
    /// The conversation it belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    /// The task it belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// Who sent it.
    pub role: Role,
    /// What it says.
    pub parts: Vec<Part>,
    /// Extra fields the sender attached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    /// Extensions it uses.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
    /// Tasks it refers to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reference_task_ids: Vec<String>,
}

impl Message {
    /// An agent's message of one text part.
    pub fn agent_text(id: String, text: impl Into<String>) -> Message {
        Message {
            message_id: id,
            context_id: None,
            task_id: None,
            role: Role::Agent,
            parts: vec![Part::text(text)],
            metadata: None,
            extensions: Vec::new(),
            reference_task_ids: Vec::new(),
        }
    }

    /// The message's text parts, joined by blank lines.
    pub fn text(&self) -> String {
        let texts: Vec<&str> = self
            .parts
            .iter()
            .filter_map(|p| p.text.as_deref())
            .collect();
        texts.join("\n\n")
    }
}

/// Where a task is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum TaskState {
    /// Not said.
    #[serde(rename = "TASK_STATE_UNSPECIFIED")]
    Unspecified,
    /// Received, not started.
    #[serde(rename = "TASK_STATE_SUBMITTED")]
    Submitted,
    /// Running.
    #[serde(rename = "TASK_STATE_WORKING")]
    Working,
    /// Finished with an answer.
    #[serde(rename = "TASK_STATE_COMPLETED")]
    Completed,
    /// Ended by an error.
    #[serde(rename = "TASK_STATE_FAILED")]
    Failed,
    /// Cancelled.
    #[serde(rename = "TASK_STATE_CANCELED")]
    Canceled,
    /// Waiting for the client's next message.
    #[serde(rename = "TASK_STATE_INPUT_REQUIRED")]
    InputRequired,
    /// Refused by the agent.
    #[serde(rename = "TASK_STATE_REJECTED")]
    Rejected,
    /// Waiting for credentials.
    #[serde(rename = "TASK_STATE_AUTH_REQUIRED")]
    AuthRequired,
}

impl TaskState {
    /// True once the task can change no more.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskState::Completed | TaskState::Failed | TaskState::Canceled | TaskState::Rejected
        )
    }

    /// True while the task waits for its client (input or credentials).
    pub fn is_interrupted(self) -> bool {
        matches!(self, TaskState::InputRequired | TaskState::AuthRequired)
    }

    /// The proto name (`TASK_STATE_COMPLETED`).
    pub fn name(self) -> &'static str {
        match self {
            TaskState::Unspecified => "TASK_STATE_UNSPECIFIED",
            TaskState::Submitted => "TASK_STATE_SUBMITTED",
            TaskState::Working => "TASK_STATE_WORKING",
            TaskState::Completed => "TASK_STATE_COMPLETED",
            TaskState::Failed => "TASK_STATE_FAILED",
            TaskState::Canceled => "TASK_STATE_CANCELED",
            TaskState::InputRequired => "TASK_STATE_INPUT_REQUIRED",
            TaskState::Rejected => "TASK_STATE_REJECTED",
            TaskState::AuthRequired => "TASK_STATE_AUTH_REQUIRED",
        }
    }

    /// The state a proto name names.
    pub fn from_name(name: &str) -> Option<TaskState> {
        serde_json::from_value(Value::String(name.to_string())).ok()
    }
}

/// A task's state, with the agent's message about it and when it was reached.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskStatus {
    /// The state.
    pub state: TaskState,
    /// The agent's message with it (the question of `input-required`, an error).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    /// When, RFC 3339.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
}

/// What a task produced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Artifact {
    /// Its id within the task.
    pub artifact_id: String,
    /// A name for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// What it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its content.
    pub parts: Vec<Part>,
    /// Extra fields.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

/// A unit of work: one kiln run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// Its id (the run's).
    pub id: String,
    /// Its conversation (the kiln session).
    pub context_id: String,
    /// Where it is.
    pub status: TaskStatus,
    /// What it produced.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<Artifact>,
    /// The messages of the task, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<Message>,
    /// Extra fields.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

/// A task's status changed (a stream's event).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusUpdate {
    /// The task.
    pub task_id: String,
    /// Its conversation.
    pub context_id: String,
    /// The new status.
    pub status: TaskStatus,
    /// Extra fields.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

/// A task's artifact grew or appeared (a stream's event).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ArtifactUpdate {
    /// The task.
    pub task_id: String,
    /// Its conversation.
    pub context_id: String,
    /// The artifact, or the chunk of it.
    pub artifact: Artifact,
    /// Appends to the artifact of the same id.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub append: bool,
    /// The artifact's last chunk.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub last_chunk: bool,
    /// Extra fields.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

/// One event of a stream, or the answer of `SendMessage` (a task or a message).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StreamResponse {
    /// The task as it stands.
    Task(Task),
    /// A message (a task-less answer).
    Message(Message),
    /// A status change.
    StatusUpdate(StatusUpdate),
    /// An artifact.
    ArtifactUpdate(ArtifactUpdate),
}

impl StreamResponse {
    /// The task's state this event leaves it in, when it says.
    pub fn state(&self) -> Option<TaskState> {
        match self {
            StreamResponse::Task(t) => Some(t.status.state),
            StreamResponse::StatusUpdate(u) => Some(u.status.state),
            _ => None,
        }
    }
}

/// Credentials a push notification is sent with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuthenticationInfo {
    /// The HTTP authentication scheme (`Bearer`).
    pub scheme: String,
    /// The credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials: Option<String>,
}

/// Where a task's updates are posted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PushConfig {
    /// Its id within the task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// The webhook.
    pub url: String,
    /// A token sent with each notification (`X-A2A-Notification-Token`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// How the webhook authenticates the notifications.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authentication: Option<AuthenticationInfo>,
    /// The tenant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_message_reads_and_writes_the_proto_json_names() {
        let v = json!({"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}], "contextId": "c"});
        let m: Message = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(m.role, Role::User);
        assert_eq!(m.text(), "hi");
        assert_eq!(serde_json::to_value(&m).unwrap(), v);
    }

    #[test]
    fn a_stream_event_is_one_named_member() {
        let ev = StreamResponse::StatusUpdate(StatusUpdate {
            task_id: "t".into(),
            context_id: "c".into(),
            status: TaskStatus {
                state: TaskState::Completed,
                message: None,
                timestamp: None,
            },
            metadata: None,
        });
        let v = serde_json::to_value(&ev).unwrap();
        assert_eq!(
            v,
            json!({"statusUpdate": {"taskId": "t", "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED"}}})
        );
        assert_eq!(ev.state(), Some(TaskState::Completed));
        assert_eq!(
            TaskState::from_name("TASK_STATE_CANCELED"),
            Some(TaskState::Canceled)
        );
        assert!(TaskState::from_name("completed").is_none());
    }

    #[test]
    fn a_part_counts_its_contents() {
        assert_eq!(Part::text("a").contents(), 1);
        let two = Part {
            text: Some("a".into()),
            url: Some("https://x".into()),
            ..Part::default()
        };
        assert_eq!(two.contents(), 2);
    }
}
