//! DSL params -> JSON Schema 2020-12, and the provider export formats.

pub mod validate;

use serde_json::{Map, Value, json};

/// The option keys a `.param(...)` map may hold.
pub const PARAM_KEYS: &[&str] = &[
    "desc",
    "description",
    "default",
    "enum",
    "items",
    "properties",
    "min",
    "max",
    "min_length",
    "max_length",
    "pattern",
    "format",
    "min_items",
    "max_items",
    "nullable",
    "optional",
    "type",
];

/// The param type names the DSL accepts.
pub const PARAM_TYPES: &[&str] = &[
    "string", "integer", "number", "float", "boolean", "array", "object",
];

/// One compiled parameter: its JSON Schema and whether it is required.
#[derive(Debug, Clone, PartialEq)]
pub struct Param {
    /// Property name (any string; need not be an identifier).
    pub name: String,
    /// JSON Schema of the property.
    pub schema: Value,
    /// Required unless `optional: true` or a `default` is given.
    pub required: bool,
}

/// Maps a DSL type name to a JSON Schema type.
pub fn json_type(name: &str) -> Result<&'static str, String> {
    Ok(match name {
        "string" => "string",
        "integer" | "int" => "integer",
        "number" | "float" => "number",
        "boolean" | "bool" => "boolean",
        "array" => "array",
        "object" | "map" => "object",
        other => {
            return Err(format!(
                "unknown param type \"{other}\" (expected one of: {})",
                PARAM_TYPES.join(", ")
            ));
        }
    })
}

/// Builds one param's schema from its type and option map (already converted to JSON).
///
/// `path` names the param for error messages (`prefs.size`).
pub fn build_param(
    path: &str,
    type_name: &str,
    options: &Map<String, Value>,
) -> Result<(Value, bool), String> {
    let ty = json_type(type_name).map_err(|e| format!("param \"{path}\": {e}"))?;
    let mut s = Map::new();
    s.insert("type".into(), json!(ty));
    let mut required = true;
    for (key, value) in options {
        let opt = ParamOption {
            path,
            key,
            value,
            ty,
        };
        match key.as_str() {
            "type" => {}
            "default" => {
                s.insert("default".into(), value.clone());
                required = false;
            }
            "optional" => required = !opt.flag()?,
            "items" => {
                s.insert("items".into(), opt.items()?);
            }
            "properties" => opt.properties(&mut s)?,
            other if PARAM_KEYS.contains(&other) => opt.keyword(&mut s)?,
            other => {
                return Err(format!(
                    "param \"{path}\": unknown option key `{other}`{} (expected one of: {})",
                    crate::error::suggest::hint(other, PARAM_KEYS.iter().copied()),
                    PARAM_KEYS.join(", ")
                ));
            }
        }
    }
    null_in_nullable_enum(&mut s);
    Ok((Value::Object(s), required))
}

/// A nullable enum must list null too, or null fails the enum while the type allows it.
fn null_in_nullable_enum(s: &mut Map<String, Value>) {
    let nullable = matches!(s.get("type"), Some(Value::Array(ts)) if ts.contains(&json!("null")));
    if let (true, Some(Value::Array(e))) = (nullable, s.get_mut("enum"))
        && !e.contains(&Value::Null)
    {
        e.push(Value::Null);
    }
}

/// One `key: value` of a param's option map, with what checking it needs: the param's path
/// for the error and its JSON type, which decides what `min`, `max`, `items` mean.
struct ParamOption<'a> {
    path: &'a str,
    key: &'a str,
    value: &'a Value,
    ty: &'static str,
}

