use super::*;

fn names(source: &str) -> Vec<(usize, usize, &'static str)> {
    deprecations(source)
        .iter()
        .map(|d| (d.line, d.column, d.rename.old))
        .collect()
}

#[test]
fn finds_each_old_spelling_at_its_name() {
    let src = "tool(\"t\")\n    .returns(\"string\")\n    .handler(|a| resource(\"u\", \"t\", \"text/plain\"));\n\
agent(\"a\").max_tool_iterations(3).ask([\"net\"]);\n\
mcp_server(\"m\").command(\"x\").env([\"HOME\"]);\n\
let f = form_request(\"m\", #{});\nlet b = resource_blob(\"u\", \"AA==\", \"a/b\");\n\
policy(\"p\").applies_to([\"*\"]).check(|c, ctx| ask(\"why\"));\n";
    assert_eq!(
        names(src),
        vec![
            (2, 6, "returns"),
            (3, 18, "resource"),
            (4, 12, "max_tool_iterations"),
            (4, 35, "ask"),
            (5, 30, "env"),
            (6, 9, "form_request"),
            (7, 9, "resource_blob"),
            (8, 46, "ask"),
        ]
    );
}

#[test]
fn the_names_that_keep_their_meaning_are_left_alone() {
    let src = "resource(\"file:///a\").handler(|u| resource_blob(\"AA==\", \"a/b\"));\n\
let home = env(\"HOME\");\nlet h = \"HOME\".env();\n";
    assert!(names(src).is_empty(), "{:?}", names(src));
}

#[test]
fn fix_leaves_strings_and_comments_alone() {
    let src = "// .returns( and ask([\"x\"]) in a comment\n\
/* form_request(\"m\", #{}) */\n\
tool(\"t\").description(\".returns(\\\"string\\\") and max_tool_iterations\")\n\
    .returns(\"string\") // returns\n\
    .handler(|a| `ask(\"x\") ${a}`);\n";
    let (fixed, done) = fix(src);
    assert_eq!(done.len(), 1);
    assert_eq!(
        fixed,
        src.replacen(".returns(\"string\") //", ".output(\"string\") //", 1)
    );
    assert!(deprecations(&fixed).is_empty());
}

#[test]
fn fix_counts_columns_in_characters() {
    let src = "let s = \"é→\"; tool(\"t\").returns(\"string\");\n";
    let (fixed, done) = fix(src);
    assert_eq!(done.len(), 1);
    assert_eq!(fixed, "let s = \"é→\"; tool(\"t\").output(\"string\");\n");
}

#[test]
fn a_function_of_the_script_is_its_own() {
    let src = "fn ask(x) { x }\nlet y = ask(1);\n";
    assert!(names(src).is_empty());
}

#[test]
fn a_script_that_does_not_parse_has_none() {
    assert!(deprecations("tool(\"t\").returns(").is_empty());
    assert_eq!(fix("let = ;").0, "let = ;");
}

#[test]
fn the_table_marks_every_rename_and_nothing_else() {
    for r in RENAMES.iter().chain(TEST_RENAMES) {
        assert!(
            crate::reference::find_all(r.on, r.old).any(|e| e.replaced_by == Some(r.new)),
            "the table lacks {} {} replaced by {}",
            r.on,
            r.old,
            r.new
        );
    }
    for e in crate::reference::entries() {
        if let Some(new) = e.replaced_by {
            let rename = Rename {
                on: e.on,
                old: e.name,
                new,
            };
            assert!(
                RENAMES.contains(&rename) || TEST_RENAMES.contains(&rename),
                "renames.rs lacks {} {} -> {new}",
                e.on,
                e.name
            );
        }
    }
}

#[test]
fn a_pipelines_output_is_its_result_and_a_tool_or_agents_output_is_never_flagged() {
    let src = "pipeline(\"p\").input(\"x\", \"string\")\n    .compute(\"y\", [\"x\"], \"t\")\n    .output(\"y\");\n\
tool(\"t\").param(\"x\", \"string\").output(\"string\").handler(|a| a.x);\n\
tool(\"u\").output(#{ type: \"object\" }).handler(|a| pipeline(\"q\").output(\"z\"));\n\
agent(\"a\").output(\"string\");\nagent(\"b\").provider(\"script\").output(#{ type: \"string\" });\n\
let p = pipeline(\"q\");\n";
    assert_eq!(names(src), vec![(3, 6, "output"), (5, 65, "output")]);
    let (fixed, done) = fix(src);
    assert_eq!(done.len(), 2);
    assert!(fixed.contains("    .result(\"y\");\n"), "{fixed}");
    assert!(fixed.contains("pipeline(\"q\").result(\"z\")"), "{fixed}");
    assert_eq!(fixed.matches(".output(").count(), 4, "{fixed}");
    assert!(deprecations(&fixed).is_empty());
}

#[test]
fn a_pipeline_of_the_scripts_own_or_behind_a_variable_is_not_flagged() {
    let own = "fn pipeline(n) { tool(n) }\npipeline(\"p\").output(\"string\");\n";
    assert!(names(own).is_empty(), "{:?}", names(own));
    let held = "let p = pipeline(\"p\").input(\"x\", \"string\");\np.output(\"x\");\n";
    assert!(names(held).is_empty(), "{:?}", names(held));
}

