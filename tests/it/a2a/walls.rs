//! The A2A door keeps every wall: a task answered after a person's approval (`input-required`)
//! and seen as a kiln run in a kiln session; another actor's task is not found; a webhook
//! outside the egress policy is refused and one inside is called (through `--resolve`, on
//! 127.0.0.1); the cards list no tool the token could not call; bad requests get the
//! protocol's errors naming what is wrong.

use super::{A2a, Webhook, uuid};
use crate::common::*;
use serde_json::{Value, json};

const ANN: &str = "tok-ann-0123456789abcdef";
const BOB: &str = "tok-bob-0123456789abcdef";
const CARL: &str = "tok-carl-0123456789abcde";

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

/// Ann and Bob may use `store` (the clerk's refund), Carl may not.
fn with_tokens(args: &[&str]) -> A2a {
    let tokens = json!([
        {"token": ANN, "actor": "ann", "caps": ["store"]},
        {"token": BOB, "actor": "bob", "caps": ["store"]},
        {"token": CARL, "actor": "carl", "caps": []}
    ])
    .to_string();
    A2a::start(args, &[("KILN_TOKENS", &tokens)])
}

#[test]
fn a2a_task_waits_for_a_persons_approval_and_is_a_kiln_run_in_a_session() {
    let a = A2a::start(&["--a2a-wait", "10"], &[]);
    let (status, card) = get(&format!(
        "{}/a2a/clerk/.well-known/agent-card.json",
        a.serve.url
    ));
    assert_eq!(status, 200, "{card}");
    assert_eq!(card["name"], "clerk");
    assert_eq!(card["supportedInterfaces"][0]["protocolBinding"], "JSONRPC");
    assert_eq!(
        card["supportedInterfaces"][1]["protocolBinding"],
        "HTTP+JSON"
    );
    let skills: Vec<&str> = card["skills"]
        .as_array()
        .expect("skills")
        .iter()
        .filter_map(|s| s["name"].as_str())
        .collect();
    assert_eq!(
        skills,
        ["clerk", "refund"],
        "an open server's card lists the tools: {card}"
    );

    let task = a.send("clerk", "Refund order A-1", None, &[]);
    assert_eq!(
        task["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{task}"
    );
    let asked = &task["status"]["message"];
    assert!(
        asked["parts"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("refund")),
        "{asked}"
    );
    assert_eq!(asked["parts"][1]["data"]["tool"], "refund");
    assert_eq!(asked["parts"][1]["data"]["args"], json!({"order": "A-1"}));

    // An answer that is not yes or no is refused, naming what to send; the task still waits.
    let message = json!({"messageId": uuid(), "role": "ROLE_USER", "taskId": task["id"], "parts": [{"text": "maybe"}]});
    let (_, refused) = a.rpc("clerk", "SendMessage", json!({"message": message}), &[]);
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("yes or no")),
        "{refused}"
    );

    let done = a.send("clerk", "yes", Some(&task), &[]);
    assert_eq!(done["status"]["state"], "TASK_STATE_COMPLETED", "{done}");
    assert_eq!(
        done["artifacts"][0]["parts"][0]["text"],
        "Done: the refund of A-1 is settled."
    );
    let history: Vec<&str> = done["history"]
        .as_array()
        .expect("history")
        .iter()
        .map(|m| m["role"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        history,
        ["ROLE_USER", "ROLE_AGENT", "ROLE_USER", "ROLE_AGENT"],
        "the question, the answer and the reply are in the history: {done}"
    );

    // The task's run is a kiln run (the run log, /v1/runs), in the context's session.
    let run = done["metadata"]["kilnRuns"][0]
        .as_str()
        .expect("the task names its run");
    let (status, seen) = get(&format!("{}/v1/runs/{run}", a.serve.url));
    assert_eq!(status, 200, "{seen}");
    assert_eq!(seen["status"], "completed", "{seen}");
    let context = done["contextId"].as_str().expect("context");
    let (status, session) = get(&format!("{}/v1/sessions/{context}", a.serve.url));
    assert_eq!(status, 200, "the context is a kiln session: {session}");
    assert!(
        session.to_string().contains("Refund order A-1"),
        "{session}"
    );

    // An ended task takes no more messages: a new one in its context does.
    let message = json!({"messageId": uuid(), "role": "ROLE_USER", "taskId": done["id"], "parts": [{"text": "again"}]});
    let (_, ended) = a.rpc("clerk", "SendMessage", json!({"message": message}), &[]);
    assert_eq!(ended["error"]["code"], -32004, "{ended}");
}

