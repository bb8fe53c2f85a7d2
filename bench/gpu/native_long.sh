#!/usr/bin/env bash
# native_long.sh — bytes per event of native traces over a longer run: GPT-2
# (6 layers, 768 wide, batch 8, lengths 128-1024) for STEPS steps (default
# 60), with watch() and no history, and with history's Python stacks and no
# watch(); both at once on one GPU. Release build in gpu-carry/.
set -u
. bench/gpu/native_env.sh
R=/tmp/long
STEPS=${STEPS:-60}
native_prepare "$R"
G="--layers 6 --width 768 --batch 8 --min-len 128 --max-len 1024 --steps $STEPS"
python3 bench/gpu/record.py gpt2 "$R" --name l_plain $G --no-history --native "$R/l_plain.fstrace" > "$R/l_plain.json" 2> "$R/l_plain.err" &
python3 bench/gpu/record.py gpt2 "$R" --name l_stacks $G --no-watch --native "$R/l_stacks.fstrace" > "$R/l_stacks.json" 2> "$R/l_stacks.err" &
wait
for r in l_plain l_stacks; do
  ev=$(gpu-carry/build/fragscope analyze "$R/$r.fstrace" -o "$R/$r.db" 2>&1 | grep -o '[0-9]* events' | head -1)
  echo "$r: $(stat -c %s "$R/$r.fstrace") bytes, $ev, $(tail -c 300 "$R/$r.json")"
done
