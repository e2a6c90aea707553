//! Each local chat template's documented tool-call output, recovered. Every sample says where
//! it comes from; the tools offered are the ones the samples call.

use super::super::call::TextCall;
use super::{Found, Offered, recover};
use kiln_core::model::CallArgs;
use kiln_registry::agent_spec::TextCallFormat as F;
use serde_json::{Value, json};
use std::sync::LazyLock;

static TOOLS: LazyLock<Vec<(&str, Value)>> = LazyLock::new(|| {
    let text = json!({"type": "string"});
    let props = |names: &[&str]| {
        let map: serde_json::Map<String, Value> = names
            .iter()
            .map(|n| (n.to_string(), text.clone()))
            .collect();
        json!({"type": "object", "properties": map})
    };
    vec![
        ("get_weather", props(&["city"])),
        ("get_current_weather", props(&["location", "format"])),
        ("get_current_temperature", props(&["location", "unit"])),
        ("get_product_name_by_PID", props(&["PID"])),
        ("brave_search", props(&["query"])),
        (
            "example_function_name",
            props(&["example_parameter_1", "example_parameter_2"]),
        ),
        (
            "get_forecast",
            json!({"type": "object", "properties": {
                "city": {"type": "string"},
                "days": {"type": "integer"},
                "hourly": {"type": ["boolean", "null"]},
                "fields": {"type": "array"},
            }}),
        ),
    ]
});

fn recover_in(text: &str, format: F) -> Found {
    let tools: Vec<Offered> = (TOOLS.iter())
        .map(|(name, schema)| Offered { name, schema })
        .collect();
    recover(text, format, &tools)
}

fn call(name: &str, args: Value) -> TextCall {
    TextCall {
        name: name.into(),
        args: CallArgs::parsed(args),
    }
}

/// The calls `format` recovers from `text`, and the text left around them.
fn calls(text: &str, format: F) -> (String, Vec<TextCall>) {
    match recover_in(text, format) {
        Found::Calls { text, calls } => (text, calls),
        other => panic!("expected calls in {text:?} with {format:?}, got {other:?}"),
    }
}

/// What the model is told of a call in `text` that cannot be read.
fn problem(text: &str, format: F) -> String {
    match recover_in(text, format) {
        Found::Malformed(p) => p,
        other => panic!("expected a malformed call in {text:?}, got {other:?}"),
    }
}

fn stays_text(text: &str, format: F) {
    assert_eq!(
        recover_in(text, format),
        Found::Nothing,
        "{format:?}: {text}"
    );
}

#[test]
fn qwen_2_5_and_hermes_tool_call_blocks() {
    // Qwen 2.5's chat template (as Ollama's qwen2.5 template renders it): "For each function
    // call, return a json object with function name and arguments within
    // <tool_call></tool_call> XML tags:\n<tool_call>\n{"name": <function-name>, "arguments":
    // <args-json-object>}\n</tool_call>". Hermes 2 Pro's template says the same.
    let text = "<tool_call>\n{\"name\": \"get_current_temperature\", \"arguments\": {\"location\": \"San Francisco, CA, USA\"}}\n</tool_call>";
    let want = vec![call(
        "get_current_temperature",
        json!({"location": "San Francisco, CA, USA"}),
    )];
    for format in [F::Auto, F::Hermes, F::Qwen] {
        assert_eq!(calls(text, format), (String::new(), want.clone()));
    }
    stays_text(text, F::Gemma);
    stays_text(text, F::Mistral);
}

#[test]
fn qwen3_coder_function_and_parameter_tags() {
    // Qwen3-Coder's chat template, verbatim from its system prompt: "If you choose to call a
    // function ONLY reply in the following format with NO suffix: ..." (vLLM's
    // qwen3coder_tool_parser reads the same).
    let text = "<tool_call>\n<function=example_function_name>\n<parameter=example_parameter_1>\nvalue_1\n</parameter>\n<parameter=example_parameter_2>\nThis is the value for the second parameter\nthat can span\nmultiple lines\n</parameter>\n</function>\n</tool_call>";
    let (rest, got) = calls(text, F::Qwen);
    assert_eq!(rest, "");
    assert_eq!(
        got,
        vec![call(
            "example_function_name",
            json!({
                "example_parameter_1": "value_1",
                "example_parameter_2": "This is the value for the second parameter\nthat can span\nmultiple lines"
            })
        )]
    );
    // A value is read as its schema declares it: text for a string, JSON otherwise (vLLM
    // converts by the tool's schema the same way); reasoning before the call stays text.
    let typed = "Checking.\n<tool_call>\n<function=get_forecast>\n<parameter=city>\n2024\n</parameter>\n<parameter=days>\n3\n</parameter>\n<parameter=fields>\n[\"rain\"]\n</parameter>\n</function>\n</tool_call>";
    let (rest, got) = calls(typed, F::Hermes);
    assert_eq!(rest, "Checking.");
    assert_eq!(
        got,
        vec![call(
            "get_forecast",
            json!({"city": "2024", "days": 3, "fields": ["rain"]})
        )]
    );
}

