//! The built-in tools, written in Rhai and embedded in the binary.

/// `(file name, source)` of every stdlib script.
pub const FILES: &[(&str, &str)] = &[
    ("calculator.rhai", include_str!("../stdlib/calculator.rhai")),
    ("strings.rhai", include_str!("../stdlib/strings.rhai")),
    ("storage.rhai", include_str!("../stdlib/storage.rhai")),
    ("time.rhai", include_str!("../stdlib/time.rhai")),
    ("io.rhai", include_str!("../stdlib/io.rhai")),
];