#[test]
fn a2a_another_actors_task_is_not_found_and_no_token_is_refused_before_anything() {
    let a = with_tokens(&["--a2a-wait", "0.2"]);
    let ann = bearer(ANN);
    let bob = bearer(BOB);
    let task = a.send("helper", "Take your time", None, &[("authorization", &ann)]);
    assert_eq!(task["status"]["state"], "TASK_STATE_WORKING", "{task}");
    let id = task["id"].clone();
    for method in ["GetTask", "CancelTask", "SubscribeToTask"] {
        let (_, reply) = a.rpc(
            "helper",
            method,
            json!({"id": id}),
            &[("authorization", &bob)],
        );
        let text = reply.to_string();
        assert!(
            text.contains("-32001") && text.contains("Task not found"),
            "{method} as bob: {text}"
        );
    }
    let (_, listed) = a.rpc("helper", "ListTasks", json!({}), &[("authorization", &bob)]);
    assert_eq!(listed["result"]["totalSize"], 0, "{listed}");
    let (_, listed) = a.rpc("helper", "ListTasks", json!({}), &[("authorization", &ann)]);
    assert_eq!(listed["result"]["tasks"][0]["id"], id, "{listed}");
    // The same over HTTP+JSON.
    let url = format!(
        "{}/a2a/helper/tasks/{}",
        a.serve.url,
        id.as_str().unwrap_or("")
    );
    let (status, _, body) = http(
        "GET",
        &url,
        &[("authorization", &bob), ("A2A-Version", "1.0")],
        None,
    );
    assert_eq!(status, 404, "{body}");
    // Without a token: 401 before the body is read (it is not even JSON).
    let (status, headers, _) = http_raw(
        "POST",
        &format!("{}/a2a/helper", a.serve.url),
        &[],
        "{not json",
    );
    assert_eq!(status, 401);
    assert!(
        headers
            .iter()
            .any(|(k, v)| k == "www-authenticate" && v.starts_with("Bearer realm=\"kiln\"")),
        "a 401 says how to authenticate: {headers:?}"
    );
    // Ann's own task: cancelled once, then not cancelable.
    let (_, cancelled) = a.rpc(
        "helper",
        "CancelTask",
        json!({"id": id}),
        &[("authorization", &ann)],
    );
    assert_eq!(
        cancelled["result"]["status"]["state"], "TASK_STATE_CANCELED",
        "{cancelled}"
    );
    let (_, again) = a.rpc(
        "helper",
        "CancelTask",
        json!({"id": id}),
        &[("authorization", &ann)],
    );
    assert_eq!(again["error"]["code"], -32002, "{again}");
}

