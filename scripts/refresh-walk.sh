#!/bin/bash
# Usage: K=2000 scripts/refresh-walk.sh READER_ID... (on the database of `feedd bench graph`, named by db below).
# Times the smart refresh's walk plan (sqlstore.feedIDs, recent window) on the bench database:
# a 24-hour window (about a million posts of the 1M graph) against the window FEEDD_REFRESH_MAX_POSTS=K leaves (default 2000).
set -e
K=${K:-2000}
db=feedd_bench
newest=$(mariadb -uroot $db -N -e "SELECT MAX(id) FROM posts")
day=$(( newest - (24*3600*1000 << 12) ))
floor=$(mariadb -uroot $db -N -e "SELECT id FROM posts ORDER BY id DESC LIMIT 1 OFFSET $((K-1))")
for reader in "$@"; do
  for w in day floor; do
    after=${!w}
    for i in 1 2 3; do
      mariadb -uroot $db -N -e "SET profiling=1; SELECT COUNT(*) FROM (SELECT p.id FROM posts p STRAIGHT_JOIN follows f ON f.follower_id = $reader AND f.followee_id = p.author_id WHERE p.id > $after AND p.id < 9223372036854775807 AND p.deleted_at IS NULL ORDER BY p.id DESC LIMIT 1000) x; SHOW PROFILES" | tail -1 | awk -v r=$reader -v w=$w '{printf "reader %s window %s: %.1f ms\n", r, w, $2*1000}'
    done
  done
done
mariadb -uroot $db -N -e "SET profiling=1; SELECT id FROM posts ORDER BY id DESC LIMIT 1 OFFSET $((K-1)); SHOW PROFILES" | tail -1 | awk -v k=$K '{printf "NewestPostsFloor(%d): %.1f ms\n", k, $2*1000}'
