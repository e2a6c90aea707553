//! A tool's form over A2A: `elicit(...)` in a task's run puts the task in `input-required`
//! with the form's schema; the next message fills it (checked against the schema, a wrong
//! answer refused naming the field while the task still waits) or declines it, and the tool
//! goes on with the answer. And the files a tool returns, as an artifact of the task.

use super::{A2a, uuid};
use serde_json::{Value, json};

/// A message on `task` holding one data part.
fn data_answer(task: &Value, data: Value) -> Value {
    json!({"message": {"messageId": uuid(), "role": "ROLE_USER", "taskId": task["id"],
        "parts": [{"data": data}]}})
}

/// The tool results the model was sent, in order.
fn tool_results(a: &A2a) -> Vec<String> {
    a.mock
        .requests()
        .iter()
        .flat_map(|r| {
            r["body"]["messages"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter(|m| m["role"] == "tool")
        .filter_map(|m| m["content"].as_str().map(str::to_string))
        .collect()
}

#[test]
fn a2a_a_tools_form_is_input_required_and_the_next_message_fills_it() {
    let a = A2a::start(&["--a2a-wait", "10"], &[]);
    let task = a.send("host", "Book a table for Friday", None, &[]);
    assert_eq!(
        task["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{task}"
    );
    let asked = &task["status"]["message"];
    assert_eq!(
        asked["parts"][0]["text"], "How many seats on Friday?",
        "{asked}"
    );
    let form = &asked["parts"][1]["data"]["form"];
    assert_eq!(
        form["requestedSchema"]["properties"]["seats"]["type"], "integer",
        "{asked}"
    );
    assert_eq!(
        form["requestedSchema"]["required"],
        json!(["seats"]),
        "{asked}"
    );

    // A wrong answer is refused naming the field; the task still waits for the form.
    let (_, refused) = a.rpc(
        "host",
        "SendMessage",
        data_answer(&task, json!({"seats": "four"})),
        &[],
    );
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let why = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(why.contains("/seats"), "{refused}");
    let (_, got) = a.rpc("host", "GetTask", json!({"id": task["id"]}), &[]);
    assert_eq!(
        got["result"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{got}"
    );

    let (_, done) = a.rpc(
        "host",
        "SendMessage",
        data_answer(&task, json!({"seats": 4})),
        &[],
    );
    let done = &done["result"]["task"];
    assert_eq!(done["status"]["state"], "TASK_STATE_COMPLETED", "{done}");
    assert_eq!(
        done["artifacts"][0]["parts"][0]["text"],
        "Your table is booked."
    );
    assert_eq!(tool_results(&a), ["booked 4 seats on Friday"]);

    // Declined, the tool hears so and goes on without the fields.
    let other = a.send("host", "Book a table for Friday", None, &[]);
    assert_eq!(
        other["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{other}"
    );
    let declined = a.send("host", "decline", Some(&other), &[]);
    assert_eq!(
        declined["status"]["state"], "TASK_STATE_COMPLETED",
        "{declined}"
    );
    assert_eq!(
        tool_results(&a).last().map(String::as_str),
        Some("not booked (decline)")
    );
}

#[test]
fn a2a_a_remote_tools_form_is_put_to_the_person_behind_the_callers_task() {
    // kiln (caller, on its own A2A door) -> a2a_agent -> kiln (host, whose tool asks a form).
    let remote = A2a::start(&["--a2a-wait", "10"], &[]);
    let dir = super::client::caller(&format!("{}/a2a/host", remote.serve.url), None);
    let door = crate::doors::serve::Serve::start(dir.path(), &dir.path().join("k.db"), &[], &[]);
    let send = |message: Value| -> Value {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}});
        let (status, reply) = crate::common::post(
            &format!("{}/a2a/caller", door.url),
            &body,
            &[("A2A-Version", "1.0")],
        );
        assert_eq!(status, 200, "{reply}");
        reply["result"]["task"].clone()
    };
    let task = send(json!({"messageId": uuid(), "role": "ROLE_USER",
        "parts": [{"text": "Book a table for Friday"}]}));
    assert_eq!(
        task["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{task}"
    );
    let asked = &task["status"]["message"];
    assert_eq!(
        asked["parts"][0]["text"], "The agent \"remote\" asks: How many seats on Friday?",
        "{asked}"
    );
    let schema = &asked["parts"][1]["data"]["form"]["requestedSchema"];
    assert_eq!(
        schema["properties"]["seats"]["type"], "integer",
        "the remote form's fields: {asked}"
    );

    let done = send(
        json!({"messageId": uuid(), "role": "ROLE_USER", "taskId": task["id"],
        "parts": [{"data": {"seats": 2}}]}),
    );
    assert_eq!(done["status"]["state"], "TASK_STATE_COMPLETED", "{done}");
    assert_eq!(
        done["artifacts"][0]["parts"][0]["text"], "completed: Your table is booked.",
        "{done}"
    );
    assert_eq!(tool_results(&remote), ["booked 2 seats on Friday"]);
}

#[test]
fn a2a_files_a_tool_returns_are_an_artifact_of_the_task() {
    let a = A2a::start(&["--a2a-wait", "10"], &[]);
    let done = a.send("painter", "Draw a square", None, &[]);
    assert_eq!(done["status"]["state"], "TASK_STATE_COMPLETED", "{done}");
    let artifacts = done["artifacts"].as_array().expect("artifacts");
    assert_eq!(artifacts.len(), 2, "the files, then the answer: {done}");
    let files = &artifacts[0];
    assert_eq!(files["name"], "files from draw", "{done}");
    assert_eq!(
        files["parts"][0],
        json!({"raw": "iVBORw0KGgo=", "mediaType": "image/png"}),
        "{done}"
    );
    assert_eq!(
        files["parts"][1],
        json!({"text": "<svg/>", "mediaType": "image/svg+xml", "filename": "square.svg"}),
        "{done}"
    );
    assert_eq!(
        artifacts[1]["parts"][0]["text"], "Here is your square.",
        "{done}"
    );
}
