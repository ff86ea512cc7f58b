#!/usr/bin/env bash
# A real single-node Slurm (Debian's slurm-wlm) on this machine for the sbatch test:
#   .ci/slurm.sh start   installs (if needed), configures and starts munged, slurmctld, slurmd
#   .ci/slurm.sh stop    stops the daemons this script started (by their pid files)
set -euo pipefail
STATE=/tmp/specbench-slurm
mkdir -p "$STATE"

start() {
  if ! command -v slurmctld >/dev/null 2>&1 || ! command -v munged >/dev/null 2>&1; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge >/dev/null
  fi
  # munge: a key, its folders, the daemon as the munge user
  if [ ! -s /etc/munge/munge.key ]; then
    dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
  fi
  chown munge:munge /etc/munge/munge.key && chmod 0400 /etc/munge/munge.key
  for dir in /run/munge /var/lib/munge /var/log/munge; do mkdir -p "$dir"; chown munge:munge "$dir"; done
  if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
    runuser -u munge -- /usr/sbin/munged --pid-file=/run/munge/munged.pid
    sleep 1
  fi
  munge -n | unmunge >/dev/null
  host=$(hostname -s)
  mem_mib=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 1024 ))
  mkdir -p /var/spool/slurmctld /var/spool/slurmd /var/log/slurm /etc/slurm
  cat > /etc/slurm/slurm.conf <<CONF
ClusterName=specbench-ci
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=$STATE/slurmctld.pid
SlurmdPidFile=$STATE/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
MpiDefault=none
NodeName=$host CPUs=$(nproc) RealMemory=$mem_mib State=UNKNOWN
PartitionName=ci Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
  slurmctld
  sleep 2
  slurmd
  for _ in $(seq 1 30); do
    if sinfo -h -o %T 2>/dev/null | grep -q idle; then
      echo "slurm: node $host idle"
      return 0
    fi
    sleep 1
  done
  echo "slurm did not come up; sinfo says: $(sinfo 2>&1)" >&2
  return 1
}

stop() {
  for name in slurmd slurmctld; do
    if [ -s "$STATE/$name.pid" ]; then kill "$(cat "$STATE/$name.pid")" 2>/dev/null || true; fi
  done
  if [ -s /run/munge/munged.pid ]; then kill "$(cat /run/munge/munged.pid)" 2>/dev/null || true; fi
}

"${1:-start}"
