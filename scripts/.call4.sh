#!/usr/bin/env bash
export PATH=/usr/local/cuda/bin:$PATH
R=$OUT; mkdir -p $R/c
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv; date -u
OUT=$R/c GALLERY_KOPT_MINUTES=1 timeout 380 bash scripts/gallery.sh compare -- --kernels convolution --evals 40 > $R/conv.txt 2>&1
echo "gallery rc $?"; date -u
tail -30 $R/conv.txt
python3 - <<'PY'
import json,glob
for f in glob.glob('build-gpu/gallery/**/summary.json', recursive=True):
    s=json.load(open(f)); print(f, s.get('time_split'), (s.get('tuner') or {}).get('compiles_ready_when_needed'), s.get('budget_used'))
PY
tar czf $R/all.tgz -C $R c conv.txt -C /work/main/build-gpu gallery 2>/dev/null; rm -rf $R/c
ls -la $R
