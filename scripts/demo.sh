#!/usr/bin/env bash
# `make demo`: a few minutes of 2-process DDP training on the CPU (trainer launch: torchrun, gloo) in
# remote mode, watched live in visdom through the visualizer, as on a real remote box:
#
#   trainer (2 ranks) --writes--> checkpoints/demo/pickle --followed by--> visualizer --> visdom
#
# Knobs (environment): DEMO_EPOCHS (80), DEMO_NPROC (2), DEMO_PORT (8097), PYTHON (.venv/bin/python).
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-.venv/bin/python}
DATA=data/demo
NAME=demo
CHECKPOINTS=checkpoints
RUN_DIR=$CHECKPOINTS/$NAME
PORT=${DEMO_PORT:-8097}
EPOCHS=${DEMO_EPOCHS:-80}
NPROC=${DEMO_NPROC:-2}
TRAIN_LOG=$CHECKPOINTS/$NAME.torchrun.log
VIS_LOG=$CHECKPOINTS/$NAME.visualizer.log
URL="http://127.0.0.1:$PORT/env/$NAME"

train_pid=""
vis_pid=""

say() { printf '\n==> %s\n' "$*"; }

stop() {  # $1 = pid: SIGTERM (both programs shut down cleanly on it), then wait a little
    local pid=$1
    [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null || return 0
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.2; done
    kill -KILL "$pid" 2>/dev/null || true
}

cleanup() {
    trap - EXIT INT TERM
    stop "$train_pid"
    stop "$vis_pid"
    wait 2>/dev/null || true
}
trap cleanup EXIT
# Ctrl-C is how a person leaves the demo: stop both programs and exit 0 (make would
# otherwise end with "Error 130"). A training failure still exits non-zero below.
result=0
trap 'echo; say "stopping"; exit $result' INT TERM

if [[ ! -d $DATA/train ]]; then
    say "generating the demo dataset in $DATA"
    "$PY" -m trainer make-dataset "$DATA"
fi

mkdir -p "$CHECKPOINTS"
if [[ -d $RUN_DIR ]]; then
    # The trainer refuses a new run into an old run's store: start clean.
    say "removing the previous demo run $RUN_DIR"
    rm -rf "$RUN_DIR"
fi

say "training: python -m trainer launch --nproc-per-node $NPROC --remote True ($EPOCHS epochs; log: $TRAIN_LOG)"
# trainer launch: torchrun on loopback, and a Ctrl-C ends in one line, not torchrun's traceback.
# OMP_NUM_THREADS=1: one core per process (torchrun would set it too, with a warning).
OMP_NUM_THREADS=1 "$PY" -m trainer launch --nproc-per-node "$NPROC" \
    --dataroot "$DATA" --name "$NAME" --checkpoints-dir "$CHECKPOINTS" \
    --remote True --gpu-ids -1 --batch-size 32 --n-epochs "$EPOCHS" --print-freq 5 \
    --display-freq 25 --save-epoch-freq 20 >"$TRAIN_LOG" 2>&1 &
train_pid=$!

# The visualizer reads what the trainer writes: wait for the store to exist.
for _ in $(seq 300); do
    [[ -f $RUN_DIR/pickle/meta.pickle ]] && break
    if ! kill -0 "$train_pid" 2>/dev/null; then
        say "training failed to start:"; tail -n 20 "$TRAIN_LOG"; exit 1
    fi
    sleep 0.2
done

say "visualizer: python run_visualizer_local.py --pickle_dir $RUN_DIR/pickle (log: $VIS_LOG)"
"$PY" run_visualizer_local.py --pickle_dir "$RUN_DIR/pickle" --port "$PORT" >"$VIS_LOG" 2>&1 &
vis_pid=$!
for _ in $(seq 150); do  # it prints "visdom: <url>" once visdom answers
    grep -q '^visdom: ' "$VIS_LOG" 2>/dev/null && break
    if ! kill -0 "$vis_pid" 2>/dev/null; then
        say "the visualizer failed to start:"; tail -n 20 "$VIS_LOG"; exit 1
    fi
    sleep 0.2
done

cat <<EOF

    ################################################################
    #  Live plots:  $URL
    ################################################################

    (Progress below every few seconds; the full log: tail -f $TRAIN_LOG)
EOF

# Progress while it trains: the trainer's latest "(epoch E, step S, ...) loss L" line.
started=$SECONDS
shown=""
while kill -0 "$train_pid" 2>/dev/null; do
    line=$(grep -a '(epoch ' "$TRAIN_LOG" 2>/dev/null | tail -n 1 | sed 's/^.*(epoch /(epoch /' || true)
    if [[ -n "$line" && "$line" != "$shown" ]]; then
        printf '    %4ds  %s\n' "$((SECONDS - started))" "$line"
        shown=$line
    fi
    sleep 5
done
set +e
wait "$train_pid"
status=$?
set -e
train_pid=""
if [[ $status -ne 0 ]]; then
    result=1
    say "training failed (exit $status); last lines of $TRAIN_LOG:"
    tail -n 20 "$TRAIN_LOG"
else
    say "training finished:"
    grep -E 'validation|done:' "$TRAIN_LOG" | tail -n 3
fi

cat <<EOF

    ################################################################
    #  Live plots:  $URL
    ################################################################

    They stay there until you press Ctrl-C.
EOF
wait "$vis_pid" || true
exit $result