#[test]
fn a2a_webhooks_go_through_the_egress_policy() {
    let hook = Webhook::start();
    let scope = format!("net:hooks.example:{}", hook.port);
    let a = A2a::start(
        &[
            "--a2a-wait",
            "0.2",
            "--a2a-push",
            &scope,
            "--resolve",
            "hooks.example:127.0.0.1",
        ],
        &[],
    );
    let (_, card) = get(&format!(
        "{}/a2a/helper/.well-known/agent-card.json",
        a.serve.url
    ));
    assert_eq!(card["capabilities"]["pushNotifications"], true, "{card}");
    let allowed = format!("http://hooks.example:{}/hook", hook.port);
    let message =
        json!({"messageId": uuid(), "role": "ROLE_USER", "parts": [{"text": "Quick question"}]});
    let params = json!({"message": message, "configuration": {"taskPushNotificationConfig": {"url": allowed, "token": "hook-secret-1"}}});
    let (_, reply) = a.rpc("helper", "SendMessage", params, &[]);
    let task = &reply["result"]["task"];
    assert!(task.is_object(), "{reply}");
    let seen = hook.wait_for(4);
    assert!(seen.len() >= 4, "the webhook heard {} requests", seen.len());
    let (head, body) = &seen[0];
    assert!(head.starts_with("post /hook"), "{head}");
    assert!(
        head.contains("x-a2a-notification-token: hook-secret-1"),
        "{head}"
    );
    let first: Value = serde_json::from_slice(body).expect("a stream response");
    assert_eq!(
        first["task"]["id"], task["id"],
        "the first push is the task: {first}"
    );
    let last: Value = serde_json::from_slice(&seen[seen.len() - 1].1).expect("json");
    assert_eq!(
        last["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{last}"
    );

    // Outside the policy: another host, the address itself, another port; nothing is sent.
    let before = hook.requests().len();
    for url in [
        "http://elsewhere.example/hook".to_string(),
        format!("http://127.0.0.1:{}/hook", hook.port),
        format!("http://hooks.example:{}/hook", hook.port + 1),
    ] {
        let params = json!({"taskId": task["id"], "id": "c2", "url": url});
        let (_, refused) = a.rpc("helper", "CreateTaskPushNotificationConfig", params, &[]);
        assert_eq!(refused["error"]["code"], -32602, "{url}: {refused}");
        let msg = refused["error"]["message"].as_str().unwrap_or("");
        assert!(
            msg.contains("egress policy") && msg.contains("--a2a-push"),
            "{msg}"
        );
        assert_eq!(refused["error"]["data"]["field"], "params.url");
    }
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert_eq!(hook.requests().len(), before);

    // A server without --a2a-push offers none.
    let plain = A2a::start(&[], &[]);
    let params = json!({"taskId": "t", "url": allowed});
    let (_, refused) = plain.rpc("helper", "CreateTaskPushNotificationConfig", params, &[]);
    assert_eq!(refused["error"]["code"], -32003, "{refused}");
}

#[test]
fn a2a_cards_list_no_tool_the_token_could_not_call() {
    let a = with_tokens(&[]);
    let (status, public) = get(&format!(
        "{}/a2a/clerk/.well-known/agent-card.json",
        a.serve.url
    ));
    assert_eq!(status, 200, "the card is public: {public}");
    assert_eq!(
        public["skills"].as_array().map(Vec::len),
        Some(1),
        "who reads it is unknown: {public}"
    );
    assert_eq!(public["capabilities"]["extendedAgentCard"], true);
    assert_eq!(
        public["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"],
        "Bearer"
    );
    let names = |token: &str| -> Vec<String> {
        let (_, card) = a.rpc(
            "clerk",
            "GetExtendedAgentCard",
            json!({}),
            &[("authorization", &bearer(token))],
        );
        card["result"]["skills"]
            .as_array()
            .unwrap_or_else(|| panic!("{card}"))
            .iter()
            .filter_map(|s| s["name"].as_str().map(String::from))
            .collect()
    };
    assert_eq!(names(ANN), ["clerk", "refund"]);
    assert_eq!(
        names(CARL),
        ["clerk"],
        "Carl may not use store, so not refund"
    );
    let (status, _, _) = http(
        "GET",
        &format!("{}/a2a/clerk/extendedAgentCard", a.serve.url),
        &[("A2A-Version", "1.0")],
        None,
    );
    assert_eq!(status, 401);
}

#[test]
fn a2a_bad_requests_get_the_protocols_errors() {
    let a = A2a::start(&["--max-body", "4096"], &[]);
    let url = format!("{}/a2a/helper", a.serve.url);
    let v1 = [("A2A-Version", "1.0")];
    let call = |body: &str, headers: &[(&str, &str)]| -> Value {
        let (status, _, text) = http_raw("POST", &url, headers, body);
        assert!(status == 200 || status == 413, "{status}: {text}");
        serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text}"))
    };
    let send = r#"{"jsonrpc":"2.0","id":3,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"Quick question"}]}}}"#;
    let no_version = call(send, &[]);
    assert_eq!(no_version["error"]["code"], -32009, "{no_version}");
    assert_eq!(no_version["id"], 3);
    let twice = call(r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"GetTask"}"#, &v1);
    assert_eq!(twice["error"]["code"], -32700, "{twice}");
    let unknown = call(
        r#"{"jsonrpc":"2.0","id":4,"method":"tasks/get","params":{}}"#,
        &v1,
    );
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");
    let parts = call(
        r#"{"jsonrpc":"2.0","id":5,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[]}}}"#,
        &v1,
    );
    assert_eq!(
        parts["error"]["data"]["field"], "params.message.parts",
        "{parts}"
    );
    let page = call(
        r#"{"jsonrpc":"2.0","id":6,"method":"ListTasks","params":{"pageToken":"made-up"}}"#,
        &v1,
    );
    assert_eq!(page["error"]["data"]["field"], "params.pageToken", "{page}");
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":7,"method":"SendMessage","params":{{"message":{{"messageId":"m","role":"ROLE_USER","parts":[{{"text":"{}"}}]}}}}}}"#,
        "x".repeat(8192)
    );
    let too_big = call(&big, &v1);
    assert_eq!(too_big["error"]["code"], -32600, "{too_big}");
    // HTTP+JSON: problem details with the operation's status.
    let (status, headers, body) = http("GET", &format!("{url}/tasks/nope"), &v1, None);
    assert_eq!(status, 404, "{body}");
    assert!(
        headers
            .iter()
            .any(|(k, v)| k == "content-type" && v == "application/problem+json")
    );
    let problem: Value = serde_json::from_str(&body).expect("problem JSON");
    assert_eq!(
        problem["type"],
        "https://a2a-protocol.org/errors/task-not-found"
    );
    // An unknown agent is no endpoint at all.
    let (status, _, _) = http(
        "GET",
        &format!("{}/a2a/nobody/.well-known/agent-card.json", a.serve.url),
        &[],
        None,
    );
    assert_eq!(status, 404);
    // Still answering: a good request after the bad ones.
    let ok = call(send, &v1);
    assert_eq!(
        ok["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{ok}"
    );
}