#[test]
fn an_http_timeout_ms_option_is_flagged_and_fixed_to_timeout() {
    let src = "let a = http_get(\"http://127.0.0.1/\", #{ timeout_ms: 500, headers: #{} });\n\
let b = http_post(\"http://127.0.0.1/\", #{ timeout_ms: 1 }, #{ \"timeout_ms\": 2 });\n\
let c = \"http://127.0.0.1/\".http_get(#{ max_bytes: 9, timeout_ms: t });\n\
// http_get(u, #{ timeout_ms: 5 }) in a comment\n\
let d = other(\"u\", #{ timeout_ms: 5 });\nlet e = #{ timeout_ms: 5 };\n";
    assert_eq!(
        names(src),
        vec![
            (1, 42, "timeout_ms"),
            (2, 63, "timeout_ms"),
            (3, 55, "timeout_ms"),
        ]
    );
    let found = deprecations(src);
    assert_eq!(
        found[0].message(),
        "`http_get(...)`'s option `timeout_ms` is deprecated: write `timeout` (a duration with its unit: \"5s\") (`kiln check --fix` rewrites it)"
    );
    assert!(found.iter().all(|d| d.fixable));
    let (fixed, done) = fix(src);
    // Three keys renamed, then the two numbers they held written with their unit.
    assert_eq!(done.len(), 5);
    let want = src
        .replacen("#{ timeout_ms: 500", "#{ timeout: \"500ms\"", 1)
        .replacen("#{ \"timeout_ms\": 2", "#{ \"timeout\": \"2ms\"", 1)
        .replacen("timeout_ms: t", "timeout: t", 1);
    assert_eq!(fixed, want);
    assert!(deprecations(&fixed).is_empty());
}

#[test]
fn a_bare_number_of_milliseconds_is_flagged_and_written_with_its_unit() {
    let src = "tool(\"t\").timeout(5000).handler(|a| http_get(a.u, #{ timeout: 1_500 }));\n\
evaluation(\"e\").check(within_duration(120000));\n\
agent(\"a\").code_mode(#{ timeout: 250 });\n\
pipeline(\"p\").timeout(\"5m\");\nlet t = 9; tool(\"u\").timeout(t);\n\
// .timeout(5000) in a comment\n";
    let found = deprecations(src);
    let seen: Vec<(usize, usize, String)> = found
        .iter()
        .map(|d| {
            (
                d.line,
                d.column,
                d.millis.as_ref().expect("millis").duration.clone(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        vec![
            (1, 19, "5s".to_string()),
            (1, 63, "1500ms".to_string()),
            (2, 39, "2m".to_string()),
            (3, 34, "250ms".to_string()),
        ]
    );
    assert_eq!(
        found[0].message(),
        "`.timeout(5000)` is deprecated: write `.timeout(\"5s\")`: a bare number here is milliseconds; a duration says its unit, and a bare number is to mean seconds, as on the command line (`kiln check --fix` rewrites it)"
    );
    assert!(
        found[1].message().starts_with(
            "`http_get(...)`'s option `timeout: 1_500` is deprecated: write `timeout: \"1500ms\"`"
        ),
        "{}",
        found[1].message()
    );
    let (fixed, done) = fix(src);
    assert_eq!(done.len(), 4);
    let want = src
        .replacen(".timeout(5000)", ".timeout(\"5s\")", 1)
        .replacen("timeout: 1_500", "timeout: \"1500ms\"", 1)
        .replacen("within_duration(120000)", "within_duration(\"2m\")", 1)
        .replacen("timeout: 250", "timeout: \"250ms\"", 1);
    assert_eq!(fixed, want);
    assert!(deprecations(&fixed).is_empty());
}

#[test]
fn a_timeout_ms_whose_meaning_would_change_is_flagged_but_left() {
    let src = "http_get(\"u\", #{ timeout_ms: \"500\" });\nhttp_get(\"u\", #{ timeout_ms: 0 });\n\
http_get(\"u\", #{ timeout: \"1s\", timeout_ms: 500 });\n";
    let found = deprecations(src);
    assert_eq!(found.len(), 3);
    assert!(
        found
            .iter()
            .all(|d| !d.fixable && !d.message().contains("--fix"))
    );
    let (fixed, done) = fix(src);
    assert!(done.is_empty());
    assert_eq!(fixed, src);
}

#[test]
fn call_tool_is_renamed_in_test_files_only() {
    let src = "test(\"t\", || { let r = call_tool(\"add\", #{ a: 1 }, #{ caps: [] }); });\n";
    assert!(
        deprecations(src).is_empty(),
        "a script's call_tool is its own"
    );
    let found = test_deprecations(src);
    assert_eq!(found.len(), 1);
    assert_eq!((found[0].line, found[0].column), (1, 24));
    assert_eq!(found[0].rename.new, "try_call_tool");
    let (fixed, _) = fix_test(src);
    assert_eq!(fixed, src.replacen("call_tool(", "try_call_tool(", 1));
    assert!(test_deprecations(&fixed).is_empty());
    assert_eq!(fix(src).0, src);
}
