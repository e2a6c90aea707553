#!/usr/bin/env bash
# Cold debug builds for each revision given (default: main and HEAD), each from an empty target
# directory in a scratch copy:
#  - the README's first command (`cargo build`: the kiln binary and library, dev profile);
#  - a minimal embedder: a crate whose only dependency is `kiln` with `default-features = false`
#    (no MCP, HTTP server or Restate SDK where the revision has those features; a revision
#    without features builds everything);
#  - the same embedder with kiln's default features (the doors and the CLI's crates), so the
#    two embedder rows differ by the features alone (an embedder builds with its own profile:
#    dependencies unoptimized, unlike this workspace's dev profile).
# Prints a markdown table: wall time, CPU time (user + sys; steadier on a shared machine) and
# the crates compiled. `cargo build --timings` leaves its report in SCRATCH/target/cargo-timings/.
#
# Usage: benches/build_time.sh [REV...]
set -euo pipefail
cd "$(dirname "$0")/.."
revs=("$@")
[ ${#revs[@]} -gt 0 ] || revs=(main HEAD)
# Resolved now: HEAD may move while the builds run.
for i in "${!revs[@]}"; do revs[i]=$(git rev-parse --short "${revs[i]}"); done
rows=()
declare -A first_cpu
measure() { # DIR LABEL REV: builds in DIR with its own target dir, appends a row
    local dir=$1 label=$2 rev=$3 times wall user sys cpu units
    times=$(cd "$dir" && CARGO_TARGET_DIR="$dir/target" /usr/bin/time -f "%e %U %S" \
        cargo build --quiet --timings 2>&1 >/dev/null | tail -1)
    read -r wall user sys <<<"$times"
    cpu=$(echo "$user + $sys" | bc)
    units=$(ls "$dir"/target/debug/deps/*.rmeta 2>/dev/null | wc -l)
    [ -n "${first_cpu[$label]:-}" ] || first_cpu[$label]=$cpu
    rows+=("| $label | $rev | ${wall} s | ${cpu} s | $(echo "scale=2; $cpu / ${first_cpu[$label]}" | bc)x | $units |")
    echo "build_time: $label at $rev done (report: $dir/target/cargo-timings/)" >&2
}
for rev in "${revs[@]}"; do
    scratch=$(mktemp -d)
    git archive "$rev" | tar -x -C "$scratch/"
    measure "$scratch" "README's first command" "$rev"
    for features in minimal default; do
        embedder=$(mktemp -d)
        mkdir -p "$embedder/src"
        flag=$([ "$features" = minimal ] && echo "default-features = false" || echo "default-features = true")
        cat >"$embedder/Cargo.toml" <<TOML
[package]
name = "embedder"
version = "0.1.0"
edition = "2024"

[dependencies]
kiln = { path = "$scratch", $flag }

[workspace]
TOML
        echo 'fn main() { let _ = kiln::Host::builder(); }' >"$embedder/src/main.rs"
        measure "$embedder" "$features embedder" "$rev"
    done
done
echo "Cold debug builds (dev profile, empty target dir; load average $(cut -d' ' -f1 /proc/loadavg)):"
echo
echo "| build | revision | wall | CPU (user+sys) | CPU vs first | crates (rmeta) |"
echo "|---|---|---:|---:|---:|---:|"
printf '%s\n' "${rows[@]}"
