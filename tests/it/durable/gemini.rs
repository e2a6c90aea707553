//! A durable run whose model is on the Gemini wire: killed mid-run and resumed on the other
//! worker, it repeats no completed step, and the model turns restored from the journal still
//! carry their thought signatures (the mock refuses a Gemini 3 call turn without them).

use super::fixtures::{ALICE, Cluster, ok_output, three_steps};
use serde_json::{Value, json};

#[test]
#[ignore = "needs restate-server: run by .ci/run with KILN_RESTATE_SERVER set"]
fn a_gemini_run_whose_worker_is_killed_completes_on_the_other_without_repeating_steps() {
    let mut c = Cluster::start(&[("gemini", three_steps("g"))]);
    c.counter.hold("gc");
    let body = json!({"agent": "gemini", "input": "count", "wait": false});
    let sent = ok_output(
        "submit through B",
        c.api(1, ALICE, "POST", "/v1/runs", &[], Some(&body)),
    );
    let inv = sent["id"].as_str().expect("run id").to_string();
    c.counter
        .wait_until("the third tool step to start", |s| s.holding);
    let journal = c.restate.journal(&inv);
    let steps: Vec<&str> = journal
        .iter()
        .filter(|(t, n)| t == "Command: Run" && n != "tool-3-gemini_call_0")
        .map(|(_, n)| n.as_str())
        .collect();
    let completed = journal
        .iter()
        .filter(|(t, _)| t == "Notification: Run")
        .count();
    // Gemini sends calls without ids: kiln names them gemini_call_N, one per reply.
    let expected = [
        "model-1",
        "tool-1-gemini_call_0",
        "model-2",
        "tool-2-gemini_call_0",
        "model-3",
    ];
    assert_eq!(
        (steps.as_slice(), completed),
        (&expected[..], 5),
        "steps 1-5 journaled and completed before the kill: {journal:?}"
    );
    c.kill(0);
    c.counter.release();
    let wait = format!("/v1/runs/{inv}?wait=true");
    let done = ok_output("await through B", c.api(1, ALICE, "GET", &wait, &[], None));
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["report"]["answer"], "counted three");
    let counts = c.counter.counts("g");
    assert_eq!(
        counts["ga"].len(),
        1,
        "completed steps run once: {counts:?}"
    );
    assert_eq!(
        counts["gb"].len(),
        1,
        "completed steps run once: {counts:?}"
    );
    assert_eq!(
        counts["gc"].len(),
        2,
        "the step in flight ran again: {counts:?}"
    );
    assert_eq!(counts["gc"][0], format!("{inv}/tool-3-gemini_call_0"));
    let reqs = c.mock("gemini").requests();
    assert_eq!(reqs.len(), 4, "no model request was repeated");
    // The last request, made on worker B from the journal, sends each model turn back with
    // the signature the mock gave it (turn n's first call: kilnMockSig0000nx000).
    let contents = reqs[3]["body"]["contents"].as_array().expect("contents");
    let signatures: Vec<Value> = contents
        .iter()
        .filter(|c| c["role"] == "model")
        .map(|c| c["parts"][0]["thoughtSignature"].clone())
        .collect();
    assert_eq!(
        signatures,
        [
            "kilnMockSig00000x000",
            "kilnMockSig00001x000",
            "kilnMockSig00002x000"
        ]
    );
}
