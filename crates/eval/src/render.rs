//! An evaluation's report as people and tools read it: a table for the terminal (`table`),
//! JUnit XML for CI dashboards (`junit`), and a self-contained HTML page (`html`, with its
//! charts drawn by `svg` and its text escaped by `escape`).

pub(crate) mod escape;
pub mod html;
pub mod junit;
pub(crate) mod svg;
pub mod table;
