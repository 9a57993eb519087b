#!/usr/bin/env bash
# npm test's fault step (also runnable alone): the fault suite's short seeded run — 3 gateway processes on
# PostgreSQL and one on SQLite under a seeded load of every kind of work, with every fault kind at least once:
# SIGKILL, SIGTERM, SIGSTOP past the lease then SIGCONT, the liveness connection terminated, a hanging webhook
# receiver, and PostgreSQL itself restarted for real (pg_ctlcluster). Then counted from the public API only; a
# failing run prints its seed and a one-line repro. PostgreSQL is started again if the run leaves it down.
#
# Parameters (environment): FAULTS_PG_URL (default TEST_DATABASE_URL, else postgres://127.0.0.1:5432/test),
# FAULTS_PG_VERSION / FAULTS_PG_CLUSTER (the Debian cluster behind that URL: default the newest version under
# /etc/postgresql, cluster "main"), FAULTS_PG_RESTART (default: pg_ctlcluster --skip-systemctl-redirect <version>
# <cluster> restart), FAULTS_SEED (default 21), FAULTS_COUNT (default 8), FAULTS_WAIT_MS (default 30000).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

pg_url="${FAULTS_PG_URL:-${TEST_DATABASE_URL:-postgres://127.0.0.1:5432/test}}"
pg_host="$(sed -E 's#^[a-z]+://([^@/]*@)?([^:/?]+).*#\2#' <<<"$pg_url")"
pg_port="$(sed -nE 's#^[a-z]+://([^@/]*@)?[^:/?]+:([0-9]+).*#\2#p' <<<"$pg_url")"
pg_port="${pg_port:-5432}"
pg_version="${FAULTS_PG_VERSION:-$(ls /etc/postgresql 2>/dev/null | sort -V | tail -n 1)}"
pg_cluster="${FAULTS_PG_CLUSTER:-main}"
restart="${FAULTS_PG_RESTART:-}"
if [[ -z "$restart" ]]; then
  if command -v pg_ctlcluster >/dev/null 2>&1 && [[ -n "$pg_version" ]]; then
    restart="pg_ctlcluster --skip-systemctl-redirect ${pg_version} ${pg_cluster} restart"
  else
    echo "pg_ctlcluster not found: the PostgreSQL restart fault is left out of this run" >&2
  fi
fi

# The run may leave PostgreSQL down (a restart that failed half-way, a kill of the run): start it again.
ensure_pg() {
  pg_isready -q -h "$pg_host" -p "$pg_port" && return 0
  echo "PostgreSQL on ${pg_host}:${pg_port} is down after the fault run: starting ${pg_version}/${pg_cluster}"
  pg_ctlcluster --skip-systemctl-redirect "$pg_version" "$pg_cluster" start || true
  for _ in $(seq 1 60); do
    pg_isready -q -h "$pg_host" -p "$pg_port" && return 0
    sleep 0.5
  done
  echo "PostgreSQL did not come back on ${pg_host}:${pg_port}" >&2
  return 1
}
rc=0
echo "PostgreSQL under test: ${pg_url} (restart: ${restart:-none})"
FAULTS_SEED="${FAULTS_SEED:-21}" FAULTS_COUNT="${FAULTS_COUNT:-8}" FAULTS_COVER="${FAULTS_COVER:-1}" \
  FAULTS_WAIT_MS="${FAULTS_WAIT_MS:-30000}" FAULTS_PG_URL="$pg_url" FAULTS_PG_RESTART="$restart" \
  npx --no-install tsx scripts/faults.ts || rc=$?
ensure_pg || rc=1
exit "$rc"
