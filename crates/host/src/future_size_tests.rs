//! What a waiting run's future holds in place: its options once (boxed), not a copy in every
//! `async fn` layer between `Host::run` and the loop (9.9 KB in a debug build before, 4.5 KB
//! after; the release build's, 4.5 KB, is in BENCHMARKS.md, issue 63).

#[test]
fn a_runs_future_holds_its_options_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("t.rhai"), "tool(\"a\").handler(|x| 1);").expect("write");
    let host = crate::Host::builder()
        .scripts(dir.path())
        .stdlib(false)
        .build()
        .expect("host");
    let run = host.run("nobody", "p", Default::default());
    let size = std::mem::size_of_val(&run);
    let options = std::mem::size_of::<kiln_agent::RunOptions>();
    // Each layer that held the options by value added two copies of them.
    assert!(
        size < 4 * options + 3 * 1024,
        "a run's future is {size} bytes (the options {options})"
    );
}
