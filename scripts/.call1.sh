#!/usr/bin/env bash
# throwaway: record gallery spaces
export PATH=/usr/local/cuda/bin:$PATH
B=build-gpu
mkdir -p $OUT/o
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $OUT/o/machine.txt 2>&1
cat $OUT/o/machine.txt
date -u
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DKOPT_BUILD_TESTS=OFF > $OUT/o/configure.log 2>&1 || tail -20 $OUT/o/configure.log
time cmake --build $B -j16 --target kopt > $OUT/o/build.log 2>&1 || tail -30 $OUT/o/build.log
date -u
for t in pnpoly; do [ -f templates/$t/make_inputs.py ] && python3 templates/$t/make_inputs.py >/dev/null; done
timeout 490 bash scripts/record_spaces.sh --kopt $B/tool/kopt --work $B/spaces --out $OUT/o/spaces --minutes ${M:-2.3} ${W:-pnpoly reduction nbody} 2>&1 | tee $OUT/o/spaces.log
date -u
tar czf $OUT/all.tgz --exclude=kcache -C $B spaces -C $OUT o
ls -la $OUT
