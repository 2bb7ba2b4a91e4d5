#!/usr/bin/env bash
# Runs the probe again: trains the autotune model with trial.json (measured time, measured energy without cpu, memory/interconnect) for a warm-up and a measured window,
# prints what it measured and writes trial.result.json (more steps: add --steps N to the command below).
# Caveat: min-energy (trial 1): tie with trial 2 within measured noise: energy CV 1.9% and 2.0%; against knee, the nearest other pick: 2.0% less energy for 43% more time
# Your own training takes trial.json as its DeepSpeed config, and needs beyond it:
#   - run it on 1 rank (1 node x 1 GPU: data-parallel size 1): train_batch_size 4 = micro-batch 2 x gradient_accumulation_steps 2 x 1, which DeepSpeed checks at start-up; on another number of ranks keep train_batch_size and set gradient_accumulation_steps to 4 / (2 x the data-parallel size), a whole number only at data-parallel sizes 1, 2; at another (3 ranks, say) the micro-batch must change too: `autotune run` with that number of ranks finds one
#   - the power limit 0.35 x default (245 W per GPU: of the 700 W default NVML reported on the probe's devices) is set on the GPUs, not by DeepSpeed: the launch script does it; for your own job run `python -m autotune.measure.device_cli apply --power-limit 0.35 --sm-clock-mhz max --record '.autotune-device-settings.{host}.json'` on its node before training, and `python -m autotune.measure.device_cli restore --record '.autotune-device-settings.{host}.json'` after (NVML: root or CAP_SYS_ADMIN, and autotune installed there)
# It needs a DeepSpeed hostfile named 'hostfile' beside it: one line, 'HOST slots=1', the node to train on (this machine; or another, whose ranks pdsh starts).
cd "$(dirname "$0")"
if [ ! -f hostfile ]; then
  echo "trial.launch.sh: no file named hostfile in $PWD; write it first, 1 line, one per node: HOST slots=1" >&2; exit 2
elif [ "$(grep -Evc '^[[:space:]]*(#|$)' hostfile)" -lt 1 ]; then
  echo "trial.launch.sh: $PWD/hostfile lists $(grep -Evc '^[[:space:]]*(#|$)' hostfile) of the 1 host this configuration runs on: one line per node, HOST slots=1" >&2; exit 2
fi
host=$(grep -Ev '^[[:space:]]*(#|$)' hostfile | head -n 1 | awk '{print $1}' | tr '[:upper:]' '[:lower:]')
where=(--force_multi)  # the hostfile's host is another machine: its ranks start there, through pdsh
case "$host" in localhost|localhost.localdomain|ip6-localhost|127.*|::1|"$(hostname | tr '[:upper:]' '[:lower:]')"|"$(hostname -s 2>/dev/null | tr '[:upper:]' '[:lower:]')") where=(--no_ssh_check --master_addr=127.0.0.1);; esac
[ "${where[0]}" != --force_multi ] || command -v pdsh >/dev/null || { echo "trial.launch.sh: pdsh not found; the deepspeed launcher starts the ranks of the hostfile's host, not this machine, through it: install pdsh, or run this script on that host" >&2; exit 2; }
# This run uses a power limit 0.35 x each GPU's default limit (the module's on a GH200).
# The probe sets the settings on every node (local rank 0 of each, through NVML: root or CAP_SYS_ADMIN
# there) before its warm-up, refuses to train where it cannot, and puts the previous values back on its
# way out (its end, an error, SIGTERM: scancel, a time limit); after a SIGKILL, run
# `python -m autotune.measure.device_cli show` on a node to see what it was left at.
deepspeed --hostfile hostfile --num_nodes=1 --num_gpus=1 "${where[@]}" --module trainer.probe --candidate trial.candidate.json --deepspeed-config trial.json --out trial.result.json
