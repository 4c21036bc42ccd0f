#!/usr/bin/env bash
# A RabbitMQ cluster of three nodes on this machine, for the tests that
# kill a node (internal/proctest TestRabbitClusterLeaderKill) and for
# developers. The nodes run as the rabbitmq user from Debian's
# rabbitmq-server, beside the machine's own node (rabbit@localhost on 5672,
# which this script never touches):
#
#   node             AMQP  dist   data and logs
#   feedd1@localhost 5681  25681  /var/tmp/feedd-ci/rabbit/1
#   feedd2@localhost 5682  25682  /var/tmp/feedd-ci/rabbit/2
#   feedd3@localhost 5683  25683  /var/tmp/feedd-ci/rabbit/3
#
# Each node has a config file of its own (the system one pins 5672) and
# shares the rabbitmq user's Erlang cookie, which is what lets them cluster.
#
#   .ci/rabbitmq-cluster.sh up           start (or repair) the three nodes, cluster
#                                        them, print FEEDD_AMQP_URL's value
#   .ci/rabbitmq-cluster.sh kill NODE    SIGKILL a node (1, 2, 3 or feedd2@localhost)
#   .ci/rabbitmq-cluster.sh start NODE   start a node again and wait until it
#                                        runs in the cluster
#   .ci/rabbitmq-cluster.sh leader QUEUE the node leading quorum queue QUEUE
#   .ci/rabbitmq-cluster.sh down         stop the three nodes and delete their data
#
# Idempotent: up leaves running clustered nodes alone, restarts dead ones
# (they rejoin from their own data) and joins a node only if it is not a
# member yet.
set -euo pipefail

base="${FEEDD_RABBIT_DIR:-/var/tmp/feedd-ci/rabbit}"
nodes=(1 2 3)
bin=/usr/lib/rabbitmq/bin

name() { echo "feedd$1@localhost"; }
port() { echo "$((5680 + $1))"; }
dir() { echo "$base/$1"; }

# as_rabbitmq CMD...: run as the rabbitmq user with its home, whose
# .erlang.cookie the nodes and the CLI tools share.
as_rabbitmq() {
  if [[ $(id -u) == "$(id -u rabbitmq)" ]]; then
    env HOME=/var/lib/rabbitmq "$@"
  else
    runuser -u rabbitmq -- env HOME=/var/lib/rabbitmq "$@"
  fi
}

ctl() { # NODE ARGS...: rabbitmqctl against one node
  local n="$1"; shift
  as_rabbitmq "$bin/rabbitmqctl" -n "$(name "$n")" "$@"
}

# node NAME_OR_NUMBER: the node's number.
node() {
  case "$1" in
    1|2|3) echo "$1" ;;
    feedd[123]@localhost) local n="${1#feedd}"; echo "${n%@*}" ;;
    *) echo "rabbitmq-cluster: no node $1 (want 1, 2, 3 or feedd1@localhost…)" >&2; exit 2 ;;
  esac
}

pid() { cat "$(dir "$1")/pid" 2>/dev/null || true; }

# alive N: the node's Erlang VM runs (it may still be booting).
alive() {
  local p; p=$(pid "$1")
  [[ -n $p ]] && kill -0 "$p" 2>/dev/null
}

# listening N: the node accepts AMQP connections, which it does only once
# booted.
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$(port "$1")") 2>/dev/null; }

# start_node N: boot one node in the background. A node that has data
# comes back as the cluster member it was.
start_node() {
  local n="$1" d; d=$(dir "$1")
  mkdir -p "$d/mnesia" "$d/log"
  # The node's own config. raft.wal_max_size_bytes: quorum queues keep
  # their write-ahead log in memory up to this size (512 MiB by default),
  # three times over on one machine; 32 MiB is plenty for tests.
  # pause_minority: a node cut off from the other two stops serving instead
  # of diverging, the setting RabbitMQ advises for three nodes.
  cat >"$d/rabbitmq.conf" <<EOF
listeners.tcp.1 = 127.0.0.1:$(port "$n")
raft.wal_max_size_bytes = 33554432
cluster_partition_handling = pause_minority
log.file.level = info
log.console = false
EOF
  echo '[].' >"$d/enabled_plugins"
  chown -R rabbitmq:rabbitmq "$d"
  # setsid: the node outlives this script and the test that called it.
  as_rabbitmq setsid env \
    RABBITMQ_NODENAME="$(name "$n")" \
    RABBITMQ_DIST_PORT="$((25680 + n))" \
    RABBITMQ_CONFIG_FILE="$d/rabbitmq.conf" \
    RABBITMQ_ADVANCED_CONFIG_FILE="$d/advanced.config" \
    RABBITMQ_ENABLED_PLUGINS_FILE="$d/enabled_plugins" \
    RABBITMQ_MNESIA_BASE="$d/mnesia" \
    RABBITMQ_MNESIA_DIR="$d/mnesia/$(name "$n")" \
    RABBITMQ_LOG_BASE="$d/log" \
    RABBITMQ_PID_FILE="$d/pid" \
    "$bin/rabbitmq-server" >"$d/log/stdout" 2>&1 </dev/null &
  # The VM writes its pid file early in boot; wait for it so that kill
  # works from now on. On a loaded 2-core machine the wrapper scripts take
  # more than 10 s to get there.
  for _ in $(seq 1 600); do alive "$n" && return 0; sleep 0.1; done
  echo "rabbitmq-cluster: node $n did not start; see $d/log" >&2
  exit 1
}

