//! Approval of needs-approval grants at the terminal: yes / no / always for this run; and,
//! while `kiln ask` runs on a terminal, lines typed that answer no question steer the run.
//!
//! The question and the answer go through the controlling terminal (`/dev/tty`), not stdin and
//! stderr, so `kiln ask AGENT -` with the prompt piped on stdin can still ask.

use kiln::ApproverFn;
use kiln::steer::Steering;
use std::collections::HashSet;
use std::fs::File;
use std::io::{BufRead, BufReader, IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, mpsc};

/// The terminal read line by line while `kiln ask` runs ([`steer_from_terminal`]): the next
/// line goes to an approval's question while one is asked, any other to the run.
struct TerminalLines {
    /// An approval question waits for its answer.
    asking: AtomicBool,
    /// Lines typed while a question was asked.
    answers: Mutex<mpsc::Receiver<String>>,
}

/// Set once `kiln ask` reads the terminal itself; the approver then takes its answers here
/// (the REPL and other commands keep reading the terminal only when they ask).
static LINES: OnceLock<TerminalLines> = OnceLock::new();

/// Reads the controlling terminal for the rest of the process: each line typed while no
/// question is asked is added to the run through `steering` (and the terminal says so).
/// `false` when there is no terminal to read.
pub fn steer_from_terminal(steering: Arc<Steering>) -> bool {
    let (Ok(input), Ok(mut output)) = (
        File::open("/dev/tty"),
        std::fs::OpenOptions::new().write(true).open("/dev/tty"),
    ) else {
        return false;
    };
    let (answer, answers) = mpsc::channel();
    let lines = TerminalLines {
        asking: AtomicBool::new(false),
        answers: Mutex::new(answers),
    };
    if LINES.set(lines).is_err() {
        return false;
    }
    std::thread::spawn(move || {
        let mut input = BufReader::new(input);
        loop {
            let mut line = String::new();
            if input.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            if LINES.get().is_some_and(|l| l.asking.load(Ordering::SeqCst)) {
                let _ = answer.send(line);
                continue;
            }
            let text = line.trim();
            if text.is_empty() {
                continue;
            }
            let said = match steering.add(text) {
                Ok(n) => format!(
                    "kiln: added to the run: the model reads it before its next request ({n} waiting)"
                ),
                Err(e) => format!("kiln: not added: {e}"),
            };
            let _ = writeln!(output, "{said}");
        }
    });
    true
}

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

    /// The next line typed: from [`LINES`] when `kiln ask` reads the terminal, else read
    /// here; `None` when the terminal closed.
    fn next_line(&mut self) -> Option<String> {
        if let Some(lines) = LINES.get() {
            return lines.answers.lock().ok()?.recv().ok();
        }
        let mut line = String::new();
        (self.input.read_line(&mut line).unwrap_or(0) > 0).then_some(line)
    }

    /// Asks until the answer is y, n or a; `None` when the terminal closed.
    fn ask(&mut self, question: &str) -> Option<char> {
        // A line typed for an earlier question (a pasted "y\ny") answers no other.
        if let Some(queued) = LINES.get().and_then(|l| l.answers.lock().ok()) {
            while queued.try_recv().is_ok() {}
        }
        let asking = LINES.get().map(|l| &l.asking);
        asking.inspect(|a| a.store(true, Ordering::SeqCst));
        let answer = self.ask_until_answered(question);
        asking.inspect(|a| a.store(false, Ordering::SeqCst));
        answer
    }

    fn ask_until_answered(&mut self, question: &str) -> Option<char> {
        loop {
            let _ = write!(
                self.output,
                "kiln: {question}\nallow? [y]es / [n]o / [a]lways for this run: "
            );
            let _ = self.output.flush();
            let line = self.next_line()?;
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
