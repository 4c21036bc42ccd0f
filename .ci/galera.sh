#!/usr/bin/env bash
# A three-node MariaDB Galera 4 cluster on this machine, from Debian's
# packages (mariadb-server, galera-4, rsync for state transfers), for the
# failover tests and for development. Node N (1..3) serves MySQL on
# 127.0.0.1:331N, group communication on 451N, incremental state transfer
# (IST) on 452N and full state transfer (SST, rsync) on 453N; its data and
# config live under $FEEDD_GALERA_DIR/N (default /var/tmp/feedd-ci/galera).
# The machine's own MariaDB (3306) and Galera's default port (4567) are not
# touched.
#
# A dead node is evicted fast (a suspect after 1.5 s, out after 3 s rather
# than the defaults' 5 s and 15 s): while a member is suspected, commits
# stall on every node, so these timeouts bound a failover's write gap.
#
#   .ci/galera.sh [up]     start what is not running (bootstrapping node 1
#                          when no node is), wait for three synced nodes,
#                          print the DSN feedd takes:
#                          root@tcp(127.0.0.1:3311,127.0.0.1:3312,127.0.0.1:3313)/
#   .ci/galera.sh kill N   SIGKILL node N (a crash: no clean leave)
#   .ci/galera.sh start N  start node N, which rejoins by IST; waits until synced
#                          (the survivors without a primary component are
#                          revived first: see revive)
#   .ci/galera.sh down     stop the three nodes (the data stays)
set -euo pipefail

dir="${FEEDD_GALERA_DIR:-/var/tmp/feedd-ci/galera}"
nodes=(1 2 3)
gcomm="gcomm://127.0.0.1:4511,127.0.0.1:4512,127.0.0.1:4513"

port() { echo "$((3310 + $1))"; }

# sql N QUERY: a query on node N through its socket, as root.
sql() { mariadb --no-defaults -uroot -S "$dir/$1/mysqld.sock" -Nse "$2" 2>/dev/null; }

status() { sql "$1" "SHOW GLOBAL STATUS LIKE '$2'" | awk '{print $2}'; }

synced() { [[ "$(status "$1" wsrep_local_state_comment)" == Synced && "$(status "$1" wsrep_ready)" == ON ]]; }

alive() { [[ -f "$dir/$1/mysqld.pid" ]] && kill -0 "$(cat "$dir/$1/mysqld.pid")" 2>/dev/null; }

