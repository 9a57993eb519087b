#!/usr/bin/env bash
# `npm test`: the whole check, in order — typecheck, unit + integration (SQLite and PostgreSQL),
# production build, browser tests on real Chromium. Prepares what it needs on the machine first.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

export NEXT_TELEMETRY_DISABLED=1
export CI="${CI:-1}"
export NO_UPDATE_NOTIFIER=1
export npm_config_update_notifier=false
export npm_config_fund=false
export npm_config_audit=false
export TEST_DATABASE_URL="${TEST_DATABASE_URL:-postgres://127.0.0.1:5432/test}"
# node-postgres takes the user from PGUSER or USER, which minimal CI shells (and containers) may lack.
export USER="${USER:-$(id -un)}"
export PGUSER="${PGUSER:-$USER}"

started_at=$SECONDS
current=""
declare -a done_steps=()

section() { # <short name> <title>
  current="$1"
  printf '\n==== %s ====\n' "$2"
}
step_ok() {
  done_steps+=("$current")
}
on_exit() {
  local rc=$?
  local took=$((SECONDS - started_at))
  if [[ $rc -ne 0 ]]; then
    printf '\nFAILED at "%s" after %ss (passed: %s)\n' "${current:-setup}" "$took" "${done_steps[*]:-none}" >&2
  fi
}
trap on_exit EXIT

is_root() { [[ "$(id -u)" -eq 0 ]]; }

# --- PostgreSQL on 127.0.0.1:5432 -------------------------------------------------------------
section postgres "PostgreSQL on 127.0.0.1:5432"
if ! command -v pg_isready >/dev/null 2>&1; then
  echo "pg_isready not found: install PostgreSQL (Debian: apt-get install -y postgresql) and rerun." >&2
  exit 1
fi
if pg_isready -q -h 127.0.0.1 -p 5432; then
  echo "already accepting connections on 127.0.0.1:5432"
else
  if ! ls /etc/postgresql >/dev/null 2>&1 || [[ -z "$(ls /etc/postgresql)" ]]; then
    echo "PostgreSQL is not running and no cluster is configured under /etc/postgresql." >&2
    exit 1
  fi
  pg_version="$(ls /etc/postgresql | sort -V | tail -n 1)"
  echo "starting cluster ${pg_version}/main"
  pg_ctlcluster --skip-systemctl-redirect "$pg_version" main start || true
  for _ in $(seq 1 60); do
    pg_isready -q -h 127.0.0.1 -p 5432 && break
    sleep 0.5
  done
  if ! pg_isready -h 127.0.0.1 -p 5432; then
    echo "PostgreSQL did not become ready on 127.0.0.1:5432 within 30 s." >&2
    exit 1
  fi
fi
# The test database (and a role for this user) may be missing on a fresh machine.
pg_db="${TEST_DATABASE_URL##*/}"
pg_db="${pg_db%%\?*}"
if command -v psql >/dev/null 2>&1; then
  if ! psql -h 127.0.0.1 -p 5432 -d postgres -Atqc 'select 1' >/dev/null 2>&1 && is_root && id postgres >/dev/null 2>&1; then
    echo "creating PostgreSQL role $(id -un)"
    runuser -u postgres -- createuser -h 127.0.0.1 -p 5432 -s "$(id -un)" || true
  fi
  if [[ "$(psql -h 127.0.0.1 -p 5432 -d postgres -Atqc "select 1 from pg_database where datname = '${pg_db}'" 2>/dev/null || true)" != "1" ]]; then
    echo "creating database ${pg_db}"
    createdb -h 127.0.0.1 -p 5432 "$pg_db" || true
  fi
fi
echo "TEST_DATABASE_URL=${TEST_DATABASE_URL}"
step_ok

# --- dependencies ------------------------------------------------------------------------------
section deps "Dependencies (node_modules, chromium)"
if [[ ! -d node_modules ]]; then
  echo "node_modules missing: npm ci"
  npm ci
else
  echo "node_modules present"
fi
if [[ ! -x /usr/bin/chromium ]]; then
  if is_root && command -v apt-get >/dev/null 2>&1; then
    echo "installing chromium (apt)"
    apt-get update
    DEBIAN_FRONTEND=noninteractive apt-get install -y chromium
  else
    echo "/usr/bin/chromium is missing; the browser tests need it. Install it (Debian: sudo apt-get install -y chromium) and rerun." >&2
    exit 1
  fi
fi
echo "chromium: $(/usr/bin/chromium --version 2>/dev/null || echo present)"
# npm puts node_modules/.bin first on PATH, so `node` here is the pinned Node 24 from the `node` package.
echo "node: $(node --version) ($(command -v node))"
node scripts/require-node.mjs
step_ok

# --- the checks --------------------------------------------------------------------------------
section typecheck "Typecheck (tsc --noEmit)"
npx --no-install tsc --noEmit
step_ok

# Each test server takes a schema of its own in the test database; drop the ones earlier runs left behind (hundreds of
# them make every fresh schema's migration slow: kysely's migrator looks its tables up across every schema). The
# PostgreSQL pass gives each test file a database of its own, <test>_r<run>_<pid> (server/testing/pg-test-db*.ts), and
# drops it after the file and at the run's end; a run killed half-way leaves some: dropped here, whole.
drop_test_schemas() {
  psql -q -h 127.0.0.1 -p 5432 -d "$pg_db" -Atc "select format('drop schema if exists %I cascade;', nspname) from pg_namespace where nspname like 't\_%'" \
    | psql -q -h 127.0.0.1 -p 5432 -d "$pg_db" >/dev/null 2>&1 || echo "(could not drop old test schemas; going on)"
  local db
  for db in $(psql -h 127.0.0.1 -p 5432 -d "$pg_db" -Atc "select datname from pg_database where datname ~ '^${pg_db}_r[0-9]+_[0-9]+\$'" 2>/dev/null); do
    psql -q -h 127.0.0.1 -p 5432 -d "$pg_db" -c "drop database if exists \"$db\" with (force)" >/dev/null 2>&1 \
      || echo "(could not drop the test file database $db; going on)"
  done
}

section vitest "Unit + integration tests (vitest run): every suite on SQLite, server/'s again with every server on PostgreSQL"
# One run, three vitest projects sharing one pool of workers (vitest.config.mts): "sqlite", "postgres" (TEST_STORE=postgres
# in its workers) and "once" (server/testing/store-independent.ts: suites that pick their stores themselves, such as the
# clusters and crash bursts, run once, on PostgreSQL where they use it).
drop_test_schemas
npx --no-install vitest run
step_ok

section faults "The fault suite, short seeded run (3 processes on PostgreSQL + 1 on SQLite: SIGKILL, SIGTERM, SIGSTOP, liveness loss, a PostgreSQL restart, a hanging webhook receiver)"
# Runs after vitest: nothing else uses PostgreSQL now, so the suite restarts it for real (pg_ctlcluster) and starts
# it again if it is left down. A failing run prints its seed. See scripts/faults-step.sh for its parameters.
scripts/faults-step.sh
step_ok

section build "Production build (next build)"
npx --no-install next build
step_ok

section e2e "Browser tests (playwright test)"
npx --no-install playwright test
step_ok

printf '\nOK: all %d steps passed (%s) in %ss\n' "${#done_steps[@]}" "${done_steps[*]}" "$((SECONDS - started_at))"
