//! The walls of a program worker, put up by the worker itself before it reads a program:
//! hard resource limits (address space, CPU time, open files, no core files) and, on Linux,
//! a seccomp filter that lets through only what the interpreter needs. Everything else (open,
//! connect, socket, execve, fork, ptrace, ...) fails with ENOSYS.

use super::wire::Protections;

/// The limits of one worker, given to it on its command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkerLimits {
    /// Bytes of address space (the program's memory, the interpreter's and its threads').
    pub memory: u64,
    /// Seconds of CPU time (the host also stops a program at its deadline).
    pub cpu_seconds: u64,
    /// Open file descriptors (the worker needs its three pipes).
    pub open_files: u64,
}

impl Default for WorkerLimits {
    fn default() -> Self {
        WorkerLimits {
            memory: 512 * 1024 * 1024,
            cpu_seconds: 600,
            open_files: 16,
        }
    }
}

impl WorkerLimits {
    /// The limits as the worker's arguments.
    pub fn to_args(self) -> Vec<String> {
        vec![
            self.memory.to_string(),
            self.cpu_seconds.to_string(),
            self.open_files.to_string(),
        ]
    }

    /// The limits from the worker's arguments; the defaults for any missing or unreadable.
    pub fn from_args(args: &[String]) -> Self {
        let d = WorkerLimits::default();
        let at = |i: usize, or: u64| args.get(i).and_then(|a| a.parse().ok()).unwrap_or(or);
        WorkerLimits {
            memory: at(0, d.memory),
            cpu_seconds: at(1, d.cpu_seconds),
            open_files: at(2, d.open_files),
        }
    }
}

/// Puts up every wall this system has; says which stand.
pub fn apply(limits: &WorkerLimits) -> Protections {
    Protections {
        rlimits: rlimits(limits),
        seccomp: seccomp(),
    }
}

#[cfg(unix)]
fn rlimits(limits: &WorkerLimits) -> bool {
    use rlimit::{Resource, setrlimit};
    let set = |r: Resource, n: u64| setrlimit(r, n, n).is_ok();
    // All four, even when one fails.
    let results = [
        set(Resource::CORE, 0),
        set(Resource::NOFILE, limits.open_files),
        set(Resource::CPU, limits.cpu_seconds),
        set(Resource::AS, limits.memory),
    ];
    results.iter().all(|ok| *ok)
}

#[cfg(not(unix))]
fn rlimits(_limits: &WorkerLimits) -> bool {
    false
}

#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
fn seccomp() -> bool {
    match filter() {
        Ok(program) => seccompiler::apply_filter(&program).is_ok(),
        Err(_) => false,
    }
}

#[cfg(not(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
)))]
fn seccomp() -> bool {
    false
}

/// The system calls a worker may make once it runs a program: its pipes, memory, threads
/// (clone with CLONE_THREAD only: no fork), time, signals to itself, and leaving.
#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
fn filter() -> Result<seccompiler::BpfProgram, seccompiler::BackendError> {
    use seccompiler::{
        SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
        SeccompRule, TargetArch,
    };
    use std::collections::BTreeMap;
    let allowed = [
        libc::SYS_read,
        libc::SYS_write,
        libc::SYS_readv,
        libc::SYS_writev,
        libc::SYS_close,
        libc::SYS_fstat,
        libc::SYS_lseek,
        libc::SYS_ppoll,
        libc::SYS_mmap,
        libc::SYS_munmap,
        libc::SYS_mremap,
        libc::SYS_mprotect,
        libc::SYS_madvise,
        libc::SYS_brk,
        libc::SYS_futex,
        libc::SYS_set_robust_list,
        libc::SYS_rseq,
        libc::SYS_sched_yield,
        libc::SYS_sched_getaffinity,
        libc::SYS_getrandom,
        libc::SYS_clock_gettime,
        libc::SYS_clock_nanosleep,
        libc::SYS_nanosleep,
        libc::SYS_gettid,
        libc::SYS_getpid,
        libc::SYS_tgkill,
        libc::SYS_rt_sigaction,
        libc::SYS_rt_sigprocmask,
        libc::SYS_rt_sigreturn,
        libc::SYS_sigaltstack,
        libc::SYS_exit,
        libc::SYS_exit_group,
        #[cfg(target_arch = "x86_64")]
        libc::SYS_poll,
    ];
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> =
        allowed.iter().map(|n| (*n, Vec::new())).collect();
    // Threads, never processes: clone only with CLONE_THREAD. (clone3 passes its flags in
    // memory the filter cannot read; it fails with ENOSYS and the C library falls back to
    // clone.)
    let thread = libc::CLONE_THREAD as u64;
    let only_threads = SeccompCondition::new(
        0,
        SeccompCmpArgLen::Qword,
        SeccompCmpOp::MaskedEq(thread),
        thread,
    )?;
    rules.insert(libc::SYS_clone, vec![SeccompRule::new(vec![only_threads])?]);
    let arch = if cfg!(target_arch = "aarch64") {
        TargetArch::aarch64
    } else {
        TargetArch::x86_64
    };
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Errno(libc::ENOSYS as u32),
        SeccompAction::Allow,
        arch,
    )?;
    filter.try_into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_go_through_the_command_line_and_back() {
        let l = WorkerLimits {
            memory: 1 << 28,
            cpu_seconds: 9,
            open_files: 5,
        };
        assert_eq!(WorkerLimits::from_args(&l.to_args()), l);
        assert_eq!(
            WorkerLimits::from_args(&["x".into()]),
            WorkerLimits::default()
        );
    }

    #[cfg(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    ))]
    #[test]
    fn the_filter_compiles() {
        assert!(filter().unwrap().len() > 10);
    }
}
