//! The pool of worker processes that code-mode programs run in: installed once at startup
//! from `--max-programs` and `--program-memory` (or kiln.toml's `[programs]`).

use super::Global;
use kiln::programs::{PoolSettings, WORKER_ARG, WorkerLimits};

/// Each program's memory when neither the flag nor the file says (MiB).
pub const DEFAULT_PROGRAM_MEMORY_MIB: u64 = 512;

/// Makes every code-mode program of this process run in a worker started from this binary.
pub fn install_program_pool(global: &Global) {
    // Without its own path (a deleted binary), programs cannot start: each says so.
    let command = std::env::current_exe().unwrap_or_else(|_| "kiln".into());
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let limits = WorkerLimits {
        memory: global.program_memory.unwrap_or(DEFAULT_PROGRAM_MEMORY_MIB) << 20,
        ..WorkerLimits::default()
    };
    kiln::programs::install(PoolSettings {
        command,
        args: vec![WORKER_ARG.to_string()],
        max_programs: global.max_programs.map_or(cores, usize::from),
        limits,
    });
}

/// What a server says at startup about where programs run and which walls stand.
pub fn describe_program_pool() -> String {
    let Some(pool) = kiln::programs::installed() else {
        return "code-mode programs run in this process (no worker pool)".into();
    };
    let s = pool.settings();
    let walls = match pool.warm_up() {
        Ok(p) => p.describe(),
        Err(e) => format!("workers do not start: {}", e.detail.unwrap_or(e.message)),
    };
    format!(
        "code-mode programs run in worker processes: {} at once, {} MiB each ({} MiB in all); {walls}",
        s.max_programs,
        s.limits.memory >> 20,
        (s.limits.memory >> 20) * s.max_programs as u64,
    )
}
