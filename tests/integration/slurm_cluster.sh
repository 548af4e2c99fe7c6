#!/bin/sh
# tests/integration/slurm_cluster.sh — a private single-node Slurm cluster (munged + slurmctld + slurmd from
# Debian's packages) for the sweep tests: no systemd, no cgroups, own key, socket, state and ports.
#   slurm_cluster.sh start DIR PORT   writes DIR/slurm.conf, starts the daemons, waits until the node is idle
#   slurm_cluster.sh stop DIR         stops the daemons by their pid files (never by name)
# Clients then need only SLURM_CONF=DIR/slurm.conf. Run as root (slurmd runs jobs as their user).
set -eu
cmd=$1 dir=$2

stop_pid() {  # stop_pid PIDFILE NAME: SIGTERM, then SIGKILL, the process named in PIDFILE if it is NAME
  [ -f "$1" ] || return 0
  pid=$(cat "$1")
  if [ -n "$pid" ] && [ "$(cat /proc/"$pid"/comm 2>/dev/null)" = "$2" ]; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do
      # A zombie still answers kill -0 here (PID 1 reaps late): read the state letter instead.
      state=$(awk '{print $3}' /proc/"$pid"/stat 2>/dev/null || echo X)
      [ "$state" = X ] || [ "$state" = Z ] && break
      sleep 0.1
    done
    [ "$state" = X ] || [ "$state" = Z ] || kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$1"
}

if [ "$cmd" = stop ]; then
  stop_pid "$dir/slurmd.pid" slurmd
  stop_pid "$dir/slurmctld.pid" slurmctld
  stop_pid "$dir/munge/munged.pid" munged
  exit 0
fi

port=$3
for b in munged mungekey slurmctld slurmd sinfo sbatch scontrol; do
  command -v $b >/dev/null ||
    { echo "slurm_cluster: expected $b on PATH, got none; run scripts/setup.sh" >&2; exit 1; }
done
mkdir -p "$dir/munge" "$dir/state" "$dir/spool" "$dir/log"
chmod 0755 "$dir" "$dir/munge"
mungekey --create --keyfile="$dir/munge/munge.key" --force
chmod 0600 "$dir/munge/munge.key"
m="$dir/munge"
munged --socket="$m/munge.socket" --key-file="$m/munge.key" --pid-file="$m/munged.pid" \
  --log-file="$m/munged.log" --seed-file="$m/munged.seed" --origin=127.0.0.1
cpus=$(nproc)
mem=$(awk '/MemTotal/ {print int($2 / 1024 / 2)}' /proc/meminfo)
cat > "$dir/slurm.conf" <<EOF
ClusterName=hfxtest
SlurmctldHost=localhost
SlurmUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CryptoType=crypto/munge
SlurmctldPort=$port
SlurmdPort=$((port + 1))
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$dir/log/jobcomp.txt
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MinJobAge=3600
KillWait=2
SchedulerParameters=batch_sched_delay=0,bf_interval=1
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF
slurmctld -c -f "$dir/slurm.conf"
slurmd -N localhost -f "$dir/slurm.conf"
export SLURM_CONF="$dir/slurm.conf"
for _ in $(seq 100); do
  state=$(sinfo -h -n localhost -o %T 2>/dev/null || true)
  [ "$state" = idle ] && exit 0
  sleep 0.2
done
echo "slurm_cluster: expected node localhost idle within 20 s, got '${state:-no answer}'" \
  "(logs in $dir/log)" >&2
exit 1
