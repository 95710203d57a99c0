#!/usr/bin/env bash
# First paint of the wizard in a real terminal (tmux): time from start until the Host screen shows.
# Usage: bash benchmarks/first_paint.sh [HOST]   (HOST defaults to the probe of this machine)
set -u
session=ktw-paint-$$
start=$(date +%s.%N)
tmux new-session -d -s "$session" -x 120 -y 40 "python3 -m ktwizard"
for _ in $(seq 200); do
  if tmux capture-pane -p -t "$session" | grep -q "1 Host"; then break; fi
  sleep 0.02
done
end=$(date +%s.%N)
sleep 1.5  # let the probe fill the cards
tmux capture-pane -p -t "$session" > "${TMPDIR:-/tmp}/ktwizard-first-paint.txt"
tmux kill-session -t "$session"
printf '{"first_paint_s": %.3f, "budget_s": 1.0}\n' "$(echo "$end - $start" | bc)"
