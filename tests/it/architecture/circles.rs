//! Import circles between the files of one crate, at the reading issue 42 asks for: a `use`
//! (plain or `pub`, with groups, globs, `self`, `super` and `crate`) and a path in the code
//! resolve to the file that DEFINES the item, following re-exports; a file's own `pub use` is
//! an edge to the defining file. A parent naming its own children (`mod x;`, `x::Y`) is the
//! module tree, not an edge. `#[cfg(test)]` items and the files that hold only tests are left
//! out. (The port of the audit script modcycles.py, run with `--tree-free`.)

use std::collections::{BTreeMap, BTreeSet};

/// A module's path inside its crate (`[]` for the crate root).
type ModPath = Vec<String>;

/// Edges of one crate: file -> file it uses -> why (the `use` or path that makes the edge).
pub type Edges = BTreeMap<String, BTreeMap<String, BTreeSet<String>>>;

/// The module a file is, or `None` for a file of tests only.
fn module_path(rel: &str) -> Option<ModPath> {
    let stem = rel.strip_suffix(".rs")?;
    let mut parts: ModPath = stem.split('/').map(String::from).collect();
    let last = parts.last()?.as_str();
    if last == "tests" || last.ends_with("_tests") {
        return None;
    }
    if last == "mod" || (parts.len() == 1 && matches!(last, "lib" | "main")) {
        parts.pop();
    }
    Some(parts)
}

