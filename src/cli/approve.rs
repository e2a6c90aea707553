//! Approval of `ask` grants at the terminal: yes / no / always for this run.

use crate::services::Approver;
use std::collections::HashSet;
use std::io::{BufRead, IsTerminal, Write};
use std::sync::Mutex;

/// An approver that asks on the terminal, or `None` when there is no terminal to ask.
pub fn terminal() -> Option<Approver> {
    if !std::io::stdin().is_terminal() || !std::io::stderr().is_terminal() {
        return None;
    }
    let always: Mutex<HashSet<String>> = Mutex::new(HashSet::new());
    let asking = Mutex::new(());
    Some(Box::new(move |cap: &str, question: &str| {
        // One question at a time, even when tools run concurrently.
        let _turn = asking.lock().unwrap_or_else(|e| e.into_inner());
        if always.lock().map(|a| a.contains(cap)).unwrap_or(false) {
            return true;
        }
        loop {
            eprint!("kiln: {question}\nallow? [y]es / [n]o / [a]lways for this run: ");
            let _ = std::io::stderr().flush();
            let mut line = String::new();
            if std::io::stdin().lock().read_line(&mut line).unwrap_or(0) == 0 {
                return false;
            }
            match line.trim().to_ascii_lowercase().as_str() {
                "y" | "yes" => return true,
                "n" | "no" => return false,
                "a" | "always" => {
                    if let Ok(mut a) = always.lock() {
                        a.insert(cap.to_string());
                    }
                    return true;
                }
                _ => eprintln!("please answer y, n or a"),
            }
        }
    }))
}