install_packages() {
  local missing=()
  [[ -x /usr/sbin/mariadbd ]] || missing+=(mariadb-server)
  [[ -e /usr/lib/galera/libgalera_smm.so ]] || missing+=(galera-4)
  command -v rsync >/dev/null || missing+=(rsync)
  if ((${#missing[@]})); then
    echo "galera: installing ${missing[*]}" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
}

# configure N: node N's data directory (a fresh system schema with a root
# that logs in over TCP without a password, as on the machine's own
# server) and its config file.
# weight N: node N's vote in the quorum. The tests kill node 1, the
# writer; at load 15-30 in CI the two survivors then missed each other's
# keepalives as well and each, alone, lost quorum (2 runs in 3). Node 2
# weighs 3 of 5, so that it keeps the primary component alone: feedd's
# writes go on through it while node 3 catches up.
weight() { if [[ "$1" == 2 ]]; then echo 3; else echo 1; fi; }

configure() {
  local n="$1" d="$dir/$1"
  mkdir -p "$d"
  if [[ ! -d "$d/data/mysql" ]]; then
    mariadb-install-db --no-defaults --user=mysql --datadir="$d/data" \
      --auth-root-authentication-method=normal --skip-test-db >"$d/install.log" 2>&1
  fi
  cat >"$d/my.cnf" <<EOF
[mariadbd]
user=mysql
datadir=$d/data
socket=$d/mysqld.sock
pid-file=$d/mysqld.pid
log-error=$d/error.log
bind-address=127.0.0.1
port=$(port "$n")
skip-name-resolve=0
binlog_format=ROW
default_storage_engine=InnoDB
innodb_autoinc_lock_mode=2
innodb_buffer_pool_size=128M
innodb_flush_log_at_trx_commit=2
max_connections=300
wsrep_on=ON
wsrep_provider=/usr/lib/galera/libgalera_smm.so
wsrep_cluster_name=feedd-ci
wsrep_cluster_address=$gcomm
wsrep_node_name=node$n
wsrep_node_address=127.0.0.1:$((4510 + n))
wsrep_node_incoming_address=127.0.0.1:$(port "$n")
wsrep_sst_method=rsync
wsrep_sst_receive_address=127.0.0.1:$((4530 + n))
wsrep_provider_options="gmcast.listen_addr=tcp://127.0.0.1:$((4510 + n));ist.recv_addr=127.0.0.1:$((4520 + n));evs.keepalive_period=PT0.5S;evs.inactive_check_period=PT0.5S;evs.suspect_timeout=PT1.5S;evs.inactive_timeout=PT3S;gcache.size=256M;pc.weight=$(weight "$n")"
EOF
  chown -R mysql:mysql "$d"
}

# recovered N: the last position node N committed, recovered from its
# InnoDB logs when its grastate.dat lost it (a SIGKILL leaves seqno -1).
# Started at that position, the node catches up by IST from the gcache of
# a live node; started without it, it would take a full state transfer
# (SST), during which the donor stops taking writes.
recovered() {
  local d="$dir/$1"
  [[ -f "$d/data/grastate.dat" ]] || return 0
  grep -q '^seqno: *-1' "$d/data/grastate.dat" || return 0
  /usr/sbin/mariadbd --defaults-file="$d/my.cnf" --wsrep-recover --log-error="$d/recover.log" >/dev/null 2>&1 || true
  local pos
  pos=$(grep -o 'Recovered position: [^ ]*' "$d/recover.log" | tail -n 1 | awk '{print $3}')
  rm -f "$d/recover.log"
  [[ -n "$pos" ]] && echo "--wsrep-start-position=$pos"
}

# launch N [args]: start node N's server in the background.
launch() {
  local n="$1"
  shift
  configure "$n"
  rm -f "$dir/$n/mysqld.sock"
  if [[ "${1:-}" != --wsrep-new-cluster ]]; then
    set -- "$@" $(recovered "$n")
  fi
  # setsid: the server outlives this script and its caller's process group.
  setsid /usr/sbin/mariadbd --defaults-file="$dir/$n/my.cnf" "$@" </dev/null >>"$dir/$n/error.log" 2>&1 &
}

wait_synced() { # N SECONDS
  for _ in $(seq 1 $(($2 * 5))); do
    synced "$1" && return 0
    if ! alive "$1" && [[ -f "$dir/$1/mysqld.pid" ]]; then sleep 0.2; fi
    sleep 0.2
  done
  echo "galera: node $1 is not synced after $2 s; see $dir/$1/error.log" >&2
  tail -n 20 "$dir/$1/error.log" >&2 || true
  return 1
}

# primary: a running node that is in the primary component, if any.
primary() {
  for n in "${nodes[@]}"; do
    alive "$n" && [[ "$(status "$n" wsrep_cluster_status)" == Primary ]] && { echo "$n"; return 0; }
  done
  return 1
}

# revive: the running nodes have no primary component. Under heavy load
# (CI at load 30) the survivors of a kill can miss each other's keepalives
# too and each end up alone, without quorum. Wait for them to merge; if
# they do not, bootstrap the most advanced running node (pc.bootstrap): a
# commit is acknowledged only once every member has it, so it holds every
# acknowledged write, and the others rejoin it.
revive() {
  for _ in $(seq 1 100); do primary >/dev/null && return 0; sleep 0.2; done
  local best="" top=-2 c
  for n in "${nodes[@]}"; do
    alive "$n" || continue
    c="$(status "$n" wsrep_last_committed)"
    if (( ${c:--1} > top )); then top="${c:--1}"; best="$n"; fi
  done
  [[ -n "$best" ]] || return 1
  echo "galera: no primary component after 20 s; bootstrapping node $best (last committed $top)" >&2
  sql "$best" "SET GLOBAL wsrep_provider_options='pc.bootstrap=YES'" || true
  for _ in $(seq 1 150); do primary >/dev/null && return 0; sleep 0.2; done
  return 1
}

up() {
  install_packages
  mkdir -p "$dir"
  if ! primary >/dev/null; then
    # No cluster to join: node 1 starts a new one. After a crash its
    # grastate says it may not be the most advanced node; in CI the
    # data is scratch, so it bootstraps anyway.
    for n in "${nodes[@]}"; do
      if alive "$n"; then kill -9 "$(cat "$dir/$n/mysqld.pid")" 2>/dev/null || true; fi
    done
    sleep 0.5
    if [[ -f "$dir/1/data/grastate.dat" ]]; then
      sed -i 's/^safe_to_bootstrap: 0/safe_to_bootstrap: 1/' "$dir/1/data/grastate.dat"
    fi
    launch 1 --wsrep-new-cluster
    wait_synced 1 60
  fi
  for n in "${nodes[@]}"; do
    alive "$n" || launch "$n"
  done
  for n in "${nodes[@]}"; do wait_synced "$n" 120; done
  echo "root@tcp(127.0.0.1:3311,127.0.0.1:3312,127.0.0.1:3313)/"
}

node_arg() {
  [[ "${1:-}" =~ ^[123]$ ]] || { echo "galera: want a node number 1, 2 or 3, got '${1:-}'" >&2; exit 2; }
}

case "${1:-up}" in
  up) up ;;
  kill)
    node_arg "${2:-}"
    if alive "$2"; then kill -9 "$(cat "$dir/$2/mysqld.pid")"; fi
    ;;
  start)
    node_arg "${2:-}"
    primary >/dev/null || revive || { echo "galera: no running node to join; run '$0 up'" >&2; exit 1; }
    alive "$2" || launch "$2"
    wait_synced "$2" 120
    ;;
  down)
    for n in "${nodes[@]}"; do
      if alive "$n"; then kill -TERM "$(cat "$dir/$n/mysqld.pid")" 2>/dev/null || true; fi
    done
    for n in "${nodes[@]}"; do
      for _ in $(seq 1 150); do alive "$n" || break; sleep 0.2; done
    done
    ;;
  *) echo "usage: $0 [up | kill N | start N | down]" >&2; exit 2 ;;
esac
