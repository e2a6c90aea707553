//! "Did you mean ...?": the known name nearest a mistyped one, for errors that help.

/// The candidate nearest `word` by edit distance, when it is near enough to be a typo (at most
/// one edit in four characters, and at least one); `None` otherwise.
pub fn nearest<'a, I>(word: &str, candidates: I) -> Option<&'a str>
where
    I: IntoIterator<Item = &'a str>,
{
    let limit = (word.chars().count() / 4).max(1);
    candidates
        .into_iter()
        .filter(|c| *c != word)
        .map(|c| (distance(word, c), c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// `; did you mean "NAME"?` for the nearest candidate, or nothing.
pub fn hint<'a, I>(word: &str, candidates: I) -> String
where
    I: IntoIterator<Item = &'a str>,
{
    nearest(word, candidates)
        .map(|c| format!("; did you mean \"{c}\"?"))
        .unwrap_or_default()
}

/// Levenshtein distance, with a swap of two neighbours counting as one edit.
fn distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut rows = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in rows.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in rows[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (rows[i - 1][j] + 1)
                .min(rows[i][j - 1] + 1)
                .min(rows[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(rows[i - 2][j - 2] + 1);
            }
            rows[i][j] = d;
        }
    }
    rows[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typos_find_their_word_and_strangers_find_none() {
        let providers = ["anthropic", "openai", "ollama", "script"];
        assert_eq!(nearest("opneai", providers), Some("openai"));
        assert_eq!(nearest("olama", providers), Some("ollama"));
        assert_eq!(nearest("gemini", providers), None);
        assert_eq!(nearest("parm", ["param", "params", "title"]), Some("param"));
        assert_eq!(hint("mni", ["min", "max"]), "; did you mean \"min\"?");
        assert_eq!(hint("zzz", ["min", "max"]), "");
    }
}
