//! What a tool's JSON Schema loses on Gemini's wire. kiln sends the schema whole as
//! `parametersJsonSchema` (no conversion to the OpenAPI subset of `parameters`), but Gemini
//! documents a subset of JSON Schema there; a keyword outside it (`pattern`, `minLength`,
//! `const`, `allOf`...) may be ignored by the model's decoding. kiln still validates every
//! call against the whole schema, so the loss is in guidance, never in checking: `kiln check`
//! says which keywords, where.

use serde_json::Value;

/// The keywords Gemini's JSON Schema support documents.
const DOCUMENTED: &[&str] = &[
    "type",
    "title",
    "description",
    "properties",
    "required",
    "additionalProperties",
    "propertyOrdering",
    "enum",
    "format",
    "minimum",
    "maximum",
    "items",
    "prefixItems",
    "minItems",
    "maxItems",
    "anyOf",
    "$ref",
    "$defs",
    "$id",
    "$anchor",
    "nullable",
];

/// Annotations that constrain nothing: losing them loses nothing.
const ANNOTATIONS: &[&str] = &["$schema", "$comment", "default", "examples", "deprecated"];

/// Keywords whose value is a map of subschemas.
const SCHEMA_MAPS: &[&str] = &["properties", "$defs", "definitions", "patternProperties"];
/// Keywords whose value is a subschema.
const SCHEMA_ONE: &[&str] = &[
    "items",
    "additionalProperties",
    "not",
    "contains",
    "if",
    "then",
    "else",
];
/// Keywords whose value is a list of subschemas.
const SCHEMA_LISTS: &[&str] = &["prefixItems", "anyOf", "oneOf", "allOf"];

/// The keywords of `schema` outside Gemini's documented subset, each with where it is
/// (`pattern at properties.sku`).
pub fn undocumented(schema: &Value) -> Vec<String> {
    let mut out = Vec::new();
    walk(schema, "", &mut out);
    out
}

fn walk(schema: &Value, path: &str, out: &mut Vec<String>) {
    let Some(obj) = schema.as_object() else {
        return;
    };
    let at = |k: &str| {
        if path.is_empty() {
            k.to_string()
        } else {
            format!("{path}.{k}")
        }
    };
    for (k, v) in obj {
        if !DOCUMENTED.contains(&k.as_str()) && !ANNOTATIONS.contains(&k.as_str()) {
            out.push(if path.is_empty() {
                k.clone()
            } else {
                format!("{k} at {path}")
            });
        }
        if SCHEMA_MAPS.contains(&k.as_str()) {
            for (name, sub) in v.as_object().into_iter().flatten() {
                walk(sub, &at(&format!("{k}.{name}")), out);
            }
        } else if SCHEMA_ONE.contains(&k.as_str()) {
            walk(v, &at(k), out);
        } else if SCHEMA_LISTS.contains(&k.as_str()) {
            for (i, sub) in v.as_array().into_iter().flatten().enumerate() {
                walk(sub, &at(&format!("{k}[{i}]")), out);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keywords_outside_the_subset_are_named_where_they_are() {
        let schema = json!({
            "type": "object", "$schema": "x", "additionalProperties": false,
            "properties": {
                "sku": {"type": "string", "pattern": "^SKU-", "description": "d"},
                "pattern": {"type": "integer", "minimum": 0, "multipleOf": 2},
                "tags": {"type": "array", "items": {"type": "string", "minLength": 1}, "uniqueItems": true},
                "either": {"anyOf": [{"const": 1}, {"type": "null"}]}
            },
            "required": ["sku"]
        });
        assert_eq!(
            undocumented(&schema),
            [
                "pattern at properties.sku",
                "multipleOf at properties.pattern",
                "minLength at properties.tags.items",
                "uniqueItems at properties.tags",
                "const at properties.either.anyOf[0]",
            ]
        );
        assert!(
            undocumented(
                &json!({"type": "object", "properties": {"x": {"type": "integer", "maximum": 3}}})
            )
            .is_empty()
        );
    }
}