/// `src` with comments gone and strings and char literals emptied.
fn strip(src: &str) -> String {
    let c: Vec<char> = src.chars().collect();
    let (mut out, mut i) = (String::with_capacity(src.len()), 0);
    let ident = |ch: char| ch.is_ascii_alphanumeric() || ch == '_';
    while i < c.len() {
        let next = c.get(i + 1).copied();
        if c[i] == '/' && next == Some('/') {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if c[i] == '/' && next == Some('*') {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    (depth, i) = (depth + 1, i + 2);
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    (depth, i) = (depth - 1, i + 2);
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if c[i] == 'r' && (i == 0 || !ident(c[i - 1])) && matches!(next, Some('"' | '#')) {
            let hashes = c[i + 1..].iter().take_while(|&&h| h == '#').count();
            if c.get(i + 1 + hashes) != Some(&'"') {
                out.push('r');
                i += 1;
                continue;
            }
            i += hashes + 2;
            while i < c.len()
                && !(c[i] == '"'
                    && c[i + 1..]
                        .iter()
                        .take(hashes)
                        .filter(|&&h| h == '#')
                        .count()
                        == hashes)
            {
                i += 1;
            }
            (i, out) = (i + 1 + hashes, out + "\"\"");
        } else if c[i] == '"' {
            i += 1;
            while i < c.len() && c[i] != '"' {
                i += if c[i] == '\\' { 2 } else { 1 };
            }
            (i, out) = (i + 1, out + "\"\"");
        } else if c[i] == '\'' && next == Some('\\') {
            i += 3;
            while i < c.len() && c[i] != '\'' {
                i += 1;
            }
            (i, out) = (i + 1, out + "' '");
        } else if c[i] == '\'' && c.get(i + 2) == Some(&'\'') {
            (i, out) = (i + 3, out + "' '");
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}

/// `code` without the items under `#[cfg(test)]`.
fn cut_cfg_test(code: &str) -> String {
    let (mut out, mut rest) = (String::new(), code);
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let after = &rest[at..];
        let Some(end) = after.find(['{', ';']) else {
            return out;
        };
        if after.as_bytes()[end] == b';' {
            rest = &after[end + 1..];
            continue;
        }
        let mut depth = 0;
        let close = after[end..].char_indices().find_map(|(i, ch)| {
            depth += match ch {
                '{' => 1,
                '}' => -1,
                _ => 0,
            };
            (depth == 0).then_some(end + i)
        });
        rest = close.map_or("", |close| &after[close + 1..]);
    }
    out + rest
}

/// The identifiers of `code` with their byte ranges (ASCII, as Rust's keywords are).
fn idents(code: &str) -> Vec<(&str, usize, usize)> {
    let b = code.as_bytes();
    let word = |x: u8| x.is_ascii_alphanumeric() || x == b'_';
    let (mut out, mut i) = (Vec::new(), 0);
    while i < b.len() {
        if !word(b[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && word(b[i]) {
            i += 1;
        }
        if !b[start].is_ascii_digit() {
            out.push((&code[start..i], start, i));
        }
    }
    out
}

/// The names a file defines: items and inline `mod x { ... }`.
fn definitions(code: &str) -> BTreeSet<String> {
    const ITEMS: [&str; 8] = [
        "fn", "struct", "enum", "trait", "type", "const", "static", "union",
    ];
    let words = idents(code);
    let mut out = BTreeSet::new();
    for pair in words.windows(2) {
        let ((kw, _, end), (name, start, name_end)) = (pair[0], pair[1]);
        let gap = &code[end..start];
        let spaced = !gap.is_empty() && gap.trim().is_empty();
        let macro_def = kw == "macro_rules"
            && gap.starts_with('!')
            && gap.len() > 1
            && gap[1..].trim().is_empty();
        let inline_mod = kw == "mod" && spaced && code[name_end..].trim_start().starts_with('{');
        if (ITEMS.contains(&kw) && spaced) || macro_def || inline_mod {
            out.insert(name.to_string());
        }
    }
    out
}

/// The `use` items of `code` (`pub` or not, and the use tree), and `code` without them.
fn use_items(code: &str) -> (Vec<(bool, String)>, String) {
    let (mut uses, mut body, mut from) = (Vec::new(), String::new(), 0);
    for (word, start, end) in idents(code) {
        let spaced = code[end..].starts_with(|c: char| c.is_whitespace());
        if word != "use" || start < from || !spaced {
            continue;
        }
        let Some(semi) = code[end..].find(';').map(|s| end + s) else {
            break;
        };
        let before = code[..start].trim_end();
        let before = match before.strip_suffix(')') {
            Some(b) => b.rfind('(').map_or(before, |open| &b[..open]),
            None => before,
        };
        let public = before.ends_with("pub")
            && !before[..before.len() - 3]
                .ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_');
        uses.push((public, code[end..semi].to_string()));
        body.push_str(&code[from..start]);
        from = semi + 1;
    }
    body.push_str(&code[from..]);
    (uses, body)
}

/// A use tree as (path, the name it binds) pairs: `a::{b, c::{self as d}}` is `a::b` bound as
/// `b` and `a::c` bound as `d`.
fn expand_use(tree: &str) -> Vec<(String, String)> {
    let mut t = tree.split_whitespace().collect::<Vec<_>>().join(" ");
    for (from, to) in [
        (" ::", "::"),
        (":: ", "::"),
        (" {", "{"),
        ("{ ", "{"),
        (" }", "}"),
    ] {
        t = t.replace(from, to);
    }
    for (from, to) in [("} ", "}"), (" ,", ","), (", ", ",")] {
        t = t.replace(from, to);
    }
    let mut out = Vec::new();
    expand("", &t, &mut out);
    out
}

fn expand(prefix: &str, t: &str, out: &mut Vec<(String, String)>) {
    let last = |p: &str| p.rsplit("::").next().unwrap_or_default().to_string();
    let Some(open) = t.find('{') else {
        let (path, alias) = t
            .split_once(" as ")
            .map_or((t, None), |(p, a)| (p, Some(a)));
        let full = format!("{prefix}{path}");
        out.push((
            full.clone(),
            alias.map_or_else(|| last(&full), String::from),
        ));
        return;
    };
    let (head, body) = (&t[..open], &t[open + 1..t.rfind('}').unwrap_or(t.len())]);
    let (mut parts, mut depth, mut cur) = (Vec::new(), 0, String::new());
    for ch in body.chars() {
        match ch {
            ',' if depth == 0 => parts.push(std::mem::take(&mut cur)),
            _ => {
                depth += i32::from(ch == '{') - i32::from(ch == '}');
                cur.push(ch);
            }
        }
    }
    parts.push(cur);
    for part in parts.iter().filter(|p| !p.is_empty()) {
        if part == "self" || part.starts_with("self as ") {
            let full = format!("{prefix}{}", head.trim_end_matches(':'));
            let alias = part.strip_prefix("self as ");
            out.push((
                full.clone(),
                alias.map_or_else(|| last(&full), String::from),
            ));
        } else {
            expand(&format!("{prefix}{head}"), part, out);
        }
    }
}

/// The paths written in code: `a::b::C` not preceded by a word or `::`.
fn code_paths(body: &str) -> Vec<(String, Vec<String>)> {
    let words = idents(body);
    let mut out = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let (first, start, mut end) = words[i];
        let before = body[..start].chars().next_back();
        i += 1;
        if before.is_some_and(|c| c == ':' || c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        let mut rest = Vec::new();
        while i < words.len() && words[i].1 == end + 2 && &body[end..end + 2] == "::" {
            rest.push(words[i].0.to_string());
            end = words[i].2;
            i += 1;
        }
        if !rest.is_empty() {
            out.push((first.to_string(), rest));
        }
    }
    out
}

/// One file of a crate, read.
struct Module {
    /// Its path under `src/`.
    file: String,
    /// `mod.rs`, `lib.rs` or `main.rs`: a file that is its folder's module.
    is_mod: bool,
    /// The names it defines.
    defs: BTreeSet<String>,
    /// Its `use` items: (`pub`?, use tree).
    uses: Vec<(bool, String)>,
    /// Its code without the `use` items.
    body: String,
}

/// A crate's modules and what each module's `use` items bind.
struct Crate {
    mods: BTreeMap<ModPath, Module>,
    /// Module -> name -> the absolute path it is bound to.
    binds: BTreeMap<ModPath, BTreeMap<String, ModPath>>,
    /// Module -> the modules it glob-imports.
    globs: BTreeMap<ModPath, Vec<ModPath>>,
}

/// Whether a file declares child modules in files of their own (`mod x;`).
fn declares_children(code: &str) -> bool {
    let words = idents(code);
    words
        .windows(2)
        .any(|w| w[0].0 == "mod" && code[w[1].2..].trim_start().starts_with(';'))
}

impl Crate {
    fn read(files: &BTreeMap<String, String>) -> Crate {
        let mut codes: BTreeMap<ModPath, (String, String)> = BTreeMap::new();
        for (rel, text) in files {
            let Some(path) = module_path(rel) else {
                continue;
            };
            let code = cut_cfg_test(&strip(text));
            // lib.rs and main.rs side by side: the module tree is the one declaring files.
            if codes
                .get(&path)
                .is_some_and(|(_, old)| declares_children(old))
            {
                continue;
            }
            codes.insert(path, (rel.clone(), code));
        }
        let mut mods = BTreeMap::new();
        for (path, (file, code)) in codes {
            let (uses, body) = use_items(&code);
            let name = file.rsplit('/').next().unwrap_or_default();
            let module = Module {
                is_mod: matches!(name, "mod.rs" | "lib.rs" | "main.rs"),
                defs: definitions(&code),
                file,
                uses,
                body,
            };
            mods.insert(path, module);
        }
        let mut krate = Crate {
            mods,
            binds: BTreeMap::new(),
            globs: BTreeMap::new(),
        };
        let mut binds = BTreeMap::new();
        let mut globs = BTreeMap::new();
        for (here, module) in &krate.mods {
            let (b, g): (&mut BTreeMap<_, _>, &mut Vec<_>) = (
                binds.entry(here.clone()).or_default(),
                globs.entry(here.clone()).or_default(),
            );
            for (_, tree) in &module.uses {
                for (path, name) in expand_use(tree) {
                    if let Some(glob) = path.strip_suffix("::*") {
                        g.extend(krate.absolute(glob, here));
                    } else if let Some(at) = krate.absolute(&path, here) {
                        b.insert(name, at);
                    }
                }
            }
        }
        (krate.binds, krate.globs) = (binds, globs);
        krate
    }

    /// A path as written in module `here`, made absolute; `None` for another crate's.
    fn absolute(&self, path: &str, here: &ModPath) -> Option<ModPath> {
        let segs: Vec<String> = path
            .split("::")
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect();
        let (first, rest) = segs.split_first()?;
        let mut out = match first.as_str() {
            "crate" => Vec::new(),
            "self" => here.clone(),
            "super" => {
                let mut base = here.clone();
                base.pop();
                let supers = rest.iter().take_while(|s| *s == "super").count();
                base.truncate(base.len().saturating_sub(supers));
                base.extend(rest[supers..].iter().cloned());
                return Some(base);
            }
            _ => {
                let mut child = here.clone();
                child.push(first.clone());
                if !self.mods.contains_key(&child) {
                    return None;
                }
                child
            }
        };
        out.extend(rest.iter().cloned());
        Some(out)
    }

    /// The module whose file defines what an absolute path names, following re-exports.
    fn resolve(&self, full: &[String], depth: usize) -> Option<ModPath> {
        if depth > 20 {
            return None;
        }
        let k = (0..=full.len())
            .rev()
            .find(|k| self.mods.contains_key(&full[..*k]))?;
        let (module, rest) = (full[..k].to_vec(), &full[k..]);
        let Some((name, tail)) = rest.split_first() else {
            return Some(module);
        };
        if self.mods[&module].defs.contains(name) {
            return Some(module);
        }
        let bound = self.binds.get(&module).and_then(|b| b.get(name));
        if let Some(bound) = bound.filter(|b| b[..] != full[..=k]) {
            let target: ModPath = bound.iter().chain(tail).cloned().collect();
            if let Some(found) = self.resolve(&target, depth + 1) {
                return Some(found);
            }
        }
        for glob in self.globs.get(&module).into_iter().flatten() {
            if let Some(found) = self.resolve_in(glob, name, depth + 1) {
                return Some(found);
            }
        }
        Some(module)
    }

    /// The module that defines `name` as module `glob` sees it, if any.
    fn resolve_in(&self, glob: &ModPath, name: &String, depth: usize) -> Option<ModPath> {
        let module = self.mods.get(glob).filter(|_| depth <= 20)?;
        if module.defs.contains(name) {
            return Some(glob.clone());
        }
        let child: ModPath = glob.iter().chain([name]).cloned().collect();
        if self.mods.contains_key(&child) {
            return Some(child);
        }
        if let Some(bound) = self.binds.get(glob).and_then(|b| b.get(name)) {
            return self.resolve(bound, depth + 1);
        }
        let globs = self.globs.get(glob).into_iter().flatten();
        globs
            .filter_map(|g| self.resolve_in(g, name, depth + 1))
            .next()
    }

    /// The absolute path a path in module `here`'s code names, or `None` when it is another
    /// crate's or the module tree's (a parent naming its own child).
    fn code_target(&self, here: &ModPath, first: &str, rest: &[String]) -> Option<ModPath> {
        let module = &self.mods[here];
        if matches!(first, "crate" | "self" | "super") {
            return self.absolute(&format!("{first}::{}", rest.join("::")), here);
        }
        if let Some(bound) = self.binds[here].get(first) {
            let at: ModPath = bound.iter().chain(rest).cloned().collect();
            let own_child = module.is_mod
                && bound[..bound.len().saturating_sub(1)] == here[..]
                && at.len() > here.len()
                && at[..here.len()] == here[..]
                && self.mods.contains_key(&at[..=here.len()])
                && at[here.len()] == first;
            return (!own_child).then_some(at);
        }
        None
    }
}

/// The edges between the files of a crate whose `src/` holds `files` (path -> text).
pub fn edges(files: &BTreeMap<String, String>) -> Edges {
    let krate = Crate::read(files);
    let mut out = Edges::new();
    for (here, module) in &krate.mods {
        let edges = out.entry(module.file.clone()).or_default();
        let mut add = |target: Option<ModPath>, why: String| {
            let file = &krate.mods[&target?].file;
            if *file != module.file {
                edges.entry(file.clone()).or_default().insert(why);
            }
            Some(())
        };
        for (public, tree) in &module.uses {
            for (path, _) in expand_use(tree) {
                let glob = path.strip_suffix("::*").unwrap_or(&path);
                let at = krate.absolute(glob, here);
                let why = format!("{}use {path}", if *public { "pub " } else { "" });
                add(at.and_then(|at| krate.resolve(&at, 0)), why);
            }
        }
        for (first, rest) in code_paths(&module.body) {
            let at = krate.code_target(here, &first, &rest);
            add(
                at.and_then(|at| krate.resolve(&at, 0)),
                format!("{first}::{}", rest.join("::")),
            );
        }
    }
    out
}

/// The circles (strongly connected parts of more than one node) of a graph.
pub fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct Tarjan<'a> {
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, (usize, usize)>,
        stack: Vec<&'a str>,
        out: Vec<Vec<String>>,
    }
    impl<'a> Tarjan<'a> {
        fn visit(&mut self, v: &'a str) -> usize {
            let at = self.index.len();
            self.index.insert(v, (at, at));
            self.stack.push(v);
            let mut low = at;
            for w in self.graph.get(v).into_iter().flatten() {
                let w = w.as_str();
                low = low.min(match self.index.get(w) {
                    None => self.visit(w),
                    Some(_) if self.stack.contains(&w) => self.index[w].0,
                    Some(_) => continue,
                });
            }
            self.index.insert(v, (at, low));
            if low == at {
                let from = self.stack.iter().rposition(|x| *x == v).expect("on stack");
                let part: Vec<String> = self.stack.drain(from..).map(String::from).collect();
                if part.len() > 1 {
                    self.out.push(part);
                }
            }
            low
        }
    }
    let mut t = Tarjan {
        graph,
        index: BTreeMap::new(),
        stack: Vec::new(),
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !t.index.contains_key(v.as_str()) {
            t.visit(v);
        }
    }
    t.out.iter_mut().for_each(|c| c.sort());
    t.out
}

/// The circles of a crate, between files and between top-level modules, with the edges
/// that make them; empty when there is none.
pub fn report(edges: &Edges) -> Vec<String> {
    let files = edges
        .iter()
        .map(|(f, to)| (f.clone(), to.keys().cloned().collect()))
        .collect();
    let top = |f: &str| match module_path(f).and_then(|m| m.first().cloned()) {
        Some(t) => t,
        None => "<root>".to_string(),
    };
    let mut tops: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (f, to) in edges {
        let from = tops.entry(top(f)).or_default();
        from.extend(to.keys().map(|t| top(t)).filter(|t| *t != top(f)));
    }
    let mut out = Vec::new();
    for (kind, graph) in [("files", &files), ("top-level modules", &tops)] {
        for circle in circles(graph) {
            let mut why = Vec::new();
            for (f, to) in edges {
                for (t, reasons) in to {
                    let (a, b) = if kind == "files" {
                        (f.clone(), t.clone())
                    } else {
                        (top(f), top(t))
                    };
                    if a != b && circle.contains(&a) && circle.contains(&b) {
                        let reasons: Vec<&String> = reasons.iter().take(3).collect();
                        why.push(format!("    {f} -> {t}: {reasons:?}"));
                    }
                }
            }
            out.push(format!(
                "circle of {kind}: {}\n{}",
                circle.join(", "),
                why.join("\n")
            ));
        }
    }
    out
}
