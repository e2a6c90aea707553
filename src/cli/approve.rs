//! Approval of needs-approval grants at the terminal: yes / no / always for this run.
//!
//! The question and the answer go through the controlling terminal (`/dev/tty`), not stdin and
//! stderr, so `kiln ask AGENT -` with the prompt piped on stdin can still ask.

use kiln::ApproverFn;
use std::collections::HashSet;
use std::fs::File;
use std::io::{BufRead, BufReader, IsTerminal, Write};
use std::sync::Mutex;

/// The controlling terminal, opened for reading answers and writing questions.
struct Tty {
    input: BufReader<File>,
    output: File,
}

impl Tty {
    fn open() -> Option<Tty> {
        let output = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/tty")
            .ok()?;
        let input = BufReader::new(File::open("/dev/tty").ok()?);
        Some(Tty { input, output })
    }

    /// Asks until the answer is y, n or a; `None` when the terminal closed.
    fn ask(&mut self, question: &str) -> Option<char> {
        loop {
            let _ = write!(
                self.output,
                "kiln: {question}\nallow? [y]es / [n]o / [a]lways for this run: "
            );
            let _ = self.output.flush();
            let mut line = String::new();
            if self.input.read_line(&mut line).unwrap_or(0) == 0 {
                return None;
            }
            match line.trim().to_ascii_lowercase().as_str() {
                "y" | "yes" => return Some('y'),
                "n" | "no" => return Some('n'),
                "a" | "always" => return Some('a'),
                _ => {
                    let _ = writeln!(self.output, "please answer y, n or a");
                }
            }
        }
    }
}

/// An approver that asks on the terminal, or `None` when there is no one to ask: no
/// controlling terminal, or neither stdin nor stderr is one (kiln runs under another program,
/// whose terminal is not ours to prompt on).
pub fn terminal() -> Option<ApproverFn> {
    if !std::io::stdin().is_terminal() && !std::io::stderr().is_terminal() {
        return None;
    }
    let tty = Mutex::new(Tty::open()?);
    let always: Mutex<HashSet<String>> = Mutex::new(HashSet::new());
    Some(Box::new(move |cap: &str, question: &str| {
        // One question at a time, even when tools run concurrently.
        let mut tty = tty.lock().unwrap_or_else(|e| e.into_inner());
        if always.lock().map(|a| a.contains(cap)).unwrap_or(false) {
            return true;
        }
        match tty.ask(question) {
            Some('y') => true,
            Some('a') => {
                if let Ok(mut a) = always.lock() {
                    a.insert(cap.to_string());
                }
                true
            }
            _ => false,
        }
    }))
}
