#!/usr/bin/env bash
# Starts a local Redis Cluster for development and CI: three masters and
# three replicas from this machine's redis-server, on loopback ports
# $FEEDD_CLUSTER_PORT..+5 (default 7000-7005), data under
# $FEEDD_CLUSTER_DIR (default /tmp/feedd-redis-cluster for port 7000,
# /tmp/feedd-redis-cluster-<port> for another). Idempotent: nodes that
# answer are left alone, dead ones are restarted (they rejoin with their
# nodes.conf), and the cluster is created only if it does not exist yet.
# Prints the address list feedd takes, e.g.
#   FEEDD_REDIS_URL=redis+cluster://127.0.0.1:7000,127.0.0.1:7001,...
#
#   .ci/redis-cluster.sh          start (or repair) and wait until the cluster is ok
#   .ci/redis-cluster.sh stop     shut the six nodes down (no data is kept)
set -euo pipefail

base="${FEEDD_CLUSTER_PORT:-7000}"
if [[ $base == 7000 ]]; then
  dir="${FEEDD_CLUSTER_DIR:-/tmp/feedd-redis-cluster}"
else
  dir="${FEEDD_CLUSTER_DIR:-/tmp/feedd-redis-cluster-$base}"
fi
ports=()
for i in 0 1 2 3 4 5; do ports+=("$((base + i))"); done

ping() { redis-cli -p "$1" ping 2>/dev/null | grep -q PONG; }

if [[ "${1:-start}" == stop ]]; then
  for p in "${ports[@]}"; do redis-cli -p "$p" shutdown nosave >/dev/null 2>&1 || true; done
  exit 0
fi

# start_node PORT: (re)start one node. It keeps its nodes.conf, so a node
# that was killed comes back as a member (a replica of whoever took over).
start_node() {
  local p="$1"
  mkdir -p "$dir/$p"
  redis-server --port "$p" --bind 127.0.0.1 --daemonize yes \
    --dir "$dir/$p" --cluster-enabled yes --cluster-config-file nodes.conf \
    --cluster-node-timeout 2000 --save "" --appendonly no \
    --logfile "$dir/$p/redis.log" --pidfile "$dir/$p/redis.pid"
}

for p in "${ports[@]}"; do
  ping "$p" || start_node "$p"
done
for p in "${ports[@]}"; do
  for _ in $(seq 1 50); do ping "$p" && break; sleep 0.1; done
  ping "$p" || { echo "redis-cluster: node $p did not start; see $dir/$p/redis.log" >&2; exit 1; }
done

# A fresh set of nodes knows only itself; create the cluster once.
if redis-cli -p "$base" cluster info | grep -q 'cluster_slots_assigned:0'; then
  addrs=()
  for p in "${ports[@]}"; do addrs+=("127.0.0.1:$p"); done
  redis-cli --cluster create "${addrs[@]}" --cluster-replicas 1 --cluster-yes >/dev/null
fi

# Wait until every node agrees the cluster is whole: all slots served and
# every node seeing three masters with a replica each.
for _ in $(seq 1 100); do
  ok=1
  for p in "${ports[@]}"; do
    redis-cli -p "$p" cluster info | grep -q 'cluster_state:ok' || ok=0
  done
  nodes=$(redis-cli -p "$base" cluster nodes)
  masters=$(awk '$3 ~ /master/ && $3 !~ /fail/ && $9 != ""' <<<"$nodes" | wc -l)
  live=$(awk '$3 !~ /fail/ && $8 == "connected"' <<<"$nodes" | wc -l)
  if [[ $ok == 1 && $masters == 3 && $live == 6 ]]; then break; fi
  ok=0
  sleep 0.2
done
if [[ $ok != 1 ]]; then
  echo "redis-cluster: the cluster on ports ${ports[0]}-${ports[5]} is not ok:" >&2
  redis-cli -p "$base" cluster nodes >&2 || true
  exit 1
fi
list=$(printf '127.0.0.1:%s,' "${ports[@]}")
echo "redis+cluster://${list%,}"
