#!/usr/bin/env bash
# The cold debug build of the README's first command (`cargo run` builds the kiln binary and
# library in the dev profile), from an empty target directory, for each revision given
# (default: main and HEAD), each in a scratch copy.
# Prints a markdown table: wall time and CPU time (user + sys; steadier on a shared machine).
# `cargo build --timings` leaves its report in SCRATCH/target/cargo-timings/.
#
# Usage: benches/build_time.sh [REV...]
set -euo pipefail
cd "$(dirname "$0")/.."
revs=("$@")
[ ${#revs[@]} -gt 0 ] || revs=(main HEAD)
rows=()
first_cpu=""
for rev in "${revs[@]}"; do
    scratch=$(mktemp -d)
    git archive "$rev" | tar -x -C "$scratch"
    times=$(cd "$scratch" && CARGO_TARGET_DIR="$scratch/target" /usr/bin/time -f "%e %U %S" \
        cargo build --quiet --timings 2>&1 >/dev/null | tail -1)
    read -r wall user sys <<<"$times"
    cpu=$(echo "$user + $sys" | bc)
    units=$(ls "$scratch"/target/debug/deps/*.rmeta 2>/dev/null | wc -l)
    [ -n "$first_cpu" ] || first_cpu=$cpu
    rows+=("| $(git rev-parse --short "$rev") | ${wall} s | ${cpu} s | $(echo "scale=2; $cpu / $first_cpu" | bc)x | $units |")
    echo "build_time: $rev done (report: $scratch/target/cargo-timings/)" >&2
done
echo "Cold debug build of the README's first command (cargo build, dev profile, empty target dir; load average $(cut -d' ' -f1 /proc/loadavg)):"
echo
echo "| revision | wall | CPU (user+sys) | CPU vs first | crates (rmeta) |"
echo "|---|---:|---:|---:|---:|"
printf '%s\n' "${rows[@]}"
