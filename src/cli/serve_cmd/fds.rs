//! The open-file limit a server needs: every connection is a file descriptor, and a run waiting
//! on its model holds two (its client's and the model's).

/// Raises the soft open-file limit to the hard one, as servers commonly do (the usual soft
/// limit of 1,024 is meant for programs that hold few files); a warning to show when the limit
/// is still below `wanted`.
#[cfg(unix)]
pub fn raise_open_file_limit(wanted: u64) -> Option<String> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit read and write only the struct they are given.
    let got = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) };
    if got != 0 {
        return None;
    }
    if lim.rlim_cur < lim.rlim_max {
        let raised = libc::rlimit {
            rlim_cur: lim.rlim_max,
            rlim_max: lim.rlim_max,
        };
        // SAFETY: as above.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            lim.rlim_cur = lim.rlim_max;
        }
    }
    (lim.rlim_cur < wanted).then(|| {
        format!(
            "the open-file limit is {}, below the {wanted} that --max-connections and --max-runs may need: connections past it fail (raise the hard limit: ulimit -Hn, LimitNOFILE= in systemd)",
            lim.rlim_cur
        )
    })
}

/// Elsewhere the limit is left as it is.
#[cfg(not(unix))]
pub fn raise_open_file_limit(_wanted: u64) -> Option<String> {
    None
}