impl ParamOption<'_> {
    /// The error naming this option: `param "p": option `key` <what>`.
    fn err(&self, what: &str) -> String {
        format!("param \"{}\": option `{}` {what}", self.path, self.key)
    }

    /// The option's value as a flag (`optional`, `nullable`).
    fn flag(&self) -> Result<bool, String> {
        (self.value.as_bool()).ok_or_else(|| self.err("must be true or false"))
    }

    /// The option's value as text (`desc`, `pattern`, `format`).
    fn text(&self) -> Result<&str, String> {
        (self.value.as_str()).ok_or_else(|| self.err("must be a string"))
    }

    /// The options that each set one schema keyword from their value, checked first.
    fn keyword(&self, s: &mut Map<String, Value>) -> Result<(), String> {
        let (kw, v) = match self.key {
            "desc" | "description" => ("description", json!(self.text()?)),
            "nullable" if self.flag()? => ("type", json!([self.ty, "null"])),
            "nullable" => return Ok(()),
            "enum" => {
                let items = (self.value.as_array()).ok_or_else(|| self.err("must be an array"))?;
                if items.is_empty() {
                    return Err(self.err("must not be empty"));
                }
                ("enum", self.value.clone())
            }
            "pattern" => {
                let p = self.text()?;
                regex::Regex::new(p)
                    .map_err(|e| self.err(&format!("is not a valid regex: {e}")))?;
                ("pattern", json!(p))
            }
            "format" => ("format", json!(self.text()?)),
            "min" | "max" => (self.bound()?, self.value.clone()),
            _ => (self.count()?, self.value.clone()),
        };
        s.insert(kw.into(), v);
        Ok(())
    }

    /// `min`/`max`: a number, whose keyword depends on the type (length, items, properties,
    /// or value).
    fn bound(&self) -> Result<&'static str, String> {
        if !self.value.is_number() {
            return Err(self.err("must be a number"));
        }
        Ok(match (self.ty, self.key) {
            ("string", "min") => "minLength",
            ("string", _) => "maxLength",
            ("array", "min") => "minItems",
            ("array", _) => "maxItems",
            ("object", "min") => "minProperties",
            ("object", _) => "maxProperties",
            (_, "min") => "minimum",
            _ => "maximum",
        })
    }

    /// `min_length`, `max_length`, `min_items`, `max_items`: a count, named for its keyword.
    fn count(&self) -> Result<&'static str, String> {
        if self.value.as_u64().is_none() {
            return Err(self.err("must be a non-negative integer"));
        }
        Ok(match self.key {
            "min_length" => "minLength",
            "max_length" => "maxLength",
            "min_items" => "minItems",
            _ => "maxItems",
        })
    }

    /// `items`: an array's element schema, from a type name or a nested param map.
    fn items(&self) -> Result<Value, String> {
        if self.ty != "array" {
            return Err(self.err("only applies to arrays"));
        }
        Ok(match self.value {
            Value::String(t) => json!({ "type": json_type(t).map_err(|e| self.err(&e))? }),
            Value::Object(m) => nested(&format!("{}[]", self.path), m)?.0,
            _ => return Err(self.err("must be a type name or a param map")),
        })
    }

    /// `properties`: an object's named params, merged into its schema as `object_schema`
    /// writes them (properties, required, no others).
    fn properties(&self, s: &mut Map<String, Value>) -> Result<(), String> {
        if self.ty != "object" {
            return Err(self.err("only applies to objects"));
        }
        let props = (self.value.as_object()).ok_or_else(|| self.err("must be a map of params"))?;
        let mut params = Vec::new();
        for (name, p) in props {
            let path = format!("{}.{name}", self.path);
            let m = p.as_object().ok_or_else(|| {
                format!("param \"{path}\": must be a param map with a `type` key")
            })?;
            let (schema, required) = nested(&path, m)?;
            params.push(Param {
                name: name.clone(),
                schema,
                required,
            });
        }
        let obj = object_schema(&params);
        for (k, v) in obj.as_object().into_iter().flatten() {
            if k != "type" {
                s.insert(k.clone(), v.clone());
            }
        }
        Ok(())
    }
}

fn nested(path: &str, m: &Map<String, Value>) -> Result<(Value, bool), String> {
    let ty = m
        .get("type")
        .and_then(Value::as_str)
        .ok_or_else(|| format!("param \"{path}\": a nested param map needs a `type` key"))?;
    build_param(path, ty, m)
}

/// The schema `.output(...)` declares, in the params' type language: a type name
/// (`"integer"`), a param map with a `type` key (`#{ type: "array", items: "string" }`), or a
/// map of named fields without one (`#{ sum: "integer", note: #{ type: "string", optional:
/// true } }`), which is an object with those properties.
pub fn returns_schema(spec: &Value) -> Result<Value, String> {
    match spec {
        Value::String(ty) => build_param("returns", ty, &Map::new()).map(|(s, _)| s),
        Value::Object(m) if m.get("type").is_some_and(Value::is_string) => {
            nested("returns", m).map(|(s, _)| s)
        }
        Value::Object(fields) => {
            let mut params = Vec::new();
            for (name, field) in fields {
                let path = format!("returns.{name}");
                let (schema, required) = match field {
                    Value::String(ty) => build_param(&path, ty, &Map::new())?,
                    Value::Object(m) => nested(&path, m)?,
                    _ => {
                        return Err(format!(
                            "param \"{path}\": must be a type name or a param map"
                        ));
                    }
                };
                params.push(Param {
                    name: name.clone(),
                    schema,
                    required,
                });
            }
            Ok(object_schema(&params))
        }
        _ => Err("output: expected a type name or a map".into()),
    }
}

