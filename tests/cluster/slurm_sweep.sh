#!/usr/bin/env bash
# A real Slurm job array of sweep shards on this machine, checked against the unsharded sweep.
#
# Installs Slurm and MUNGE from the Debian packages when missing, writes a one-node cluster's
# slurm.conf (this host, its CPUs) under a temporary directory, starts munged, slurmctld and
# slurmd there (no systemd: each a child of this script, stopped by its PID on exit), submits
# deploy/slurm-sweep.sbatch as `sbatch --array=0-3`, whose tasks each run
# `jitterlab sweep … --shard auto -o part_$ID.parquet`,
# waits for them (at most $JITTERLAB_SLURM_TIMEOUT seconds, 300 by default), merges the Parquet
# shards with DuckDB and polars and checks the merge equals the unsharded sweep
# (tests/cluster/merge_check.py). Everything it made is removed on exit.
#
# When Slurm cannot be installed or started it says why and skips (exit 0), or fails (exit 1)
# with JITTERLAB_REQUIRE_PEERS=1, as .ci/run sets it.
#
# Usage: tests/cluster/slurm_sweep.sh [JITTERLAB]   (default: target/debug/jitterlab, built
# with `cargo build -p jitterlab` when missing)
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
START=$SECONDS
TIMEOUT="${JITTERLAB_SLURM_TIMEOUT:-300}"
TASKS=4

# Slurm cannot run here: skip, or fail when peers are required.
unavailable() {
  if [ "${JITTERLAB_REQUIRE_PEERS:-}" = 1 ]; then
    echo "slurm test FAILED: $1 (JITTERLAB_REQUIRE_PEERS=1)" >&2
    exit 1
  fi
  echo "slurm test skipped: $1"
  exit 0
}

JITTERLAB="${1:-$ROOT/target/debug/jitterlab}"
if [ ! -x "$JITTERLAB" ]; then
  cargo build -p jitterlab --locked
fi
JITTERLAB=$(cd "$(dirname "$JITTERLAB")" && pwd)/$(basename "$JITTERLAB")

if ! command -v slurmctld > /dev/null || ! command -v slurmd > /dev/null \
  || ! command -v sbatch > /dev/null || ! command -v munged > /dev/null; then
  SUDO=""
  if [ "$(id -u)" != 0 ]; then
    command -v sudo > /dev/null || unavailable "Slurm is not installed and there is no root or sudo to install it"
    SUDO="sudo"
  fi
  echo "installing Slurm and MUNGE (Debian's slurmctld, slurmd, slurm-client, munge)"
  { $SUDO apt-get update -qq \
    && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
      slurmctld slurmd slurm-client munge > /dev/null; } \
    || unavailable "cannot install Slurm from the Debian packages"
