#!/usr/bin/env bash
export PATH=/usr/local/cuda/bin:$PATH
R=$OUT
mkdir -p $R/g $R/w
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv; date -u
OUT=$R/g OPT_BUDGET=evals=24,minutes=1 timeout 390 bash scripts/gpu_run.sh test optimize agent > $R/gpu_run.txt 2>&1
echo "gpu_run rc $?"; date -u
tail -60 $R/gpu_run.txt
OUT=$R/w WG_EVALUATE=0 WG_DEADLINE=110 timeout 170 bash scripts/check_tf32.sh wgmma > $R/wgmma.txt 2>&1
echo "wgmma rc $?"; date -u
tail -40 $R/wgmma.txt
cd $R && tar czf all.tgz g w gpu_run.txt wgmma.txt && rm -rf g w