/// The object schema of an ordered list of params (unknown properties rejected).
pub fn object_schema(params: &[Param]) -> Value {
    let mut props = Map::new();
    let mut required = Vec::new();
    for p in params {
        props.insert(p.name.clone(), p.schema.clone());
        if p.required {
            required.push(json!(p.name));
        }
    }
    json!({
        "type": "object",
        "properties": props,
        "required": required,
        "additionalProperties": false,
    })
}

/// Provider export formats of a tool definition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `{name, description, parameters}`.
    Intermediate,
    /// Anthropic Messages `{name, description, input_schema}`.
    Anthropic,
    /// OpenAI Chat Completions `{type: "function", function: {...}}`.
    OpenAi,
    /// OpenAI strict mode (structured outputs) rules applied.
    OpenAiStrict,
    /// Ollama native `/api/chat` tools.
    Ollama,
}

impl Format {
    /// All format names, for help and completion.
    pub const NAMES: &'static [&'static str] = &[
        "intermediate",
        "anthropic",
        "openai",
        "openai-strict",
        "ollama",
    ];

    /// Parses a format name.
    pub fn parse(name: &str) -> Option<Format> {
        Some(match name {
            "intermediate" => Format::Intermediate,
            "anthropic" => Format::Anthropic,
            "openai" => Format::OpenAi,
            "openai-strict" | "openai_strict" => Format::OpenAiStrict,
            "ollama" => Format::Ollama,
            _ => return None,
        })
    }
}

/// A tool definition in an export format, plus warnings about anything dropped.
pub fn export(
    name: &str,
    description: &str,
    schema: &Value,
    format: Format,
) -> (Value, Vec<String>) {
    let mut warnings = Vec::new();
    let def = match format {
        Format::Intermediate => {
            json!({"name": name, "description": description, "parameters": schema})
        }
        Format::Anthropic => {
            json!({"name": name, "description": description, "input_schema": schema})
        }
        Format::OpenAi | Format::Ollama => json!({
            "type": "function",
            "function": {"name": name, "description": description, "parameters": schema},
        }),
        Format::OpenAiStrict => {
            let strict = strictify(schema, "", &mut warnings);
            json!({
                "type": "function",
                "function": {"name": name, "description": description, "parameters": strict, "strict": true},
            })
        }
    };
    let warnings = warnings
        .into_iter()
        .map(|w| format!("tool \"{name}\": {w}"))
        .collect();
    (def, warnings)
}

/// Keywords OpenAI strict mode rejects.
const STRICT_UNSUPPORTED: &[&str] = &[
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "default",
    "format",
    "minimum",
    "maximum",
    "pattern",
];

fn strictify(schema: &Value, path: &str, warnings: &mut Vec<String>) -> Value {
    let Some(m) = schema.as_object() else {
        return schema.clone();
    };
    let mut out = Map::new();
    for (k, v) in m {
        if STRICT_UNSUPPORTED.contains(&k.as_str()) {
            let at = if path.is_empty() { "/" } else { path };
            warnings.push(format!("openai-strict dropped `{k}` at {at}"));
            continue;
        }
        match k.as_str() {
            "items" => {
                out.insert(k.clone(), strictify(v, &format!("{path}/items"), warnings));
            }
            "properties" => {}
            _ => {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    if let Some(props) = m.get("properties").and_then(Value::as_object) {
        let required: Vec<&str> = m
            .get("required")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut new_props = Map::new();
        for (name, p) in props {
            let mut ps = strictify(p, &format!("{path}/{name}"), warnings);
            if !required.contains(&name.as_str()) {
                ps = make_nullable(ps);
            }
            new_props.insert(name.clone(), ps);
        }
        let all: Vec<Value> = props.keys().map(|k| json!(k)).collect();
        out.insert("properties".into(), Value::Object(new_props));
        out.insert("required".into(), Value::Array(all));
    }
    if is_object_type(m) {
        out.insert("additionalProperties".into(), json!(false));
    }
    Value::Object(out)
}

fn is_object_type(m: &Map<String, Value>) -> bool {
    match m.get("type") {
        Some(Value::String(t)) => t == "object",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "object"),
        _ => m.contains_key("properties"),
    }
}

fn make_nullable(mut schema: Value) -> Value {
    if let Some(m) = schema.as_object_mut() {
        match m.get("type").cloned() {
            Some(Value::String(t)) if t != "null" => {
                m.insert("type".into(), json!([t, "null"]));
            }
            Some(Value::Array(mut ts)) => {
                if !ts.iter().any(|t| t == "null") {
                    ts.push(json!("null"));
                }
                m.insert("type".into(), Value::Array(ts));
            }
            _ => {}
        }
        if let Some(Value::Array(e)) = m.get_mut("enum")
            && !e.contains(&Value::Null)
        {
            e.push(Value::Null);
        }
    }
    schema
}
