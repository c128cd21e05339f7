#!/bin/sh
# A stand-in for ssh or srun in the multi-GPU tests (tests/unit/test_multigpu.cpp):
# `kopt optimize --worker-launcher "sh fake_launcher.sh"` starts each worker
# through it. It runs the worker command line it is given ("$@") as a launcher
# would, with the device kopt chose in KOPT_WORKER_DEVICE, and plays a lost
# link or a missing GPU on request.
#
# Environment (set by the test, inherited through kopt):
#   FAKE_LAUNCHER_DIR         folder for its records: launches.log gets one line
#                             "<device> <index> <count> <argv...>" per worker started;
#                             each device's fake worker logs its evaluations in
#                             eval-<device>.log (KOPT_FAKE_EVAL_LOG)
#   FAKE_LAUNCHER_LOSE="D..." each listed device's first worker exits after
#                             FAKE_LAUNCHER_LOSE_AFTER (default 2) evaluations
#                             without a reply, and every later start of a worker
#                             for it fails as ssh does when the host is gone (exit 255)
#   FAKE_LAUNCHER_CRASH=D     device D's first worker exits after
#                             FAKE_LAUNCHER_LOSE_AFTER evaluations as above, and
#                             later starts work (a worker killed, the GPU still there)
#   FAKE_LAUNCHER_NODEV=D     device D's worker finds no GPU
set -u
dir=${FAKE_LAUNCHER_DIR:?FAKE_LAUNCHER_DIR is not set}
dev=${KOPT_WORKER_DEVICE:?KOPT_WORKER_DEVICE is not set}
echo "$dev ${KOPT_WORKER_INDEX:?} ${KOPT_WORKER_COUNT:?} $*" >> "$dir/launches.log"
KOPT_FAKE_EVAL_LOG="$dir/eval-$dev.log"
export KOPT_FAKE_EVAL_LOG
case " ${FAKE_LAUNCHER_LOSE:-} " in *" $dev "*) lose=1 ;; *) lose=0 ;; esac
if [ "$lose" = 1 ]; then
  if [ -e "$dir/lost-$dev" ]; then
    echo "fake_launcher: connect to host gpu-$dev port 22: Connection refused" >&2
    exit 255
  fi
  : > "$dir/lost-$dev"
  KOPT_FAKE_DIE_AFTER=${FAKE_LAUNCHER_LOSE_AFTER:-2}
  export KOPT_FAKE_DIE_AFTER
fi
if [ "${FAKE_LAUNCHER_CRASH:-}" = "$dev" ] && [ ! -e "$dir/crashed-$dev" ]; then
  : > "$dir/crashed-$dev"
  KOPT_FAKE_DIE_AFTER=${FAKE_LAUNCHER_LOSE_AFTER:-2}
  export KOPT_FAKE_DIE_AFTER
fi
if [ "${FAKE_LAUNCHER_NODEV:-}" = "$dev" ]; then
  exec "$@" --no-device
fi
exec "$@"