#[test]
fn function_tags_with_json_arguments() {
    // llama.cpp's Hermes 2 Pro parser (common/chat.cpp, common_chat_parse_hermes_2_pro) also
    // takes `<function=NAME>{json}</function>` and `<function name="NAME">`, which Functionary
    // v3.1 and models trained on it write.
    let text = "<function=get_weather>{\"city\": \"Paris\"}</function>\n<function name=\"get_weather\">{\"city\": \"Rome\"}</function>";
    let (_, got) = calls(text, F::Hermes);
    assert_eq!(
        got,
        vec![
            call("get_weather", json!({"city": "Paris"})),
            call("get_weather", json!({"city": "Rome"}))
        ]
    );
    // The same parser takes a tag inside a ```json fence; the emptied fence is not kept.
    let fenced = "Sure.\n```json\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n```";
    assert_eq!(
        calls(fenced, F::Hermes),
        ("Sure.".to_string(), got[..1].to_vec())
    );
}

#[test]
fn qwen_2_5_coder_tools_blocks_fences_and_lines() {
    // vLLM's qwen2_5_coder tool parser: Qwen2.5-Coder writes `<tools>` holding one JSON call,
    // a list, or one call per line.
    let tools = "<tools>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"London\"}}\n</tools>";
    let paris_london = vec![
        call("get_weather", json!({"city": "Paris"})),
        call("get_weather", json!({"city": "London"})),
    ];
    assert_eq!(calls(tools, F::Qwen).1, paris_london);
    // What issue 61 saw from Qwen2.5-Coder behind llama.cpp's server (whose Hermes parser
    // takes the same fence, common_chat_parse_hermes_2_pro's "```json" opening): the call in a
    // ```json fence, and two calls one a line.
    let fenced = "```json\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n```";
    for format in [F::Auto, F::Qwen, F::Json] {
        assert_eq!(calls(fenced, format).1, paris_london[..1].to_vec());
    }
    stays_text(fenced, F::Hermes);
    stays_text(fenced, F::Off);
    let lines = "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"London\"}}";
    assert_eq!(calls(lines, F::Auto), (String::new(), paris_london.clone()));
    // Prose around them stays the assistant's text.
    let prose = format!("I'll check both cities.\n{lines}\nOne moment.");
    assert_eq!(
        calls(&prose, F::Json),
        (
            "I'll check both cities.\nOne moment.".to_string(),
            paris_london.clone()
        )
    );
    // Other fences stay the assistant's text, and are not searched.
    let code = "Run this:\n```sh\n{\"name\": \"get_weather\", \"arguments\": {}}\n```";
    let text = format!("{code}\n{lines}");
    assert_eq!(calls(&text, F::Json), (code.to_string(), paris_london));
}

#[test]
fn mistral_tool_calls() {
    // llama.cpp's Mistral Nemo parser (common_chat_parse_mistral_nemo): `[TOOL_CALLS]` then a
    // JSON list of calls; vLLM's mistral_tool_parser: v11 tokenizers write
    // `[TOOL_CALLS]NAME[ARGS]{...}`.
    let text = "[TOOL_CALLS] [{\"name\": \"get_current_weather\", \"arguments\": {\"location\": \"Paris, France\", \"format\": \"celsius\"}}]";
    let want = call(
        "get_current_weather",
        json!({"location": "Paris, France", "format": "celsius"}),
    );
    assert_eq!(calls(text, F::Mistral).1, vec![want.clone()]);
    let v11 = "[TOOL_CALLS]get_current_weather[ARGS]{\"location\": \"Paris, France\", \"format\": \"celsius\"}";
    assert_eq!(calls(v11, F::Auto).1, vec![want]);
    stays_text(text, F::Llama);
}