# wait_booted N: until the node has booted (and, if it is a member, rejoined).
wait_booted() {
  if ! ctl "$1" -q await_startup --timeout 120 >/dev/null; then
    echo "rabbitmq-cluster: node $1 did not boot; see $(dir "$1")/log" >&2
    exit 1
  fi
}

# running_members N: how many nodes node N sees running in its cluster.
running_members() {
  ctl "$1" -q eval 'length(rabbit_nodes:all_running()).' 2>/dev/null || echo 0
}

urls() {
  local list=""
  for n in "${nodes[@]}"; do list+="amqp://guest:guest@127.0.0.1:$(port "$n")/,"; done
  echo "${list%,}"
}

up() {
  for n in "${nodes[@]}"; do alive "$n" || start_node "$n"; done
  for n in "${nodes[@]}"; do wait_booted "$n"; done
  # Nodes 2 and 3 join node 1's cluster once; a node already in it keeps
  # its membership across restarts.
  for n in 2 3; do
    if ! ctl "$n" -q eval 'rabbit_nodes:all().' | grep -q "$(name 1)"; then
      ctl "$n" -q stop_app
      ctl "$n" -q join_cluster "$(name 1)"
      ctl "$n" -q start_app
    fi
  done
  for _ in $(seq 1 100); do
    [[ $(running_members 1) == 3 ]] && { urls; return 0; }
    sleep 0.2
  done
  echo "rabbitmq-cluster: node 1 does not see three running nodes:" >&2
  ctl 1 cluster_status >&2 || true
  exit 1
}

kill_node() {
  local n; n=$(node "$1")
  local p; p=$(pid "$n")
  if [[ -z $p ]] || ! kill -0 "$p" 2>/dev/null; then
    echo "rabbitmq-cluster: node $n is not running" >&2
    exit 1
  fi
  kill -KILL "$p"
  while kill -0 "$p" 2>/dev/null; do sleep 0.05; done
}

start() {
  local n; n=$(node "$1")
  alive "$n" || start_node "$n"
  wait_booted "$n"
  for _ in $(seq 1 100); do
    [[ $(running_members "$n") == 3 ]] && return 0
    sleep 0.2
  done
  echo "rabbitmq-cluster: node $n runs but does not see the two others" >&2
  exit 1
}

# leader QUEUE: the node that leads the quorum queue, asked of any running
# node.
leader() {
  for n in "${nodes[@]}"; do
    listening "$n" || continue
    local l
    if l=$(ctl "$n" -q list_queues --no-table-headers name leader 2>/dev/null | awk -v q="$1" '$1 == q { print $2 }'); then
      if [[ -n $l ]]; then echo "$l"; return 0; fi
      echo "rabbitmq-cluster: no quorum queue $1" >&2
      exit 1
    fi
  done
  echo "rabbitmq-cluster: no node answers" >&2
  exit 1
}

down() {
  for n in "${nodes[@]}"; do
    if alive "$n"; then
      ctl "$n" -q stop >/dev/null 2>&1 || true
      local p; p=$(pid "$n")
      for _ in $(seq 1 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
      kill -KILL "$p" 2>/dev/null || true
    fi
  done
  rm -rf "$base"
}

case "${1:-up}" in
  up) up ;;
  kill) kill_node "${2:?kill NODE}" ;;
  start) start "${2:?start NODE}" ;;
  leader) leader "${2:?leader QUEUE}" ;;
  down) down ;;
  *) echo "usage: $0 up | kill NODE | start NODE | leader QUEUE | down" >&2; exit 2 ;;
esac
