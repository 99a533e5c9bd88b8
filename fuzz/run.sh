#!/usr/bin/env bash
# Runs fuzz targets one at a time, niced, on one core: ./run.sh [SECONDS] [TARGET...]
# (default: 600 s each, every target). Grown corpora go to corpus/<target> (ignored by git),
# crashes to artifacts/<target>, libFuzzer's log to logs/<target>.log.
set -euo pipefail
cd "$(dirname "$0")"
seconds="${1:-600}"
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    mapfile -t targets < <(cargo +nightly fuzz list)
fi
mkdir -p logs
for target in "${targets[@]}"; do
    mkdir -p "corpus/$target"
    echo "== $target: ${seconds}s"
    # -jobs=1 -workers=1 keeps libFuzzer to one process; it writes its output to fuzz-0.log.
    nice -n 19 cargo +nightly fuzz run -O -a "$target" "corpus/$target" "seeds/$target" -- \
        -jobs=1 -workers=1 -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 \
        -print_final_stats=1 || echo "== $target: libFuzzer exited with $?"
    mv fuzz-0.log "logs/$target.log" 2>/dev/null || true
    grep -E "^(Done|stat::number_of_executed_units|stat::average_exec_per_sec|stat::peak_rss_mb)|(ERROR|SUMMARY|Test unit written)" \
        "logs/$target.log" || true
done
