//! One entry of the table: a builder method or function, its signature, capability and doc,
//! and the constructors the table's parts are written with.

use super::signature::{self, Param};

/// One builder method or function.
#[derive(Debug, Clone, Copy)]
pub struct Entry {
    /// The builder it is a method of (`ToolBuilder`...), or `""` for a function.
    pub on: &'static str,
    /// Its name.
    pub name: &'static str,
    /// Its signature, parameters named and typed:
    /// `param(name: string, type: string[, options: string | map])`; a bracketed group may be
    /// left out. What a call returns may follow: `image(data: string, mime: string) -> Content`.
    pub signature: &'static str,
    /// The capability a call needs (`net`, `fs.read`...), if any.
    pub capability: Option<&'static str>,
    /// What it is for, in one line.
    pub doc: &'static str,
    /// The name that replaces it when it is a deprecated spelling.
    pub replaced_by: Option<&'static str>,
}

impl Entry {
    /// The call as a person writes it, parameters named: `param(name, type[, options])`.
    pub fn call(&self) -> String {
        signature::untyped(self.signature)
    }

    /// Its parameters, in order.
    pub fn params(&self) -> Vec<Param> {
        signature::params(self.signature)
    }

    /// What a call returns, where the table says (`-> Content`).
    pub fn returns(&self) -> Option<&'static str> {
        signature::returns(self.signature)
    }
}

/// The name of a signature: its text up to the parenthesis.
const fn name_of(signature: &'static str) -> &'static str {
    let bytes = signature.as_bytes();
    let mut end = 0;
    while end < bytes.len() && bytes[end] != b'(' {
        end += 1;
    }
    signature.split_at(end).0
}

/// A method of builder `on`.
pub(crate) const fn method(on: &'static str, signature: &'static str, doc: &'static str) -> Entry {
    Entry {
        on,
        name: name_of(signature),
        signature,
        capability: None,
        doc,
        replaced_by: None,
    }
}

/// `e`, a deprecated spelling of `new` on the same receiver (`renames.rs` records the rename).
pub(crate) const fn replaced(e: Entry, new: &'static str) -> Entry {
    Entry {
        replaced_by: Some(new),
        ..e
    }
}

/// A function needing no capability.
pub(crate) const fn function(signature: &'static str, doc: &'static str) -> Entry {
    method("", signature, doc)
}

/// A function gated by capability `cap`.
pub(crate) const fn gated(signature: &'static str, cap: &'static str, doc: &'static str) -> Entry {
    Entry {
        capability: Some(cap),
        ..method("", signature, doc)
    }
}