#[test]
fn llama_3_json_and_built_in_calls() {
    // Meta's Llama 3.1 prompt format (and llama.cpp's common_chat_parse_llama_3_1): a JSON
    // function object `{"name": ..., "parameters": ...}` as the whole reply, or a built-in
    // tool after <|python_tag|> as `NAME.call(arg=value)`, ended by <|eom_id|>.
    let json_call = "{\"name\": \"get_current_weather\", \"parameters\": {\"location\": \"San Francisco, CA\"}}<|eot_id|>";
    assert_eq!(
        calls(json_call, F::Llama).1,
        vec![call(
            "get_current_weather",
            json!({"location": "San Francisco, CA"})
        )]
    );
    let built_in = "<|python_tag|>brave_search.call(query=\"current weather in Menlo Park, California\")<|eom_id|>";
    assert_eq!(
        calls(built_in, F::Llama).1,
        vec![call(
            "brave_search",
            json!({"query": "current weather in Menlo Park, California"})
        )]
    );
}

#[test]
fn llama_3_2_and_4_python_lists() {
    // Meta's Llama 3.2 prompt format: "[func_name1(params_name1=params_value1,
    // params_name2=params_value2...), func_name2(params)]"; vLLM's llama4_pythonic parser:
    // Llama 4 may wrap the list in <|python_start|> ... <|python_end|>.
    let list =
        "[get_weather(city=\"Paris\"), get_current_temperature(location='London', unit='celsius')]";
    let want = vec![
        call("get_weather", json!({"city": "Paris"})),
        call(
            "get_current_temperature",
            json!({"location": "London", "unit": "celsius"}),
        ),
    ];
    assert_eq!(calls(list, F::Llama).1, want);
    let wrapped = format!("<|python_start|>{list}<|python_end|>");
    assert_eq!(calls(&wrapped, F::Llama).1, want);
    stays_text(list, F::Hermes);
    stays_text(list, F::Json);
}

#[test]
fn deepseek_v3_r1_and_v3_1_calls() {
    // vLLM's deepseekv3_tool_parser, verbatim from its docstring (DeepSeek V3 and R1).
    let v3 = "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_current_weather\n```json\n{\"location\": \"Beijing\"}\n```<｜tool▁call▁end｜>\n<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_current_weather\n```json\n{\"location\": \"Beijing\"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜><｜end▁of▁sentence｜>";
    let beijing = call("get_current_weather", json!({"location": "Beijing"}));
    assert_eq!(
        calls(v3, F::DeepSeek),
        (String::new(), vec![beijing.clone(), beijing.clone()])
    );
    // vLLM's deepseekv31_tool_parser: V3.1 drops the type and the fence,
    // `<｜tool▁call▁begin｜>NAME<｜tool▁sep｜>ARGS<｜tool▁call▁end｜>`.
    let v3_1 = "Let me check.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_current_weather<｜tool▁sep｜>{\"location\": \"Beijing\"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>";
    assert_eq!(
        calls(v3_1, F::Auto),
        ("Let me check.".to_string(), vec![beijing.clone()])
    );
    // llama.cpp's DeepSeek R1 parser (common_chat_parse_deepseek_r1): distilled models drop
    // the call's own opening token and misspell the list's.
    let r1 = "<｜tool_calls_begin｜>function<｜tool▁sep｜>get_current_weather\n```json\n{\"location\": \"Beijing\"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>";
    assert_eq!(calls(r1, F::DeepSeek).1, vec![beijing]);
    stays_text(v3, F::Hermes);
}

#[test]
fn gemma_3_python_lists_json_and_tool_code_fences() {
    // Google's "Function calling with Gemma" (ai.google.dev/gemma/docs/capabilities/
    // function-calling): the Python-style prompt's response, and its JSON variant ({"name":
    // function name, "parameters": dictionary of argument name and its value}).
    let list = "[get_product_name_by_PID(PID=\"807ZPKBL9V\")]";
    let want = vec![call(
        "get_product_name_by_PID",
        json!({"PID": "807ZPKBL9V"}),
    )];
    assert_eq!(calls(list, F::Gemma), (String::new(), want.clone()));
    let json_form =
        "{\"name\": \"get_product_name_by_PID\", \"parameters\": {\"PID\": \"807ZPKBL9V\"}}";
    assert_eq!(calls(json_form, F::Gemma).1, want);
    // Google's Gemma meme generator guide (ai.google.dev/gemma/docs/meme-generator): "If a tool
    // is needed, Gemma will generate a code wrapped with ```tool_code```".
    let fenced = "I'll look it up.\n```tool_code\nprint(get_weather(city=\"Paris\"))\nget_forecast(city=\"Paris\", days=3, hourly=None, fields=[\"rain\", 'wind'])\n```";
    assert_eq!(
        calls(fenced, F::Gemma),
        (
            "I'll look it up.".to_string(),
            vec![
                call("get_weather", json!({"city": "Paris"})),
                call(
                    "get_forecast",
                    json!({"city": "Paris", "days": 3, "hourly": null, "fields": ["rain", "wind"]})
                ),
            ]
        )
    );
    stays_text(fenced, F::Hermes);
}