fi
python3 -c "import polars, duckdb" 2> /dev/null || unavailable "python3 has no polars or duckdb"
# The daemons run as the user running this (SlurmUser, SlurmdUser): slurmd must be root to
# start jobs as their submitter.
[ "$(id -u)" = 0 ] || unavailable "slurmd must run as root (run this as root)"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/jitterlab-slurm.XXXXXX")
PIDS=()
cleanup() {
  local pid
  # Cancelled first, so no task is left running under a stopped slurmd.
  if [ -n "${JOB:-}" ]; then scancel "$JOB" 2> /dev/null || true; fi
  for pid in "${PIDS[@]}"; do kill "$pid" 2> /dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2> /dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT
# On failure, the daemons' logs say why.
logs() {
  for log in "$WORK"/log/*.log "$WORK"/log/*.out; do
    [ -f "$log" ] && { echo "--- $log (last lines)"; tail -n 20 "$log"; }
  done
  for out in "$WORK"/out/*; do
    [ -f "$out" ] && { echo "--- $out"; tail -n 20 "$out"; }
  done
}
fail() {
  echo "slurm test FAILED: $1" >&2
  logs >&2
  exit 1
}
mkdir -p "$WORK"/{log,state,spool,munge,out}

# MUNGE, Slurm's authentication, with a key of our own and its socket in $WORK.
MUNGE_SOCKET="$WORK/munge/munge.socket"
dd if=/dev/urandom of="$WORK/munge/munge.key" bs=1 count=128 status=none
chmod 700 "$WORK/munge"
chmod 400 "$WORK/munge/munge.key"
munged --force --foreground --socket="$MUNGE_SOCKET" --key-file="$WORK/munge/munge.key" \
  --log-file="$WORK/log/munged.log" --pid-file="$WORK/munge/munged.pid" \
  --seed-file="$WORK/munge/munged.seed" > /dev/null 2>&1 &
PIDS+=($!)
for _ in $(seq 50); do [ -S "$MUNGE_SOCKET" ] && break; sleep 0.1; done
[ -S "$MUNGE_SOCKET" ] || { logs; unavailable "munged did not start"; }

# One node: this host, its CPUs; ports away from a system Slurm's 6817/6818.
HOST=$(hostname -s)
CPUS=$(nproc)
PORT=$((20000 + $$ % 20000))
export SLURM_CONF="$WORK/slurm.conf"
cat > "$SLURM_CONF" << CONF
ClusterName=jitterlab
SlurmctldHost=$HOST(127.0.0.1)
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
SlurmUser=$(id -un)
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$MUNGE_SOCKET
CredType=cred/munge
StateSaveLocation=$WORK/state
SlurmdSpoolDir=$WORK/spool
SlurmctldPidFile=$WORK/slurmctld.pid
SlurmdPidFile=$WORK/slurmd.pid
SlurmctldLogFile=$WORK/log/slurmctld.log
SlurmdLogFile=$WORK/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
ReturnToService=2
MailProg=/bin/true
SchedulerType=sched/builtin
SlurmctldTimeout=30
SlurmdTimeout=30
NodeName=$HOST NodeAddr=127.0.0.1 CPUs=$CPUS State=UNKNOWN
PartitionName=local Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
CONF

slurmctld -D -i -f "$SLURM_CONF" > "$WORK/log/slurmctld.out" 2>&1 &
PIDS+=($!)
slurmd -D -f "$SLURM_CONF" -N "$HOST" > "$WORK/log/slurmd.out" 2>&1 &
PIDS+=($!)
# The node comes up idle within seconds.
for _ in $(seq 60); do
  if sinfo -h -N -o '%t' 2> /dev/null | grep -qE '^idle'; then break; fi
  sleep 0.5
done
sinfo -h -N -o '%t' 2> /dev/null | grep -qE '^idle' || {
  cat "$WORK"/log/*.out
  logs
  unavailable "the one-node Slurm cluster did not come up"
}
echo "slurm: one node ($HOST, $CPUS CPUs) up after $((SECONDS - START)) s"

# The same sweep whole and as a job array of $TASKS shards (deploy/slurm-sweep.sbatch, the
# script docs/cluster.md gives for a real cluster): 2 traces × 7 configurations.
export TRACES="$ROOT/fixtures/traces/demo-wifi-20hz.jtr $WORK/synth.jtr"
export GRID="$WORK/grid.toml" OUT="$WORK/rows" JITTERLAB
"$JITTERLAB" -q synth --profile lte --duration 20s --seed 7 -o "$WORK/synth.jtr" > /dev/null
printf '[fixed]\ndelay = "0ms..150ms step 30ms"\n[ngo]\nticks_ago = 2\n' > "$GRID"
# shellcheck disable=SC2086
"$JITTERLAB" -q sweep $TRACES --grid "$GRID" -j 1 -o "$WORK/whole.parquet" > /dev/null
JOB=$(sbatch --parsable --array=0-$((TASKS - 1)) --cpus-per-task=1 \
  --output="$WORK/out/task_%a.out" "$ROOT/deploy/slurm-sweep.sbatch") \
  || fail "sbatch refused the job array"
JOB=${JOB%%;*}
echo "slurm: job array $JOB submitted ($TASKS tasks)"
DEADLINE=$((SECONDS + TIMEOUT))
while squeue -h -j "$JOB" 2> /dev/null | grep -q .; do
  [ $SECONDS -lt $DEADLINE ] || fail "job array $JOB still queued or running after $TIMEOUT s"
  sleep 1
done
for ((i = 0; i < TASKS; i++)); do
  [ -f "$WORK/rows/part_$i.parquet" ] || fail "task $i wrote no part_$i.parquet"
done
echo "slurm: $TASKS tasks done after $((SECONDS - START)) s"

python3 "$ROOT/tests/cluster/merge_check.py" "$WORK/whole.parquet" "$TASKS" \
  "$WORK"/rows/part_*.parquet || fail "the merged shards differ from the unsharded sweep"
echo "slurm test passed in $((SECONDS - START)) s"
