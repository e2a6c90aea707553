//! JSON Schema validation of arguments and results: one way to compile a schema (2020-12,
//! formats checked) and to list every violation.

use serde_json::Value;

/// Compiles a tool's argument schema (JSON Schema 2020-12, formats checked).
pub fn compile_schema(
    schema: &Value,
) -> Result<jsonschema::Validator, jsonschema::ValidationError<'static>> {
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .should_validate_formats(true)
        .build(schema)
}

/// Every violation of `value` against a compiled schema, as `/path: reason`.
pub fn violations(validator: &jsonschema::Validator, value: &Value) -> Vec<String> {
    if validator.is_valid(value) {
        return Vec::new();
    }
    validator
        .iter_errors(value)
        .map(|e| {
            let path = e.instance_path().to_string();
            let path = if path.is_empty() {
                "/".to_string()
            } else {
                path
            };
            format!("{path}: {e}")
        })
        .collect()
}