#[test]
fn a2a_a_streamed_answer_arrives_in_pieces_then_whole() {
    let a = A2a::start(&[], &[]);
    let body = json!({"message": {"messageId": uuid(), "role": "ROLE_USER",
        "parts": [{"text": "Stream test message"}]}});
    let url = format!("{}/a2a/helper/message:stream", a.serve.url);
    let (status, headers, text) = http("POST", &url, &[("A2A-Version", "1.0")], Some(&body));
    assert_eq!(status, 200, "{text}");
    assert!(
        headers
            .iter()
            .any(|(k, v)| k == "content-type" && v.starts_with("text/event-stream"))
    );
    let events: Vec<Value> = text
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).expect("each event is JSON"))
        .collect();
    assert!(
        events[0]["task"]["id"].is_string(),
        "the stream starts with the task: {events:?}"
    );
    let pieces: String = events
        .iter()
        .filter(|e| e["artifactUpdate"].is_object() && e["artifactUpdate"]["lastChunk"] != true)
        .filter_map(|e| e["artifactUpdate"]["artifact"]["parts"][0]["text"].as_str())
        .collect();
    assert_eq!(
        pieces, "Streaming works.",
        "the pieces, appended: {events:?}"
    );
    let whole = events
        .iter()
        .find(|e| e["artifactUpdate"]["lastChunk"] == true)
        .expect("the whole answer");
    assert_eq!(
        whole["artifactUpdate"]["artifact"]["parts"][0]["text"],
        "Streaming works."
    );
    let last = events.last().expect("events");
    assert_eq!(
        last["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{last}"
    );
}

#[test]
fn a2a_files_reach_the_model_as_attachments() {
    let a = A2a::start(&["--a2a-wait", "10"], &[]);
    // A 1x1 PNG.
    let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
    let parts = json!([{"text": "Quick question"},
        {"raw": png, "mediaType": "image/png", "filename": "dot.png"}]);
    let message = json!({"messageId": uuid(), "role": "ROLE_USER", "parts": parts});
    let (_, reply) = a.rpc("helper", "SendMessage", json!({"message": message}), &[]);
    assert_eq!(
        reply["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{reply}"
    );
    let sent = a
        .mock
        .requests()
        .last()
        .cloned()
        .expect("the model was asked");
    assert!(
        sent.to_string()
            .contains(&format!("data:image/png;base64,{png}")),
        "the image reached the model: {sent}"
    );
    // A raw part without its media type is refused, naming it.
    let parts = json!([{"text": "Quick question"}, {"raw": png}]);
    let message = json!({"messageId": uuid(), "role": "ROLE_USER", "parts": parts});
    let (_, refused) = a.rpc("helper", "SendMessage", json!({"message": message}), &[]);
    assert_eq!(
        refused["error"]["data"]["field"], "params.message.parts[1]",
        "{refused}"
    );
}