#[test]
fn gemma_4_and_function_gemma_calls() {
    // vLLM's gemma4_tool_parser (and Google's "Function calling with Gemma 4"):
    // `<|tool_call>call:NAME{key:<|"|>value<|"|>,num:42}<tool_call|>`, strings quoted <|"|>.
    let gemma4 =
        "<|tool_call>call:get_current_temperature{location:<|\"|>London<|\"|>}<tool_call|>";
    let london = call("get_current_temperature", json!({"location": "London"}));
    assert_eq!(
        calls(gemma4, F::Gemma),
        (String::new(), vec![london.clone()])
    );
    let typed = "<|tool_call>call:get_forecast{city:<|\"|>Paris, \"the city\"<|\"|>,days:3,hourly:true,fields:[<|\"|>rain<|\"|>,<|\"|>wind<|\"|>]}<tool_call|>";
    assert_eq!(
        calls(typed, F::Auto).1,
        vec![call(
            "get_forecast",
            json!({"city": "Paris, \"the city\"", "days": 3, "hourly": true, "fields": ["rain", "wind"]})
        )]
    );
    // Google's "FunctionGemma formatting and best practices" and vLLM's
    // functiongemma_tool_parser: `<start_function_call>call:NAME{key:<escape>value<escape>}
    // <end_function_call>`.
    let function_gemma = "<start_function_call>call:get_current_temperature{location:<escape>London<escape>}<end_function_call>";
    assert_eq!(calls(function_gemma, F::Gemma).1, vec![london]);
    stays_text(gemma4, F::Hermes);
}

#[test]
fn a_shape_that_cannot_be_read_is_told_to_the_model() {
    let cases = [
        (
            "```json\n{\"name\": \"get_weather\", \"arguments\": {\"city\": }\n```",
            F::Json,
            "the JSON call is not valid",
        ),
        (
            "Checking.\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}\nDone.",
            F::Qwen,
            "the JSON call is not valid",
        ),
        (
            "{\"name\": \"get_weather\", \"arguments\": [\"Paris\"]}",
            F::Json,
            "must be a JSON object, not a list",
        ),
        (
            "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\": Paris}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
            F::DeepSeek,
            "the arguments of \"get_weather\" are not valid JSON",
        ),
        (
            "```tool_code\nget_weather(\"Paris\")\n```",
            F::Gemma,
            "must be named: get_weather(arg=value)",
        ),
        (
            "[get_weather(city=Paris)]",
            F::Gemma,
            "`Paris` is not a literal value",
        ),
        (
            "<|tool_call>call:get_weather{city:<|\"|>Paris}<tool_call|>",
            F::Gemma,
            "not closed",
        ),
        (
            "<tool_call>\n<function=get_weather>\nParis\n</function>\n</tool_call>",
            F::Hermes,
            "neither JSON nor <parameter=NAME>",
        ),
        (
            "<|python_start|>[get_weather(city=\"Paris\"]<|python_end|>",
            F::Llama,
            "expected `)`",
        ),
    ];
    for (text, format, says) in cases {
        let p = problem(text, format);
        assert!(p.contains(says), "{text}: {p}");
        assert!(p.contains("No tool ran"), "{p}");
    }
}

#[test]
fn json_and_python_that_are_not_calls_stay_the_answer() {
    for text in [
        // JSON answers, and calls of tools that were not offered.
        "```json\n{\"name\": \"Paris\", \"country\": \"France\"}\n```",
        "```json\n{\"name\": \"delete_everything\", \"arguments\": {}}\n```",
        "{\"name\": \"get_weather\", \"description\": \"Weather\", \"parameters\": {}}",
        "[{\"name\": \"get_weather\"}]",
        // Code that is not a tool call, and lists that are not calls.
        "```python\nget_weather(city='Paris')\n```",
        "```js\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n```",
        "[1, 2, 3]",
        "[get_weather is the tool to use]",
        "The tool is called like get_weather(city=\"Paris\").",
        "Inline {\"name\": \"get_weather\", \"arguments\": {}} is prose.",
    ] {
        stays_text(text, F::Auto);
    }
}
