#!/usr/bin/env bash
# Runs the probe again: trains the autotune model with trial.json (measured time, measured energy without cpu, memory/interconnect) for a warm-up and a measured window,
# prints what it measured and writes trial.result.json (more steps: add --steps N to the command below).
# Caveat: min-energy (trial 1): tie with trial 2 within measured noise: energy CV 1.9% and 2.0%; against knee, the nearest other pick: 2.0% less energy for 43% more time
# Your own training takes trial.json as its DeepSpeed config, and needs beyond it:
#   - run it on 1 rank (1 node x 1 GPU: data-parallel size 1): train_batch_size 4 = micro-batch 2 x gradient_accumulation_steps 2 x 1, which DeepSpeed checks at start-up; on another number of ranks keep train_batch_size and set gradient_accumulation_steps to 4 / (2 x the data-parallel size), a whole number only at data-parallel sizes 1, 2; at another (3 ranks, say) the micro-batch must change too: `autotune run` with that number of ranks finds one
#   - the power limit 0.35 x default (245 W per GPU: of the 700 W default NVML reported on the probe's devices) is set on the GPUs, not by DeepSpeed: the launch script does it; for your own job run `python -m autotune.measure.device_cli apply --power-limit 0.35 --sm-clock-mhz max --record '.autotune-device-settings.{host}.json'` on its node before training, and `python -m autotune.measure.device_cli restore --record '.autotune-device-settings.{host}.json'` after (NVML: root or CAP_SYS_ADMIN, and autotune installed there)
# torchrun starts the ranks on the node this script runs on.
cd "$(dirname "$0")"
# This run uses a power limit 0.35 x each GPU's default limit (the module's on a GH200).
# Setting them needs root or CAP_SYS_ADMIN (NVML); the script stops if NVML refuses. The probe sets
# them too, and restores them on its way out; the trap below undoes them after a probe killed outright.
restore_device_settings() { python -m autotune.measure.device_cli restore --record '.autotune-device-settings.{host}.json'; }
trap restore_device_settings EXIT
trap 'exit 143' TERM INT  # a signal ends the script through the EXIT trap
python -m autotune.measure.device_cli apply --power-limit 0.35 --sm-clock-mhz max --record '.autotune-device-settings.{host}.json' || exit 2
torchrun --standalone --nnodes=1 --nproc_per_node=1 -m trainer.probe --candidate trial.candidate.json --deepspeed-config trial.json --out trial.result.json
